// The .npy files of dynamic tables' keys: what `pstrain export` writes is numpy's format 1.0 byte
// for byte, and the reader takes it back, numpy's int32 and version 2.0 files too, refusing the rest
// with the problem named.
#include "common/graph/npy_int64.h"

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

// numpy's .npy format 1.0: magic, version, little-endian header length, a header padded to 64
// bytes in all, then the values.
TEST(NpyInt64Test, WritesNumpysFormat) {
  const std::vector<int64_t> values = {-2, 0, int64_t{1} << 40};
  const std::string npy = NpyInt64Vector(values);
  ASSERT_GE(npy.size(), 10u);
  EXPECT_EQ(npy.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header = static_cast<unsigned char>(npy[8]) | (static_cast<unsigned char>(npy[9]) << 8);
  EXPECT_EQ((10 + header) % 64, 0u);
  ASSERT_EQ(npy.size(), 10 + header + 8 * values.size());
  const std::string text = npy.substr(10, header);
  EXPECT_EQ(text.rfind("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t v = 0;
    std::memcpy(&v, npy.data() + 10 + header + 8 * i, 8);  // this host is little-endian, as x86 is
    EXPECT_EQ(v, values[i]);
  }
  EXPECT_EQ(static_cast<unsigned char>(npy[10 + header]), 0xfe);  // -2's low byte first
}

// A file as numpy writes one: `header` padded so that the data starts at a multiple of 64.
std::string Npy(int version, std::string header, const std::string& data) {
  const size_t prefix = version == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(version) + '\0';
  for (size_t b = 0; b < (version == 1 ? 2u : 4u); ++b) out.push_back(static_cast<char>((header.size() >> (8 * b)) & 0xff));
  return out + header + data;
}

TEST(NpyInt64Test, ReadsWhatItWritesAndNumpysOtherIntegerVectors) {
  const std::vector<int64_t> values = {-2, 0, 7, int64_t{1} << 40, INT64_MIN};
  absl::StatusOr<std::vector<int64_t>> read = ParseNpyIntVector(NpyInt64Vector(values), "keys.npy");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, values);
  EXPECT_TRUE(ParseNpyIntVector(NpyInt64Vector({}), "empty.npy")->empty());
  // int32, widened with its sign; format 2.0 (a 4-byte header length); the keys in another order.
  const int32_t small[] = {-5, 3};
  read = ParseNpyIntVector(Npy(2, "{'shape': (2,), 'fortran_order': False, 'descr': '<i4', }",
                               std::string(reinterpret_cast<const char*>(small), sizeof(small))),
                           "i4.npy");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, (std::vector<int64_t>{-5, 3}));
}

TEST(NpyInt64Test, RefusesOtherFilesNamingTheProblem) {
  const std::string eight(8, '\0');
  struct Case {
    std::string bytes, problem;
  };
  const std::vector<Case> cases = {
      {"keys", "not a .npy file"},
      {Npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", eight), "dtype '<f8'"},
      {Npy(1, "{'descr': '>i8', 'fortran_order': False, 'shape': (1,), }", eight), "dtype '>i8'"},
      {Npy(1, "{'descr': '<i8', 'fortran_order': True, 'shape': (1,), }", eight), "Fortran order"},
      {Npy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 1), }", eight), "is not a vector"},
      {Npy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", eight), "8 bytes of data for 2 values"},
      {Npy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", eight + "x"), "9 bytes of data"},
      {NpyInt64Vector({1, 2}).substr(0, 20), "ends inside its header"},
      {std::string("\x93NUMPY\x07\x00\x10\x00", 10) + std::string(16, ' '), "version 7"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<int64_t>> read = ParseNpyIntVector(c.bytes, "k.npy");
    ASSERT_FALSE(read.ok()) << c.problem;
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(read.status().message()), HasSubstr("k.npy: "));
    EXPECT_THAT(std::string(read.status().message()), HasSubstr(c.problem));
  }
}

}  // namespace
}  // namespace pstrain
