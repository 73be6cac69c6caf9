// Conv2D (NHWC, Keras's [kh, kw, in, filters] kernel, strides, padding valid or same) as patch rows
// times the kernel, and MaxPooling2D / AveragePooling2D (same padding: padded positions are
// ignored, as TensorFlow does). The reference path for any geometry, in float or double; in float,
// worker/cpu's kernels run the geometries they cover (FastConvFits, FastPoolFits), writing their
// gradients (WritesGradients). A float Conv2D whose only consumer is such a
// MaxPooling2D pools inside the kernel (its full-size output never leaves the cache, as in the
// presets): the Conv2D's value is then the pooled one and the MaxPooling2D passes it on.
#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>

#include "worker/cpu/conv2d.h"
#include "worker/cpu/pool.h"
#include "worker/graph/activation_math.h"
#include "worker/graph/fast_backward.h"
#include "worker/graph/layer_factories.h"

namespace pstrain {
namespace {

struct Geometry {
  int64_t in_h, in_w, channels, out_h, out_w, kh, kw, sh, sw, pad_top, pad_left;
  Geometry(const std::vector<int64_t>& in, const std::vector<int64_t>& out, const LayerConfig& c)
      : in_h(in[1]), in_w(in[2]), channels(in[3]), out_h(out[0]), out_w(out[1]), kh(c.window_h), kw(c.window_w),
        sh(c.stride_h), sw(c.stride_w) {
    // TensorFlow's `same`: the total padding split with the extra row/column at the bottom/right.
    pad_top = c.same_padding ? std::max<int64_t>((out_h - 1) * sh + kh - in_h, 0) / 2 : 0;
    pad_left = c.same_padding ? std::max<int64_t>((out_w - 1) * sw + kw - in_w, 0) / 2 : 0;
  }
  // The input offset of window position (ky, kx) of output (oy, ox) in image b, or -1 in the padding.
  int64_t At(int64_t b, int64_t oy, int64_t ox, int64_t ky, int64_t kx) const {
    const int64_t y = oy * sh + ky - pad_top, x = ox * sw + kx - pad_left;
    if (y < 0 || y >= in_h || x < 0 || x >= in_w) return -1;
    return ((b * in_h + y) * in_w + x) * channels;
  }
};

// worker/cpu's Conv2D covers stride 1, square kernels, valid or same padding, ReLU or no activation.
bool FastConvFits(const LayerConfig& c) {
  return c.stride_h == 1 && c.stride_w == 1 && c.window_h == c.window_w &&
         (c.activation == ActivationKind::kLinear || c.activation == ActivationKind::kRelu);
}

// worker/cpu's MaxPool2D covers square windows with stride = window and valid padding.
bool FastPoolFits(const LayerConfig& c) {
  return c.window_h == c.window_w && c.stride_h == c.window_h && c.stride_w == c.window_w && !c.same_padding;
}

// The pool window fused into float Conv2D `conv`: its only consumer is a FastPoolFits MaxPooling2D
// and it is not the output. 0 when not fused.
int64_t FusedPoolWindow(const ModelGraph& graph, int conv) {
  const GraphLayerSpec& spec = graph.layers[conv];
  if (spec.kind != LayerKind::kConv2D || !FastConvFits(spec.config) || conv == graph.output) return 0;
  int consumer = -1, uses = 0;
  for (size_t k = 0; k < graph.layers.size(); ++k) {
    for (int j : graph.layers[k].inputs) {
      if (j == conv) {
        ++uses;
        consumer = static_cast<int>(k);
      }
    }
  }
  if (uses != 1) return 0;
  const GraphLayerSpec& pool = graph.layers[consumer];
  return pool.kind == LayerKind::kMaxPooling2D && FastPoolFits(pool.config) ? pool.config.window_h : 0;
}

template <typename T>
class Conv2DLayer : public GraphLayer<T> {
 public:
  // `fused_pool` > 0 (float only): the max-pool window of the MaxPooling2D that follows, done here.
  explicit Conv2DLayer(const GraphLayerSpec& spec, int64_t fused_pool = 0) : spec_(spec), fused_pool_(fused_pool) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w,
                       const ForwardOptions&, Array<T>* out) override {
    const Array<T>& x = *in[0];
    const Geometry g(x.shape, spec_.output_shape, spec_.config);
    if constexpr (std::is_same_v<T, float>) {
      if (FastConvFits(spec_.config)) {
        if (fast_ == nullptr) fast_ = std::make_unique<Conv2D>(FastGeometry(g));
        const Conv2DGeometry& c = fast_->geometry();
        out->Resize({x.batch(), c.result_height(), c.result_width(), spec_.config.filters});
        fast_->Forward(x.data.data(), x.batch(), w[0]->data.data(), spec_.config.use_bias ? w[1]->data.data() : nullptr,
                       out->data.data());
        return absl::OkStatus();
      }
    }
    const int64_t batch = x.batch(), rows = batch * g.out_h * g.out_w, patch = g.kh * g.kw * g.channels;
    const int64_t f = spec_.config.filters;
    patches_.Reset({rows, patch});
    for (int64_t b = 0, r = 0; b < batch; ++b) {
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        for (int64_t ox = 0; ox < g.out_w; ++ox, ++r) {
          T* row = patches_.data.data() + r * patch;
          for (int64_t ky = 0; ky < g.kh; ++ky) {
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int64_t at = g.At(b, oy, ox, ky, kx);
              if (at >= 0) std::copy_n(x.data.data() + at, g.channels, row + (ky * g.kw + kx) * g.channels);
            }
          }
        }
      }
    }
    pre_.Reset({batch, g.out_h, g.out_w, f});
    auto pre = Mat(pre_.data.data(), rows, f);
    pre.noalias() = ConstMat(patches_.data.data(), rows, patch) * ConstMat(w[0]->data.data(), patch, f);
    if (spec_.config.use_bias) pre.rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(w[1]->data.data(), f);
    out->Reset(pre_.shape);
    ActivationForward(spec_.config.activation, pre_.data.data(), out->size(), f, out->data.data());
    return absl::OkStatus();
  }
  void BackwardOnOwnGradient(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w,
                             const Array<T>& out, Array<T>* dout, const std::vector<Array<T>*>& din,
                             const std::vector<Array<T>*>& dw) override {
    if constexpr (std::is_same_v<T, float>) {
      if (fast_ != nullptr) {  // the kernel masks dout in place: no copy
        return fast_backward_.RunOn(*fast_, *in[0], in[0]->batch(), w, out, dout->data.data(), din, dw,
                                    spec_.config.use_bias ? spec_.config.filters : 0);
      }
    }
    Backward(in, w, out, *dout, din, dw);
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays& w, const Array<T>& out,
                const Array<T>& dout, const std::vector<Array<T>*>& din,
                const std::vector<Array<T>*>& dw) override {
    const Array<T>& x = *in[0];
    if constexpr (std::is_same_v<T, float>) {
      if (fast_ != nullptr) {
        return fast_backward_.Run(*fast_, x, x.batch(), w, out, dout, din, dw,
                                  spec_.config.use_bias ? spec_.config.filters : 0);
      }
    }
    const Geometry g(x.shape, spec_.output_shape, spec_.config);
    const int64_t batch = x.batch(), rows = batch * g.out_h * g.out_w, patch = g.kh * g.kw * g.channels;
    const int64_t f = spec_.config.filters;
    Array<T> dpre(out.shape);
    ActivationBackward(spec_.config.activation, pre_.data.data(), out.data.data(), dout.data.data(), out.size(), f,
                       dpre.data.data());
    const auto DP = ConstMat(dpre.data.data(), rows, f);
    if (dw[0] != nullptr) Mat(dw[0]->data.data(), patch, f).noalias() += ConstMat(patches_.data.data(), rows, patch).transpose() * DP;
    if (spec_.config.use_bias && dw[1] != nullptr) {
      Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(dw[1]->data.data(), f) += DP.colwise().sum();
    }
    if (din[0] == nullptr) return;
    Array<T> dpatches({rows, patch});
    Mat(dpatches.data.data(), rows, patch).noalias() = DP * ConstMat(w[0]->data.data(), patch, f).transpose();
    for (int64_t b = 0, r = 0; b < batch; ++b) {
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        for (int64_t ox = 0; ox < g.out_w; ++ox, ++r) {
          const T* row = dpatches.data.data() + r * patch;
          for (int64_t ky = 0; ky < g.kh; ++ky) {
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int64_t at = g.At(b, oy, ox, ky, kx);
              if (at < 0) continue;
              const T* src = row + (ky * g.kw + kx) * g.channels;
              for (int64_t c = 0; c < g.channels; ++c) din[0]->data[at + c] += src[c];
            }
          }
        }
      }
    }
  }

  bool WritesGradients() const override { return fast_ != nullptr; }

 private:
  Conv2DGeometry FastGeometry(const Geometry& g) const {
    Conv2DGeometry c;
    c.height = g.in_h;
    c.width = g.in_w;
    c.in_channels = g.channels;
    c.filters = spec_.config.filters;
    c.kernel = g.kh;
    c.same = spec_.config.same_padding;
    c.relu = spec_.config.activation == ActivationKind::kRelu;
    c.bias = spec_.config.use_bias;
    c.pool = fused_pool_;
    return c;
  }

  GraphLayerSpec spec_;
  int64_t fused_pool_;
  Array<T> patches_, pre_;  // [output pixels, kh * kw * channels] and the pre-activation
  std::unique_ptr<Conv2D> fast_;  // float, FastConvFits: built on the first Forward
  FastBackward fast_backward_;  // the fast path's scratch, kept across steps
};

