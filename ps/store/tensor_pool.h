// A pool of same-shape float32 buffers handed out as shared_ptrs that come back to the pool when
// released: pull snapshots and streamed gradients reuse memory instead of faulting in fresh pages
// for every large tensor.
// Thread-safety: thread-safe; buffers may outlive the pool's owner (they keep the pool alive).
#ifndef PSTRAIN_PS_STORE_TENSOR_POOL_H_
#define PSTRAIN_PS_STORE_TENSOR_POOL_H_

#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/tensor/tensor.h"

namespace pstrain {

class TensorPool : public std::enable_shared_from_this<TensorPool> {
 public:
  // Keeps at most `max_free` idle buffers of `shape`.
  static std::shared_ptr<TensorPool> Create(std::vector<int64_t> shape, int max_free);

  // A buffer of the pool's shape with unspecified contents.
  std::shared_ptr<Tensor> Get();

 private:
  TensorPool(std::vector<int64_t> shape, int max_free) : shape_(std::move(shape)), max_free_(max_free) {}
  void Return(Tensor* t);

  const std::vector<int64_t> shape_;
  const int max_free_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Tensor>> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_TENSOR_POOL_H_
