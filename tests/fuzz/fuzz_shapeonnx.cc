// shapeonnx's inference on a loaded graph.
#include "shapeonnx/infer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::guarded([&] {
    auto graph = fuzz::load(data, size);
    if (graph) (void)shapeonnx::infer(*graph);
  });
}
