// Embedding (integer ids -> rows of a table) and the global poolings (average or max over the
// steps, or the height and width, per channel). In float, an Embedding without bags runs worker/cpu's
// row gather and scatter-add (CPU-level dispatch).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "worker/cpu/cpu_kernels.h"
#include "worker/graph/layer_factories.h"

namespace pstrain {
namespace {

template <typename T>
class EmbeddingLayer : public GraphLayer<T> {
 public:
  explicit EmbeddingLayer(const GraphLayerSpec& spec) : name_(spec.name), dim_(spec.config.output_dim) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w,
                       const ForwardOptions& options, Array<T>* out) override {
    const int64_t rows = w[0]->shape[0];  // input_dim, or the rows a batch touches (ids: positions)
    std::vector<int64_t> shape = in[0]->shape;
    shape.push_back(dim_);
    out->Resize(shape);
    const T* table = w[0]->data.data();
    bags_ = nullptr;
    if (options.bags != nullptr) {
      if (auto it = options.bags->find(name_); it != options.bags->end()) bags_ = &it->second;
    }
    const int64_t columns = bags_ == nullptr ? 1 : static_cast<int64_t>(bags_->size());
    const int64_t batch = in[0]->shape.empty() ? 0 : in[0]->shape[0];
    if (bags_ != nullptr && static_cast<int64_t>(in[0]->data.size()) != batch * columns) {
      return absl::InvalidArgumentError(absl::StrCat("layer '", name_, "' (Embedding) is given bags for ", columns,
                                                     " input columns but its input holds ",
                                                     in[0]->data.size() / std::max<int64_t>(batch, 1),
                                                     " ids per example"));
    }
    // float without bags: worker/cpu's row gather and scatter-add, by int32 position (positions_);
    // else row by row, by id (ids_, -1 where a bag is combined).
    gathers_ = std::is_same_v<T, float> && bags_ == nullptr && rows <= std::numeric_limits<int32_t>::max();
    const size_t n = in[0]->data.size();
    if (gathers_) {
      positions_.resize(n);
    } else {
      ids_.assign(n, -1);
    }
    if (bags_ != nullptr) std::fill(out->data.begin(), out->data.end(), T(0));  // bags add into it
    for (size_t i = 0; i < n; ++i) {
      const int64_t b = static_cast<int64_t>(i) / columns, col = static_cast<int64_t>(i) % columns;
      T* o = out->data.data() + i * dim_;
      if (bags_ != nullptr && (*bags_)[col].offsets != nullptr) {
        const EmbeddingBags& bag = (*bags_)[col];
        for (int64_t k = bag.offsets[b]; k < bag.offsets[b + 1]; ++k) {
          const int64_t p = bag.positions[k];
          if (p < 0 || p >= rows) {
            return absl::InvalidArgumentError(absl::StrCat("layer '", name_, "' (Embedding): bag id position ", p,
                                                           " is outside its table's ", rows, " rows"));
          }
          const T c = static_cast<T>(bag.coef[k]);
          for (int64_t d = 0; d < dim_; ++d) o[d] += c * table[p * dim_ + d];
        }
        continue;
      }
      const T v = in[0]->data[i];
      if (!(v >= T(0) && v < T(rows)) || v != std::floor(v)) {
        return absl::InvalidArgumentError(absl::StrCat("layer '", name_, "' (Embedding): id ", static_cast<double>(v),
                                                       " is not an integer in [0, ", rows, "), its table's rows"));
      }
      if (gathers_) {
        positions_[i] = static_cast<int32_t>(v);
        continue;
      }
      ids_[i] = static_cast<int64_t>(v);
      std::copy(table + ids_[i] * dim_, table + (ids_[i] + 1) * dim_, o);
    }
    if constexpr (std::is_same_v<T, float>) {
      if (gathers_) {
        ActiveCpuKernels().gather_rows(table, positions_.data(), 1, static_cast<int64_t>(n), dim_, out->data.data(),
                                       dim_);
      }
    }
    columns_ = columns;
    return absl::OkStatus();
  }
  // The ids get no gradient; the table's gradient covers the rows given (the sparse ps path gives
  // the batch's rows, so it comes out summed per unique id). A bag's ids each get their
  // coefficient times their example's gradient.
  void Backward(const typename GraphLayer<T>::Arrays&, const typename GraphLayer<T>::Arrays&, const Array<T>&,
                const Array<T>& dout, const std::vector<Array<T>*>&, const std::vector<Array<T>*>& dw) override {
    if (dw[0] == nullptr) return;
    T* g = dw[0]->data.data();
    if constexpr (std::is_same_v<T, float>) {
      if (gathers_) {
        const int64_t n = static_cast<int64_t>(positions_.size());
        ActiveCpuKernels().scatter_add_rows(dout.data.data(), dim_, positions_.data(), 1, n, dim_, g);
        return;
      }
    }
    for (size_t i = 0; i < ids_.size(); ++i) {
      const T* d = dout.data.data() + i * dim_;
      if (ids_[i] >= 0) {
        for (int64_t c = 0; c < dim_; ++c) g[ids_[i] * dim_ + c] += d[c];
        continue;
      }
      const int64_t b = static_cast<int64_t>(i) / columns_;
      const EmbeddingBags& bag = (*bags_)[static_cast<int64_t>(i) % columns_];
      for (int64_t k = bag.offsets[b]; k < bag.offsets[b + 1]; ++k) {
        T* row = g + static_cast<int64_t>(bag.positions[k]) * dim_;
        const T c = static_cast<T>(bag.coef[k]);
        for (int64_t e = 0; e < dim_; ++e) row[e] += c * d[e];
      }
    }
  }

