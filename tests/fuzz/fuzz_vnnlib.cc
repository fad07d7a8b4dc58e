// propdag's VNN-LIB reader (read_vnnlib: plain or gzip text) on arbitrary bytes.
#include <cstddef>
#include <cstdint>

#include "propdag/vnnlib.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::guarded([&] { (void)propdag::read_vnnlib(fuzz::as_file(data, size)); });
}
