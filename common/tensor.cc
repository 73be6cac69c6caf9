#include "common/tensor.h"

#include <cstring>

#include "absl/strings/str_join.h"

namespace pstrain {
namespace {

constexpr size_t kAlignment = 64;

uint8_t* AllocateAligned(size_t bytes) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded));
  std::memset(p, 0, rounded);
  return p;
}

}  // namespace

int64_t NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  return "[" + absl::StrJoin(shape, ",") + "]";
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype),
      shape_(std::move(shape)),
      num_elements_(NumElements(shape_)),
      num_bytes_(static_cast<size_t>(num_elements_ * DTypeSize(dtype))),
      buffer_(AllocateAligned(num_bytes_)) {}

Tensor::Tensor(const Tensor& other)
    : dtype_(other.dtype_),
      shape_(other.shape_),
      num_elements_(other.num_elements_),
      num_bytes_(other.num_bytes_),
      buffer_(AllocateAligned(other.num_bytes_)) {
  if (num_bytes_ > 0) std::memcpy(buffer_.get(), other.buffer_.get(), num_bytes_);
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

void Tensor::Reshape(std::vector<int64_t> shape) { shape_ = std::move(shape); }

}  // namespace pstrain