template <typename T>
class Pooling2DLayer : public GraphLayer<T> {
 public:
  Pooling2DLayer(const GraphLayerSpec& spec, bool max) : spec_(spec), max_(max) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions&, Array<T>* out) override {
    const Array<T>& x = *in[0];
    const Geometry g(x.shape, spec_.output_shape, spec_.config);
    if constexpr (std::is_same_v<T, float>) {
      if (max_ && FastPoolFits(spec_.config)) {
        if (fast_ == nullptr) fast_ = std::make_unique<MaxPool2D>(PoolGeometry{g.in_h, g.in_w, g.channels, g.kh});
        out->Resize({x.batch(), g.out_h, g.out_w, g.channels});
        fast_->Forward(x.data.data(), x.batch(), out->data.data());
        return absl::OkStatus();
      }
    }
    out->Reset({x.batch(), g.out_h, g.out_w, g.channels});
    argmax_.assign(out->size(), -1);
    count_.assign(out->size() / g.channels, 0);
    for (int64_t b = 0, o = 0; b < x.batch(); ++b) {
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        for (int64_t ox = 0; ox < g.out_w; ++ox, ++o) {
          T* dst = out->data.data() + o * g.channels;
          if (max_) std::fill_n(dst, g.channels, -std::numeric_limits<T>::infinity());
          for (int64_t ky = 0; ky < g.kh; ++ky) {
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int64_t at = g.At(b, oy, ox, ky, kx);
              if (at < 0) continue;
              ++count_[o];
              for (int64_t c = 0; c < g.channels; ++c) {
                const T v = x.data[at + c];
                if (!max_) {
                  dst[c] += v;
                } else if (v > dst[c]) {
                  dst[c] = v;
                  argmax_[o * g.channels + c] = at + c;
                }
              }
            }
          }
          if (!max_) {
            for (int64_t c = 0; c < g.channels; ++c) dst[c] /= T(count_[o]);
          }
        }
      }
    }
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&, const Array<T>& out,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    if (din[0] == nullptr) return;
    if constexpr (std::is_same_v<T, float>) {
      if (fast_ != nullptr) return fast_->Backward(dout.data.data(), in[0]->batch(), din[0]->data.data());
    }
    const Geometry g(in[0]->shape, spec_.output_shape, spec_.config);
    for (int64_t o = 0; o < out.size() / g.channels; ++o) {
      const int64_t b = o / (g.out_h * g.out_w), oy = (o / g.out_w) % g.out_h, ox = o % g.out_w;
      for (int64_t c = 0; c < g.channels; ++c) {
        const T d = dout.data[o * g.channels + c];
        if (max_) {
          if (argmax_[o * g.channels + c] >= 0) din[0]->data[argmax_[o * g.channels + c]] += d;
          continue;
        }
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t at = g.At(b, oy, ox, ky, kx);
            if (at >= 0) din[0]->data[at + c] += d / T(count_[o]);
          }
        }
      }
    }
  }

  bool WritesGradients() const override { return fast_ != nullptr; }

 private:
  GraphLayerSpec spec_;
  bool max_;
  std::unique_ptr<MaxPool2D> fast_;  // float max pooling, FastPoolFits: built on the first Forward
  std::vector<int64_t> argmax_;  // per output value: the input offset that won (max)
  std::vector<int64_t> count_;   // per output pixel: the window positions inside the input
};