 private:
  std::string name_;
  int64_t dim_;
  bool gathers_ = false;             // the last Forward ran the row kernels (float, no bags)
  std::vector<int32_t> positions_;   // then: its ids as the kernels take them
  std::vector<int64_t> ids_;         // else: its ids; -1 where a bag was combined
  // The last Forward's bags by input column (ForwardOptions keeps them alive), or null.
  const std::vector<EmbeddingBags>* bags_ = nullptr;
  int64_t columns_ = 1;
};

// [batch, positions..., channels] -> [batch, channels] (keepdims: ones for the positions).
template <typename T>
class GlobalPoolLayer : public GraphLayer<T> {
 public:
  GlobalPoolLayer(const GraphLayerSpec& spec, bool max) : out_shape_(spec.output_shape), max_(max) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions&, Array<T>* out) override {
    const int64_t batch = in[0]->batch(), c = in[0]->last(), positions = in[0]->size() / (batch * c);
    std::vector<int64_t> shape = {batch};
    shape.insert(shape.end(), out_shape_.begin(), out_shape_.end());
    out->Reset(shape);
    argmax_.assign(batch * c, 0);
    for (int64_t b = 0; b < batch; ++b) {
      const T* x = in[0]->data.data() + b * positions * c;
      for (int64_t k = 0; k < c; ++k) {
        T acc = x[k];
        for (int64_t p = 1; p < positions; ++p) {
          const T v = x[p * c + k];
          if (!max_) {
            acc += v;
          } else if (v > acc) {
            acc = v;
            argmax_[b * c + k] = p;
          }
        }
        out->data[b * c + k] = max_ ? acc : acc / T(positions);
      }
    }
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&, const Array<T>&,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    if (din[0] == nullptr) return;
    const int64_t batch = in[0]->batch(), c = in[0]->last(), positions = in[0]->size() / (batch * c);
    for (int64_t b = 0; b < batch; ++b) {
      T* dx = din[0]->data.data() + b * positions * c;
      for (int64_t k = 0; k < c; ++k) {
        const T g = dout.data[b * c + k];
        if (max_) {
          dx[argmax_[b * c + k] * c + k] += g;
        } else {
          for (int64_t p = 0; p < positions; ++p) dx[p * c + k] += g / T(positions);
        }
      }
    }
  }

 private:
  std::vector<int64_t> out_shape_;
  bool max_;
  std::vector<int64_t> argmax_;
};

}  // namespace

template <typename T>
std::unique_ptr<GraphLayer<T>> MakePoolLayer(const GraphLayerSpec& spec) {
  switch (spec.kind) {
    case LayerKind::kEmbedding: return std::make_unique<EmbeddingLayer<T>>(spec);
    case LayerKind::kGlobalAveragePooling1D:
    case LayerKind::kGlobalAveragePooling2D: return std::make_unique<GlobalPoolLayer<T>>(spec, false);
    case LayerKind::kGlobalMaxPooling1D:
    case LayerKind::kGlobalMaxPooling2D: return std::make_unique<GlobalPoolLayer<T>>(spec, true);
    default: return nullptr;
  }
}

template std::unique_ptr<GraphLayer<float>> MakePoolLayer<float>(const GraphLayerSpec&);
template std::unique_ptr<GraphLayer<double>> MakePoolLayer<double>(const GraphLayerSpec&);

}  // namespace pstrain
