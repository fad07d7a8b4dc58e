#include "common/crc32.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>

namespace common {
namespace {

uint32_t zlib_crc(const std::string& s) {
  return static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(s.data()), s.size()));
}

TEST(Crc32, KnownValue) {
  // The CRC-32 check value of the nine ASCII digits (zip, gzip, PNG).
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(crc32(""), 0u);
}

TEST(Crc32, MatchesZlibAtEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::string data(4096 + 64, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t offset : {0, 1, 5, 15}) {
    for (size_t len = 0; len <= 600; ++len) {
      const std::string s = data.substr(offset, len);
      ASSERT_EQ(crc32(s), zlib_crc(s)) << "length " << len << " offset " << offset;
    }
  }
  const std::string all = data.substr(3);
  EXPECT_EQ(crc32(all), zlib_crc(all));
  EXPECT_EQ(crc32(std::string(1 << 20, '\0')), zlib_crc(std::string(1 << 20, '\0')));
}

TEST(Crc32, ContinuesARunningCrc) {
  std::mt19937 rng(3);
  std::string data(1000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t cut : {0, 1, 63, 64, 100, 999, 1000}) {
    const std::string_view all(data);
    EXPECT_EQ(crc32(all.substr(cut), crc32(all.substr(0, cut))), zlib_crc(data)) << cut;
  }
}

}  // namespace
}  // namespace common
