// A dense, host-memory tensor: element type, shape and a 64-byte aligned buffer it owns.
// Thread-safety: none; a Tensor is a value, guard shared instances externally.
#ifndef PSTRAIN_COMMON_TENSOR_TENSOR_H_
#define PSTRAIN_COMMON_TENSOR_TENSOR_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/tensor/dtype.h"

namespace pstrain {

// Product of the dimensions (1 for rank 0). REQUIRES: every dimension >= 0 and a product that
// fits: shapes from users, files or the network are checked with CheckedNumElements first.
int64_t NumElements(absl::Span<const int64_t> shape);

// Number of NaN/Inf values among the float32 values in `data` (bytes, possibly unaligned).
int64_t CountNonFiniteFloats(absl::string_view data);

// "[3,4]" style rendering used in messages.
std::string ShapeString(absl::Span<const int64_t> shape);

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor. REQUIRES: dtype is a fixed-size type (not kString); a shape whose size was
  // checked (CheckedNumBytes, a memory budget). When the memory cannot be had it throws
  // std::bad_alloc, as operator new does; code sizing a tensor from outside input uses Create.
  Tensor(DType dtype, std::vector<int64_t> shape);
  // The same, for shapes from users, files or the network: InvalidArgument naming `what` for a
  // negative dimension or a size beyond kMaxCheckedBytes, ResourceExhausted when the memory
  // cannot be allocated.
  static absl::StatusOr<Tensor> Create(DType dtype, std::vector<int64_t> shape, absl::string_view what);

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[i]; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t num_elements() const { return num_elements_; }
  size_t num_bytes() const { return num_bytes_; }

  uint8_t* raw() { return buffer_.get(); }
  const uint8_t* raw() const { return buffer_.get(); }
  template <typename T>
  T* data() { return reinterpret_cast<T*>(buffer_.get()); }
  template <typename T>
  const T* data() const { return reinterpret_cast<const T*>(buffer_.get()); }
  absl::Span<float> flat() { return {data<float>(), static_cast<size_t>(num_elements_)}; }
  absl::Span<const float> flat() const { return {data<float>(), static_cast<size_t>(num_elements_)}; }

  // Same bytes, another shape with the same number of elements. REQUIRES: counts match.
  void Reshape(std::vector<int64_t> shape);

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };

  DType dtype_ = DType::kInvalid;
  std::vector<int64_t> shape_;
  int64_t num_elements_ = 0;
  size_t num_bytes_ = 0;
  std::unique_ptr<uint8_t[], FreeDeleter> buffer_;
};

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_TENSOR_TENSOR_H_
