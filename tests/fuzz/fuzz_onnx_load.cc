// ONNX bytes (plain or gzip) -> ModelProto -> IR -> ModelProto again.
#include <onnx/onnx_pb.h>

#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::guarded([&] {
    const auto graph = fuzz::load(data, size);
    if (graph) (void)common::to_proto(*graph).ByteSizeLong();
  });
}
