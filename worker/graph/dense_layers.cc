// Dense, Activation, ReLU and the recommenders' Cross (DCN-v2). In float, a Dense runs worker/cpu's
// Dense kernel (with ReLU or no activation inside it, any other on its output), writing its gradients
// (WritesGradients).
#include <algorithm>
#include <memory>
#include <type_traits>

#include "worker/cpu/dense.h"

#include "worker/graph/activation_math.h"
#include "worker/graph/fast_backward.h"
#include "worker/graph/layer_factories.h"

namespace pstrain {
namespace {

// y = x * kernel (+ bias) on rows of x; dkernel += x^T dy, dbias += column sums, dx += dy kernel^T.
template <typename T>
void Affine(const T* x, int64_t rows, int64_t in, const T* kernel, const T* bias, int64_t out, T* y) {
  auto Y = Mat(y, rows, out);
  Y.noalias() = ConstMat(x, rows, in) * ConstMat(kernel, in, out);
  if (bias != nullptr) Y.rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(bias, out);
}
template <typename T>
void AffineBackward(const T* x, int64_t rows, int64_t in, const T* kernel, int64_t out, const T* dy, T* dx,
                    T* dkernel, T* dbias) {
  const auto DY = ConstMat(dy, rows, out);
  if (dkernel != nullptr) Mat(dkernel, in, out).noalias() += ConstMat(x, rows, in).transpose() * DY;
  if (dbias != nullptr) Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(dbias, out) += DY.colwise().sum();
  if (dx != nullptr) Mat(dx, rows, in).noalias() += DY * ConstMat(kernel, in, out).transpose();
}

template <typename T>
T* DataOrNull(Array<T>* a) { return a == nullptr ? nullptr : a->data.data(); }

template <typename T>
class DenseLayer : public GraphLayer<T> {
 public:
  explicit DenseLayer(const GraphLayerSpec& spec) : spec_(spec) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w,
                       const ForwardOptions&, Array<T>* out) override {
    const Array<T>& x = *in[0];
    std::vector<int64_t> shape = x.shape;
    shape.back() = spec_.config.units;
    if constexpr (std::is_same_v<T, float>) {
      if (fast_ == nullptr) {
        fast_ = std::make_unique<Dense>(DenseGeometry{x.last(), spec_.config.units, KernelRelu(), spec_.config.use_bias});
      }
      const float* bias = spec_.config.use_bias ? w[1]->data.data() : nullptr;
      out->Resize(shape);
      if (KernelActivates()) {
        fast_->Forward(x.data.data(), x.rows(), w[0]->data.data(), bias, out->data.data());
      } else {  // the kernel's affine part, then the activation on its output
        pre_.Resize(shape);
        fast_->Forward(x.data.data(), x.rows(), w[0]->data.data(), bias, pre_.data.data());
        ActivationForward(spec_.config.activation, pre_.data.data(), out->size(), out->last(), out->data.data());
      }
      return absl::OkStatus();
    }
    out->Reset(shape);
    pre_.Reset(shape);
    Affine(x.data.data(), x.rows(), x.last(), w[0]->data.data(), spec_.config.use_bias ? w[1]->data.data() : nullptr,
           spec_.config.units, pre_.data.data());
    ActivationForward(spec_.config.activation, pre_.data.data(), out->size(), out->last(), out->data.data());
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w, const Array<T>& out,
                const Array<T>& dout, const std::vector<Array<T>*>& din,
                const std::vector<Array<T>*>& dw) override {
    if constexpr (std::is_same_v<T, float>) {
      const int64_t bias_size = spec_.config.use_bias ? spec_.config.units : 0;
      if (KernelActivates()) return fast_backward_.Run(*fast_, *in[0], in[0]->rows(), w, out, dout, din, dw, bias_size);
      dpre_.Resize(out.shape);
      ActivationBackward(spec_.config.activation, pre_.data.data(), out.data.data(), dout.data.data(), out.size(),
                         out.last(), dpre_.data.data());
      return fast_backward_.RunOn(*fast_, *in[0], in[0]->rows(), w, pre_, dpre_.data.data(), din, dw, bias_size);
    }
    dpre_.Reset(out.shape);
    ActivationBackward(spec_.config.activation, pre_.data.data(), out.data.data(), dout.data.data(), out.size(),
                       out.last(), dpre_.data.data());
    const Array<T>& x = *in[0];
    AffineBackward(x.data.data(), x.rows(), x.last(), w[0]->data.data(), spec_.config.units, dpre_.data.data(),
                   DataOrNull(din[0]), DataOrNull(dw[0]), spec_.config.use_bias ? DataOrNull(dw[1]) : nullptr);
  }

