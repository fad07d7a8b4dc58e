// The weights writer: a module's state_dict in the standard torch.save zip layout, written
// without LibTorch so it loads with torch.load(weights_only=True) on torch 1.13 and 2.x.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/tensor.h"
#include "torchonnx/module.h"

namespace torchonnx {

/// state_dict entries in registration order: "<layer>.<param>" for layers, then buffers.
std::vector<std::pair<std::string, const common::Tensor*>> state_dict(const Module& module);

/// A torch.save archive before it is written: the pickled OrderedDict and the tensors it refers
/// to (by pointer: they must outlive it).
struct TorchArchive {
  std::string pickle;
  std::vector<const common::Tensor*> tensors;
};
/// Pickles the entries; an error for a dtype torch cannot hold or past 4 GiB (no zip64).
common::Result<TorchArchive> torch_archive(
    const std::vector<std::pair<std::string, const common::Tensor*>>& entries);
/// Writes the archive into `out` as torch_save_bytes lays it out (no copy of the tensors' bytes);
/// false when the stream failed.
bool write_torch_archive(const TorchArchive& archive, std::ostream& out);

/// The bytes of a torch.save archive holding an OrderedDict of the given tensors: records
/// archive/data.pkl (pickle protocol 2), archive/data/<i>, archive/version, archive/byteorder,
/// each stored uncompressed with its data aligned to 64 bytes.
common::Result<std::string> torch_save_bytes(
    const std::vector<std::pair<std::string, const common::Tensor*>>& entries);

/// torch_save_bytes(state_dict(module)) written atomically to `path`.
common::Status write_weights(const Module& module, std::string_view path);

}  // namespace torchonnx
