// CRC-32 (the zip/gzip polynomial): torchonnx's weight records, gzip members read by load.
#pragma once

#include <cstdint>
#include <string_view>

namespace common {

/// zlib's crc32(crc, data, size): the CRC of `data` continuing `crc` (0 to start). On x86-64
/// CPUs with PCLMULQDQ (checked at run time) the bulk is folded 64 bytes at a time, several times
/// faster than zlib 1.2.13's table-driven loop on large buffers; the tail, and other CPUs, go
/// through zlib.
uint32_t crc32(std::string_view data, uint32_t crc = 0);

}  // namespace common