  void BackwardOnOwnGradient(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w,
                             const Array<T>& out, Array<T>* dout, const std::vector<Array<T>*>& din,
                             const std::vector<Array<T>*>& dw) override {
    if constexpr (std::is_same_v<T, float>) {
      if (KernelActivates()) {  // the kernel masks dout in place: no copy
        return fast_backward_.RunOn(*fast_, *in[0], in[0]->rows(), w, out, dout->data.data(), din, dw,
                                    spec_.config.use_bias ? spec_.config.units : 0);
      }
    }
    Backward(in, w, out, *dout, din, dw);
  }

  bool WritesGradients() const override { return std::is_same_v<T, float>; }

 private:
  // worker/cpu's Dense applies ReLU (or nothing) itself; other activations run on its output.
  bool KernelRelu() const { return spec_.config.activation == ActivationKind::kRelu; }
  bool KernelActivates() const { return KernelRelu() || spec_.config.activation == ActivationKind::kLinear; }

  GraphLayerSpec spec_;
  Array<T> pre_, dpre_;  // the pre-activation and its gradient
  std::unique_ptr<Dense> fast_;  // float: built on the first Forward
  FastBackward fast_backward_;  // the fast path's scratch, kept across steps
};

template <typename T>
class ActivationLayer : public GraphLayer<T> {
 public:
  explicit ActivationLayer(ActivationKind kind) : kind_(kind) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions&, Array<T>* out) override {
    out->Reset(in[0]->shape);
    ActivationForward(kind_, in[0]->data.data(), out->size(), out->last(), out->data.data());
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&, const Array<T>& out,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    if (din[0] == nullptr) return;
    scratch_.Reset(out.shape);
    ActivationBackward(kind_, in[0]->data.data(), out.data.data(), dout.data.data(), out.size(), out.last(),
                       scratch_.data.data());
    for (int64_t i = 0; i < out.size(); ++i) din[0]->data[i] += scratch_.data[i];
  }

 private:
  ActivationKind kind_;
  Array<T> scratch_;
};

// Keras's ReLU layer: x above `threshold` passes (clipped to [0, max_value] when max_value is set),
// below it the output is negative_slope * (x - threshold).
template <typename T>
class ReluLayer : public GraphLayer<T> {
 public:
  explicit ReluLayer(const LayerConfig& c) : c_(c) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions&, Array<T>* out) override {
    out->Reset(in[0]->shape);
    for (int64_t i = 0; i < out->size(); ++i) {
      const T x = in[0]->data[i];
      T y;
      if (x > T(c_.threshold)) {
        y = c_.max_value >= 0 ? std::clamp(x, T(0), T(c_.max_value)) : x;
      } else {
        y = T(c_.negative_slope) * (x - T(c_.threshold));
      }
      out->data[i] = y;
    }
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&, const Array<T>& out,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    if (din[0] == nullptr) return;
    for (int64_t i = 0; i < out.size(); ++i) {
      const T x = in[0]->data[i];
      T g;
      if (x > T(c_.threshold)) {
        g = (c_.max_value >= 0 && (x < T(0) || x > T(c_.max_value))) ? T(0) : T(1);
      } else {
        g = T(c_.negative_slope);
      }
      din[0]->data[i] += g * dout.data[i];
    }
  }

 private:
  LayerConfig c_;
};

