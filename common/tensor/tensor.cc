#include "common/tensor/tensor.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/platform/checked_math.h"

namespace pstrain {
namespace {

constexpr size_t kAlignment = 64;

// Zero-filled and 64-byte aligned; nullptr when the memory cannot be had.
uint8_t* TryAllocateAligned(size_t bytes) {
  if (bytes > static_cast<size_t>(kMaxCheckedBytes)) return nullptr;
  // aligned_alloc needs a size that is a multiple of the alignment.
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded));
  if (p != nullptr) std::memset(p, 0, rounded);
  return p;
}

uint8_t* AllocateAligned(size_t bytes) {
  uint8_t* p = TryAllocateAligned(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

int64_t NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t CountNonFiniteFloats(absl::string_view data) {
  // A float is NaN or Inf exactly when its exponent bits are all ones. Integer tests with a 32-bit
  // count per block vectorise (the bytes may be unaligned, hence memcpy per element).
  const size_t n = data.size() / sizeof(uint32_t);
  const char* p = data.data();
  int64_t bad = 0;
  constexpr size_t kBlock = 4096;
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t k = std::min(kBlock, n - i);
    const char* q = p + i * sizeof(uint32_t);
    uint32_t count = 0;
    for (size_t j = 0; j < k; ++j) {
      uint32_t bits;
      std::memcpy(&bits, q + j * sizeof(uint32_t), sizeof(bits));
      count += (bits & 0x7F800000u) == 0x7F800000u;
    }
    bad += count;
  }
  return bad;
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

absl::StatusOr<Tensor> Tensor::Create(DType dtype, std::vector<int64_t> shape, absl::string_view what) {
  if (dtype == DType::kInvalid || dtype == DType::kString) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": tensors of ", DTypeName(dtype), " are not supported"));
  }
  absl::StatusOr<int64_t> bytes = CheckedNumBytes(shape, DTypeSize(dtype), what);
  if (!bytes.ok()) return bytes.status();
  Tensor t;
  t.buffer_.reset(TryAllocateAligned(static_cast<size_t>(*bytes)));
  if (t.buffer_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": cannot allocate ", FormatBytes(*bytes), " for a tensor of shape ", ShapeString(shape)));
  }
  t.dtype_ = dtype;
  t.num_elements_ = NumElements(shape);
  t.num_bytes_ = static_cast<size_t>(*bytes);
  t.shape_ = std::move(shape);
  return t;
}

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
