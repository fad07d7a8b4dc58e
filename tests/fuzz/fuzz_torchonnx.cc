// torchonnx's lowering and Python emission. The emitted text must stay printable (no control
// characters but newlines); with FUZZ_PYTHON_DIR set, every 64th emitted model.py is written
// there so that benchmarks/fuzz.sh can py_compile them.
#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/fuzz/fuzz_util.h"
#include "torchonnx/convert.h"

namespace {

void keep(const std::string& python) {
  static const char* dir = std::getenv("FUZZ_PYTHON_DIR");
  static long count = 0;
  if (dir == nullptr || count++ % 64 != 0) return;
  std::ofstream(std::string(dir) + "/model_" + std::to_string(count) + ".py") << python;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::guarded([&] {
    auto graph = fuzz::load(data, size);
    if (!graph) return;
    const auto converted = torchonnx::convert(std::move(*graph), torchonnx::ConvertOptions{});
    if (!converted.ok()) return;
    for (const char c : converted->python) {
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n') std::abort();
    }
    keep(converted->python);
  });
}