// Cross (DCN-v2): y = x0 * (act(W x + b) + diag_scale * x) + x, W full [d, d] or U [d, p] then
// V [p, d]; x is the second input, or x0 when called with one. In float with a ReLU or no
// activation, W x + b (or U x and V h + b) runs worker/cpu's Dense kernel, as a Dense layer does.
template <typename T>
class CrossLayer : public GraphLayer<T> {
 public:
  explicit CrossLayer(const LayerConfig& c) : c_(c) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w,
                       const ForwardOptions&, Array<T>* out) override {
    const Array<T>& x0 = *in[0];
    const Array<T>& x = *in.back();
    const int64_t rows = x.rows(), d = x.last();
    act_.Resize(x.shape);
    if (!ForwardFast(x, w)) {
      pre_.Reset(x.shape);
      if (c_.projection_dim == 0) {
        Affine(x.data.data(), rows, d, w[0]->data.data(), c_.use_bias ? w[1]->data.data() : nullptr, d,
               pre_.data.data());
      } else {
        hidden_.Reset({rows, c_.projection_dim});
        Affine(x.data.data(), rows, d, w[0]->data.data(), static_cast<const T*>(nullptr), c_.projection_dim,
               hidden_.data.data());
        Affine(hidden_.data.data(), rows, c_.projection_dim, w[1]->data.data(),
               c_.use_bias ? w[2]->data.data() : nullptr, d, pre_.data.data());
      }
      ActivationForward(c_.activation, pre_.data.data(), act_.size(), d, act_.data.data());
    }
    prod_.Resize(x.shape);
    out->Resize(x.shape);
    const T diag = T(c_.diag_scale);
    for (int64_t i = 0; i < out->size(); ++i) {
      prod_.data[i] = act_.data[i] + diag * x.data[i];
      out->data[i] = x0.data[i] * prod_.data[i] + x.data[i];
    }
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w, const Array<T>& out,
                const Array<T>& dout, const std::vector<Array<T>*>& din,
                const std::vector<Array<T>*>& dw) override {
    const Array<T>& x0 = *in[0];
    const Array<T>& x = *in.back();
    Array<T>* dx0 = din[0];
    Array<T>* dx = din.back();
    const int64_t rows = x.rows(), d = x.last();
    dprod_.Resize(x.shape);
    for (int64_t i = 0; i < out.size(); ++i) {
      if (dx0 != nullptr) dx0->data[i] += dout.data[i] * prod_.data[i];
      dprod_.data[i] = dout.data[i] * x0.data[i];
      if (dx != nullptr) dx->data[i] += dout.data[i] + T(c_.diag_scale) * dprod_.data[i];
    }
    if constexpr (std::is_same_v<T, float>) {
      if (fast_w_ != nullptr) return BackwardFast(x, w, dx, dw);
    }
    ActivationBackward(c_.activation, pre_.data.data(), act_.data.data(), dprod_.data.data(), dprod_.size(), d,
                       dprod_.data.data());
    T* dxp = DataOrNull(dx);
    if (c_.projection_dim == 0) {
      AffineBackward(x.data.data(), rows, d, w[0]->data.data(), d, dprod_.data.data(), dxp, DataOrNull(dw[0]),
                     c_.use_bias ? DataOrNull(dw[1]) : nullptr);
      return;
    }
    Array<T> dhidden(hidden_.shape);
    AffineBackward(hidden_.data.data(), rows, c_.projection_dim, w[1]->data.data(), d, dprod_.data.data(),
                   dhidden.data.data(), DataOrNull(dw[1]), c_.use_bias ? DataOrNull(dw[2]) : nullptr);
    AffineBackward(x.data.data(), rows, d, w[0]->data.data(), c_.projection_dim, dhidden.data.data(), dxp,
                   DataOrNull(dw[0]), static_cast<T*>(nullptr));
  }

 private:
  // act_ = act(W x + b) (or act(V (U x) + b)) through worker/cpu's Dense kernels; false when they do
  // not apply (double, or an activation other than ReLU and linear).
  bool ForwardFast(const Array<T>& x, const typename GraphLayer<T>::Arrays& w) {
    if constexpr (!std::is_same_v<T, float>) {
      return false;
    } else {
      const bool relu = c_.activation == ActivationKind::kRelu;
      if (!relu && c_.activation != ActivationKind::kLinear) return false;
      const int64_t rows = x.rows(), d = x.last(), p = c_.projection_dim;
      if (fast_w_ == nullptr) {
        fast_w_ = std::make_unique<Dense>(DenseGeometry{p == 0 ? d : p, d, relu, c_.use_bias});
        if (p != 0) fast_u_ = std::make_unique<Dense>(DenseGeometry{d, p, false, false});
      }
      const int b = p == 0 ? 1 : 2;  // the bias's weight index
      const float* bias = c_.use_bias ? w[b]->data.data() : nullptr;
      if (p == 0) {
        fast_w_->Forward(x.data.data(), rows, w[0]->data.data(), bias, act_.data.data());
      } else {
        hidden_.Resize({rows, p});
        fast_u_->Forward(x.data.data(), rows, w[0]->data.data(), nullptr, hidden_.data.data());
        fast_w_->Forward(hidden_.data.data(), rows, w[1]->data.data(), bias, act_.data.data());
      }
      return true;
    }
  }

  // The fast path's backward from dprod_ (the gradient of act_): the kernels write their
  // gradients, so each goes through scratch and is added where the executor expects a sum.
  void BackwardFast(const Array<T>& x, const typename GraphLayer<T>::Arrays& w, Array<T>* dx,
                    const std::vector<Array<T>*>& dw) {
    if constexpr (std::is_same_v<T, float>) {
      const int64_t rows = x.rows(), p = c_.projection_dim;
      const int last = p == 0 ? 0 : 1;  // the weight index of the kernel next to the output
      const Array<T>& last_in = p == 0 ? x : hidden_;
      AddInto add;
      add.Prepare(&dlast_in_, last_in.size());
      add.Prepare(&dkernel_, w[last]->size());
      if (c_.use_bias) add.Prepare(&dbias_, w[last + 1]->size());
      const bool want_last_in = p != 0 || dx != nullptr;
      fast_w_->Backward(last_in.data.data(), act_.data.data(), dprod_.data.data(), rows, w[last]->data.data(),
                        want_last_in ? dlast_in_.data() : nullptr, dkernel_.data(),
                        c_.use_bias ? dbias_.data() : nullptr);
      add.To(dw[last], dkernel_);
      if (c_.use_bias) add.To(dw[last + 1], dbias_);
      if (p == 0) {
        if (dx != nullptr) add.To(dx, dlast_in_);
        return;
      }
      // dlast_in_ is the gradient of hidden_ = U x (no activation, no bias).
      add.Prepare(&dx_scratch_, x.size());
      add.Prepare(&dkernel_u_, w[0]->size());
      fast_u_->Backward(x.data.data(), hidden_.data.data(), dlast_in_.data(), rows, w[0]->data.data(),
                        dx != nullptr ? dx_scratch_.data() : nullptr, dkernel_u_.data(), nullptr);
      add.To(dw[0], dkernel_u_);
      if (dx != nullptr) add.To(dx, dx_scratch_);
    }
  }

  // Sizes scratch and adds it into a gradient array (skipped when null).
  struct AddInto {
    void Prepare(std::vector<float>* v, int64_t n) const { v->resize(static_cast<size_t>(n)); }
    void To(Array<float>* g, const std::vector<float>& v) const {
      if (g == nullptr) return;
      float* out = g->data.data();
      for (size_t i = 0; i < v.size(); ++i) out[i] += v[i];
    }
  };

  LayerConfig c_;
  // pre_ = W x + b (the slow path only), act_ its activation, prod_ = act + diag * x, hidden_ = U x.
  Array<T> pre_, act_, prod_, hidden_, dprod_;
  std::unique_ptr<Dense> fast_w_, fast_u_;  // float, ReLU or linear: W (or V) and U
  std::vector<float> dlast_in_, dkernel_, dbias_, dx_scratch_, dkernel_u_;  // the fast backward's scratch
};

}  // namespace

template <typename T>
std::unique_ptr<GraphLayer<T>> MakeDenseLayer(const GraphLayerSpec& spec) {
  switch (spec.kind) {
    case LayerKind::kDense: return std::make_unique<DenseLayer<T>>(spec);
    case LayerKind::kActivation: return std::make_unique<ActivationLayer<T>>(spec.config.activation);
    case LayerKind::kReLU: return std::make_unique<ReluLayer<T>>(spec.config);
    case LayerKind::kCross: return std::make_unique<CrossLayer<T>>(spec.config);
    default: return nullptr;
  }
}

template std::unique_ptr<GraphLayer<float>> MakeDenseLayer<float>(const GraphLayerSpec&);
template std::unique_ptr<GraphLayer<double>> MakeDenseLayer<double>(const GraphLayerSpec&);

}  // namespace pstrain
