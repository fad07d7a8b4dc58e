// slimonnx's passes on a graph with inferred shapes (as the slimonnx CLI runs them).
#include "shapeonnx/infer.h"
#include "slimonnx/slim.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::guarded([&] {
    auto graph = fuzz::load(data, size);
    if (graph && shapeonnx::infer(*graph).ok()) (void)slimonnx::run(*graph);
  });
}
