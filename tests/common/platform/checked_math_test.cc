// Checked size arithmetic (class: sizes trusted before allocating, integer overflow into wrong
// messages): every product that would wrap is an error naming the field and the true magnitude.
#include "common/platform/checked_math.h"

#include <cstdint>

#include "common/tensor/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

TEST(CheckedMathTest, ProductsThatFitAreExact) {
  EXPECT_EQ(*CheckedNumElements({}, "x"), 1);
  EXPECT_EQ(*CheckedNumElements({3, 4, 5}, "x"), 60);
  EXPECT_EQ(*CheckedNumElements({int64_t{1} << 31, 0, int64_t{1} << 40}, "x"), 0);  // a zero dimension
  EXPECT_EQ(*CheckedNumBytes({1600, 64}, 4, "x"), 409600);
  EXPECT_EQ(*CheckedSizeSum(kMaxCheckedBytes - 1, 1, "x"), kMaxCheckedBytes);
}

TEST(CheckedMathTest, OverflowsAreErrorsWithTheRealMagnitude) {
  struct Case {
    std::vector<int64_t> dims;
    int64_t element;
    const char* message;
  };
  const Case cases[] = {
      {{int64_t{1} << 32, int64_t{1} << 32}, 4, "about 1.84e+19 elements"},  // wraps to 0 unchecked
      {{int64_t{1} << 40, int64_t{1} << 40}, 4, "about 1.21e+24 elements"},
      {{INT64_MAX, 2}, 1, "elements"},
      {{int64_t{1} << 61}, 4, "needs about 9.22e+18 bytes"},  // fits as elements, not as bytes
      {{3, -1}, 4, "negative dimension"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<int64_t> n = CheckedNumBytes(c.dims, c.element, "model.layers[3] (dense)");
    ASSERT_FALSE(n.ok()) << ShapeString(c.dims);
    EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(n.status().message()), HasSubstr("model.layers[3] (dense)"));
    EXPECT_THAT(std::string(n.status().message()), HasSubstr(c.message)) << ShapeString(c.dims);
  }
  EXPECT_FALSE(CheckedSizeProduct(int64_t{1} << 40, int64_t{1} << 30, "x").ok());
  EXPECT_FALSE(CheckedSizeProduct(-1, 2, "x").ok());
  EXPECT_FALSE(CheckedSizeSum(kMaxCheckedBytes, 1, "x").ok());
  int64_t out = 7;
  EXPECT_FALSE(CheckedMul(INT64_MIN, -1, &out));
  EXPECT_FALSE(CheckedAdd(INT64_MAX, 1, &out));
  EXPECT_EQ(out, 7);
}

TEST(CheckedMathTest, TensorCreateRefusesWhatItCannotHold) {
  absl::StatusOr<Tensor> huge = Tensor::Create(DType::kFloat32, {int64_t{1} << 40, int64_t{1} << 40}, "variable v");
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(std::string(huge.status().message()), HasSubstr("variable v"));
  // Fits the arithmetic, not any machine: an allocation failure, reported instead of a segfault.
  absl::StatusOr<Tensor> unallocatable = Tensor::Create(DType::kFloat32, {int64_t{1} << 58}, "variable w");
  ASSERT_FALSE(unallocatable.ok());
  EXPECT_EQ(unallocatable.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(Tensor::Create(DType::kString, {2}, "s").ok());
  absl::StatusOr<Tensor> fine = Tensor::Create(DType::kFloat32, {2, 3}, "t");
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->num_bytes(), 24u);
  EXPECT_EQ(fine->flat()[5], 0.0f);
}

TEST(CheckedMathTest, FormatBytesSaysUnitsAndExactBytes) {
  EXPECT_EQ(FormatBytes(512), "512 bytes");
  EXPECT_EQ(FormatBytes(int64_t{3} << 30), "3.0 GiB (3221225472 bytes)");
}

}  // namespace
}  // namespace pstrain
