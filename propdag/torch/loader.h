// Opens the torch engine at run time, so that a program that never asks for it does not load
// LibTorch: load() dlopen()s libpropdag_torch.so (next to the running program, then in its
// ../lib, then on the library path) the first time, and keeps it open.
#pragma once

#include <memory>

#include "common/error.h"
#include "propdag/torch/torch_engine.h"

namespace propdag::torch_engine {

/// create() from the shared library; fails in one line when it cannot be opened.
common::Result<std::unique_ptr<Engine>> load(const Model& model, const Device& device);

}  // namespace propdag::torch_engine
