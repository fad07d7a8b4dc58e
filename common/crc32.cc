#include "common/crc32.h"

#include <zlib.h>

#include <cstddef>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define COMMON_CRC32_CLMUL 1
#define COMMON_CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))
#endif

namespace common {

namespace {

#ifdef COMMON_CRC32_CLMUL
COMMON_CLMUL_TARGET __m128i load(const unsigned char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// One 128-bit lane folded over the distance `k` encodes, plus the data `next`.
COMMON_CLMUL_TARGET __m128i step(__m128i x, __m128i k, __m128i next) {
  const __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  const __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(hi, lo), next);
}

// Folding with carry-less products, after Intel's "Fast CRC Computation for Generic Polynomials
// Using PCLMULQDQ Instruction" (2009), bit-reflected constants for the polynomial 0x04C11DB7
// (the form Chromium's zlib and the Linux kernel use). `len` is a multiple of 16, at least 64;
// `crc` is the running CRC already inverted, and so is the result.
COMMON_CLMUL_TARGET uint32_t fold(const unsigned char* buf, size_t len, uint32_t crc) {
  alignas(16) static const uint64_t k1k2[] = {0x0154442bd4, 0x01c6e41596};
  alignas(16) static const uint64_t k3k4[] = {0x01751997d0, 0x00ccaa009e};
  alignas(16) static const uint64_t k5k0[] = {0x0163cd6124, 0x0000000000};
  alignas(16) static const uint64_t poly[] = {0x01db710641, 0x01f7011641};
  __m128i x1 = _mm_xor_si128(load(buf), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i x2 = load(buf + 16), x3 = load(buf + 32), x4 = load(buf + 48);
  buf += 64;
  len -= 64;
  __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(k1k2));
  for (; len >= 64; buf += 64, len -= 64) {  // four lanes, 64 bytes apart
    x1 = step(x1, k, load(buf));
    x2 = step(x2, k, load(buf + 16));
    x3 = step(x3, k, load(buf + 32));
    x4 = step(x4, k, load(buf + 48));
  }
  k = _mm_load_si128(reinterpret_cast<const __m128i*>(k3k4));
  x1 = step(step(step(x1, k, x2), k, x3), k, x4);  // the four lanes into one
  for (; len >= 16; buf += 16, len -= 16) x1 = step(x1, k, load(buf));
  // 128 -> 64 bits.
  const __m128i mask = _mm_setr_epi32(~0, 0, ~0, 0);
  __m128i t = _mm_clmulepi64_si128(x1, k, 0x10);
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), t);
  k = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(k5k0));
  t = _mm_srli_si128(x1, 4);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask), k, 0x00), t);
  // Barrett reduction to 32 bits.
  k = _mm_load_si128(reinterpret_cast<const __m128i*>(poly));
  t = _mm_clmulepi64_si128(_mm_and_si128(x1, mask), k, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, mask), k, 0x00);
  x1 = _mm_xor_si128(x1, t);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

// Whether this CPU has the instructions (checked once; the build needs no -march flag).
bool have_clmul() {
  static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return yes;
}
#endif

}  // namespace

uint32_t crc32(std::string_view data, uint32_t crc) {
  const auto* buf = reinterpret_cast<const unsigned char*>(data.data());
  size_t len = data.size();
#ifdef COMMON_CRC32_CLMUL
  if (len >= 64 && have_clmul()) {
    const size_t bulk = len & ~size_t{15};
    crc = ~fold(buf, bulk, ~crc);
    buf += bulk;
    len -= bulk;
  }
#endif
  return static_cast<uint32_t>(crc32_z(crc, buf, len));
}

}  // namespace common
