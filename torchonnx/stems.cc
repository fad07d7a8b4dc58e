#include "torchonnx/stems.h"

#include "common/names.h"

namespace torchonnx {

namespace {

std::string_view strip_suffix(std::string_view s, std::string_view suffix) {
  if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) {
    s.remove_suffix(suffix.size());
  }
  return s;
}

std::string_view file_stem(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return strip_suffix(strip_suffix(name, ".gz"), ".onnx");
}

}  // namespace

std::string StemAllocator::make(std::string_view path, std::string_view fallback) {
  common::NameScope scope;  // only for sanitizing; uniqueness is tracked by used_
  const std::string base = scope.make(path == "-" ? fallback : file_stem(path));
  std::string stem = base;
  for (int i = 2; used_.count(stem); ++i) stem = base + "_" + std::to_string(i);
  used_.insert(stem);
  return stem;
}

bool is_valid_class_name(std::string_view name) {
  if (name.empty()) return false;
  common::NameScope scope;
  return scope.make(name) == name;
}

}  // namespace torchonnx
