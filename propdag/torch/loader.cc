#include "propdag/torch/loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace propdag::torch_engine {
namespace {

constexpr const char* kLibrary = "libpropdag_torch.so";

std::string program_dir() {
  std::vector<char> buf(4096);
  ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  std::string path(buf.data(), static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1);
}

common::Result<PropdagTorchCreate> entry() {
  static void* handle = nullptr;
  static std::string failure;
  if (handle == nullptr && failure.empty()) {
    const std::string dir = program_dir();
    for (const std::string& path :
         {dir + kLibrary, dir + "../lib/" + kLibrary, std::string(kLibrary)}) {
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) break;
      if (failure.empty() || path.find('/') == std::string::npos) failure = dlerror();
    }
  }
  if (handle == nullptr)
    return common::Error{"", "", "", "the torch engine is not available: " + failure};
  using Entry = PropdagTorchCreate (*)();
  auto fn = reinterpret_cast<Entry>(dlsym(handle, "propdag_torch_entry"));
  if (fn == nullptr) return common::Error{"", "", "", "libpropdag_torch.so has no entry point"};
  return fn();
}

}  // namespace

common::Result<std::unique_ptr<Engine>> load(const Model& model, const Device& device) {
  ASSIGN_OR_RETURN(PropdagTorchCreate create, entry());
  return create(model, device);
}

}  // namespace propdag::torch_engine
