// Output file stems for the inputs of one torchonnx run: importable, and never colliding.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace torchonnx {

/// Hands out stems. A path's stem is its file name without .gz and .onnx, sanitized into a
/// Python module name (keywords, builtins, leading digits handled like NameScope). A stem handed
/// out before gets "_2", "_3", ... in call order, so the mapping is deterministic.
class StemAllocator {
 public:
  /// `fallback` is used for "-" (stdin).
  std::string make(std::string_view path, std::string_view fallback);

 private:
  std::set<std::string, std::less<>> used_;
};

/// True if `name` is a valid, non-reserved Python identifier (for --class-name).
bool is_valid_class_name(std::string_view name);

}  // namespace torchonnx