// The MaxPooling2D after a Conv2D that pooled already (FusedPoolWindow): its input is its output.
template <typename T>
class PooledByConvLayer : public GraphLayer<T> {
 public:
  bool PassesThrough() const override { return true; }
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions&, Array<T>* out) override {
    *out = *in[0];
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays&, const typename GraphLayer<T>::Arrays&, const Array<T>& out,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    if (din[0] != nullptr) AddTo(dout.data.data(), out.size(), din[0]->data.data());
  }
};

}  // namespace

template <typename T>
std::unique_ptr<GraphLayer<T>> MakeFusedConvLayer(const ModelGraph& graph, int index) {
  if constexpr (std::is_same_v<T, float>) {
    const GraphLayerSpec& spec = graph.layers[index];
    if (const int64_t window = FusedPoolWindow(graph, index); window > 0) {
      return std::make_unique<Conv2DLayer<T>>(spec, window);
    }
    if (spec.kind == LayerKind::kMaxPooling2D && FusedPoolWindow(graph, spec.inputs[0]) > 0) {
      return std::make_unique<PooledByConvLayer<T>>();
    }
  }
  return nullptr;
}

template std::unique_ptr<GraphLayer<float>> MakeFusedConvLayer<float>(const ModelGraph&, int);
template std::unique_ptr<GraphLayer<double>> MakeFusedConvLayer<double>(const ModelGraph&, int);

template <typename T>
std::unique_ptr<GraphLayer<T>> MakeConvLayer(const GraphLayerSpec& spec) {
  switch (spec.kind) {
    case LayerKind::kConv2D: return std::make_unique<Conv2DLayer<T>>(spec);
    case LayerKind::kMaxPooling2D: return std::make_unique<Pooling2DLayer<T>>(spec, true);
    case LayerKind::kAveragePooling2D: return std::make_unique<Pooling2DLayer<T>>(spec, false);
    default: return nullptr;
  }
}

template std::unique_ptr<GraphLayer<float>> MakeConvLayer<float>(const GraphLayerSpec&);
template std::unique_ptr<GraphLayer<double>> MakeConvLayer<double>(const GraphLayerSpec&);

}  // namespace pstrain
