// LayerNormalization (over the last axis of each example) and BatchNormalization (per channel, the
// last axis, over the batch and every other axis).
#include <cmath>

#include "worker/graph/layer_factories.h"

namespace pstrain {
namespace {

// Weights in ModelGraph order: gamma (when scale), beta (when center), then BatchNormalization's
// moving_mean and moving_variance.
struct NormWeights {
  int gamma = -1, beta = -1, moving_mean = -1, moving_variance = -1;
  explicit NormWeights(const GraphLayerSpec& spec) {
    int next = 0;
    if (spec.config.scale) gamma = next++;
    if (spec.config.center) beta = next++;
    if (spec.kind == LayerKind::kBatchNormalization) {
      moving_mean = next++;
      moving_variance = next++;
    }
  }
};

template <typename T>
const T* WeightOrNull(const typename GraphLayer<T>::Arrays& w, int i) {
  return i < 0 ? nullptr : w[i]->data.data();
}

// y = gamma * xhat + beta with xhat = (x - mean) * inv_std, per row over its `d` values.
template <typename T>
class LayerNormLayer : public GraphLayer<T> {
 public:
  explicit LayerNormLayer(const GraphLayerSpec& spec) : eps_(spec.config.epsilon), w_(spec) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w,
                       const ForwardOptions&, Array<T>* out) override {
    const int64_t rows = in[0]->rows(), d = in[0]->last();
    const T* gamma = WeightOrNull<T>(w, w_.gamma);
    const T* beta = WeightOrNull<T>(w, w_.beta);
    xhat_.Reset(in[0]->shape);
    out->Reset(in[0]->shape);
    inv_std_.assign(rows, T(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* x = in[0]->data.data() + r * d;
      T mean = 0, var = 0;
      for (int64_t c = 0; c < d; ++c) mean += x[c];
      mean /= T(d);
      for (int64_t c = 0; c < d; ++c) var += (x[c] - mean) * (x[c] - mean);
      var /= T(d);
      inv_std_[r] = T(1) / std::sqrt(var + T(eps_));
      for (int64_t c = 0; c < d; ++c) {
        const T xh = (x[c] - mean) * inv_std_[r];
        xhat_.data[r * d + c] = xh;
        out->data[r * d + c] = (gamma ? gamma[c] : T(1)) * xh + (beta ? beta[c] : T(0));
      }
    }
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w, const Array<T>&,
                const Array<T>& dout, const std::vector<Array<T>*>& din,
                const std::vector<Array<T>*>& dw) override {
    const int64_t rows = in[0]->rows(), d = in[0]->last();
    const T* gamma = WeightOrNull<T>(w, w_.gamma);
    std::vector<T> dxhat(d);
    for (int64_t r = 0; r < rows; ++r) {
      const T* dy = dout.data.data() + r * d;
      const T* xh = xhat_.data.data() + r * d;
      T mean_dxhat = 0, mean_dxhat_xhat = 0;
      for (int64_t c = 0; c < d; ++c) {
        if (w_.gamma >= 0 && dw[w_.gamma] != nullptr) dw[w_.gamma]->data[c] += dy[c] * xh[c];
        if (w_.beta >= 0 && dw[w_.beta] != nullptr) dw[w_.beta]->data[c] += dy[c];
        dxhat[c] = dy[c] * (gamma ? gamma[c] : T(1));
        mean_dxhat += dxhat[c];
        mean_dxhat_xhat += dxhat[c] * xh[c];
      }
      if (din[0] == nullptr) continue;
      mean_dxhat /= T(d);
      mean_dxhat_xhat /= T(d);
      for (int64_t c = 0; c < d; ++c) {
        din[0]->data[r * d + c] += inv_std_[r] * (dxhat[c] - mean_dxhat - xh[c] * mean_dxhat_xhat);
      }
    }
  }

 private:
  double eps_;
  NormWeights w_;
  Array<T> xhat_;
  std::vector<T> inv_std_;
};

// Training: the batch's mean and (biased) variance per channel, Keras 3's rule; inference: the
// moving statistics. The moving statistics change only through MovingUpdates.
template <typename T>
class BatchNormLayer : public GraphLayer<T> {
 public:
  explicit BatchNormLayer(const GraphLayerSpec& spec) : eps_(spec.config.epsilon), momentum_(spec.config.momentum), w_(spec) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w,
                       const ForwardOptions& options, Array<T>* out) override {
    const int64_t rows = in[0]->rows(), d = in[0]->last();
    const T* x = in[0]->data.data();
    training_ = options.training;
    mean_.assign(d, T(0));
    var_.assign(d, T(0));
    if (training_) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < d; ++c) mean_[c] += x[r * d + c];
      }
      for (T& m : mean_) m /= T(rows);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < d; ++c) var_[c] += (x[r * d + c] - mean_[c]) * (x[r * d + c] - mean_[c]);
      }
      for (T& v : var_) v /= T(rows);
    } else {
      mean_ = w[w_.moving_mean]->data;
      var_ = w[w_.moving_variance]->data;
    }
    inv_std_.resize(d);
    for (int64_t c = 0; c < d; ++c) inv_std_[c] = T(1) / std::sqrt(var_[c] + T(eps_));
    const T* gamma = WeightOrNull<T>(w, w_.gamma);
    const T* beta = WeightOrNull<T>(w, w_.beta);
    xhat_.Reset(in[0]->shape);
    out->Reset(in[0]->shape);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < d; ++c) {
        const T xh = (x[r * d + c] - mean_[c]) * inv_std_[c];
        xhat_.data[r * d + c] = xh;
        out->data[r * d + c] = (gamma ? gamma[c] : T(1)) * xh + (beta ? beta[c] : T(0));
      }
    }
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w, const Array<T>&,
                const Array<T>& dout, const std::vector<Array<T>*>& din,
                const std::vector<Array<T>*>& dw) override {
    const int64_t rows = in[0]->rows(), d = in[0]->last();
    const T* gamma = WeightOrNull<T>(w, w_.gamma);
    std::vector<T> sum_dxhat(d, T(0)), sum_dxhat_xhat(d, T(0));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < d; ++c) {
        const T dy = dout.data[r * d + c], xh = xhat_.data[r * d + c];
        if (w_.gamma >= 0 && dw[w_.gamma] != nullptr) dw[w_.gamma]->data[c] += dy * xh;
        if (w_.beta >= 0 && dw[w_.beta] != nullptr) dw[w_.beta]->data[c] += dy;
        const T dxh = dy * (gamma ? gamma[c] : T(1));
        sum_dxhat[c] += dxh;
        sum_dxhat_xhat[c] += dxh * xh;
      }
    }
    if (din[0] == nullptr) return;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < d; ++c) {
        const T dxh = dout.data[r * d + c] * (gamma ? gamma[c] : T(1));
        T g = dxh;
        if (training_) g -= (sum_dxhat[c] + xhat_.data[r * d + c] * sum_dxhat_xhat[c]) / T(rows);
        din[0]->data[r * d + c] += inv_std_[c] * g;
      }
    }
  }
  std::vector<std::pair<int, Array<T>>> MovingUpdates(const typename GraphLayer<T>::Arrays& w) const override {
    if (!training_) return {};
    std::vector<std::pair<int, Array<T>>> updates;
    for (auto [index, batch] : {std::make_pair(w_.moving_mean, &mean_), std::make_pair(w_.moving_variance, &var_)}) {
      Array<T> value = *w[index];
      for (size_t c = 0; c < value.data.size(); ++c) {
        value.data[c] = value.data[c] * T(momentum_) + (*batch)[c] * T(1.0 - momentum_);
      }
      updates.emplace_back(index, std::move(value));
    }
    return updates;
  }

 private:
  double eps_, momentum_;
  NormWeights w_;
  bool training_ = false;
  Array<T> xhat_;
  std::vector<T> mean_, var_, inv_std_;
};

}  // namespace

template <typename T>
std::unique_ptr<GraphLayer<T>> MakeNormLayer(const GraphLayerSpec& spec) {
  switch (spec.kind) {
    case LayerKind::kLayerNormalization: return std::make_unique<LayerNormLayer<T>>(spec);
    case LayerKind::kBatchNormalization: return std::make_unique<BatchNormLayer<T>>(spec);
    default: return nullptr;
  }
}

template std::unique_ptr<GraphLayer<float>> MakeNormLayer<float>(const GraphLayerSpec&);
template std::unique_ptr<GraphLayer<double>> MakeNormLayer<double>(const GraphLayerSpec&);

}  // namespace pstrain
