// The Python emitter: module IR -> the text of model.py.
#pragma once

#include <string>

#include "common/error.h"
#include "torchonnx/module.h"

namespace torchonnx {

/// Renders the module as a Python source file: header comment (tool, version, source file,
/// inputs and outputs), only the imports the code uses, the class with `__init__` and `forward`.
/// Deterministic: the same module gives byte-identical text.
common::Result<std::string> emit_python(const Module& module);

}  // namespace torchonnx
