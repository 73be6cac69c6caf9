#include "ps/store/tensor_pool.h"

namespace pstrain {

std::shared_ptr<TensorPool> TensorPool::Create(std::vector<int64_t> shape, int max_free) {
  return std::shared_ptr<TensorPool>(new TensorPool(std::move(shape), max_free));
}

std::shared_ptr<Tensor> TensorPool::Get() {
  std::unique_ptr<Tensor> t;
  {
    absl::MutexLock l(&mu_);
    if (!free_.empty()) {
      t = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (t == nullptr) t = std::make_unique<Tensor>(DType::kFloat32, shape_);
  std::shared_ptr<TensorPool> self = shared_from_this();
  return std::shared_ptr<Tensor>(t.release(), [self](Tensor* p) { self->Return(p); });
}

void TensorPool::Return(Tensor* t) {
  std::unique_ptr<Tensor> owned(t);
  absl::MutexLock l(&mu_);
  if (static_cast<int>(free_.size()) < max_free_) free_.push_back(std::move(owned));
}

}  // namespace pstrain
