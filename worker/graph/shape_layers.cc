// Flatten, Reshape, Dropout and Concatenate: layers that move or mask values.
#include <cstring>

#include "worker/graph/layer_factories.h"

namespace pstrain {
namespace {

template <typename T>
std::vector<int64_t> WithBatch(int64_t batch, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s = {batch};
  s.insert(s.end(), shape.begin(), shape.end());
  return s;
}

// Flatten and Reshape: the same elements in a new shape.
template <typename T>
class ReshapeLayer : public GraphLayer<T> {
 public:
  explicit ReshapeLayer(const GraphLayerSpec& spec) : shape_(spec.output_shape) {}
  bool PassesThrough() const override { return true; }
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions&, Array<T>* out) override {
    out->shape = WithBatch<T>(in[0]->batch(), shape_);
    out->data = in[0]->data;
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays&, const typename GraphLayer<T>::Arrays&, const Array<T>& out,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    if (din[0] == nullptr) return;
    for (int64_t i = 0; i < out.size(); ++i) din[0]->data[i] += dout.data[i];
  }

 private:
  std::vector<int64_t> shape_;
};

// A counter-based generator: the mask of element i at a step is a function of (seed, step, i) only,
// so a run is reproducible whatever the threads or the batch split.
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A stable key per layer name (FNV-1a), so masks do not depend on the standard library's hash.
inline uint64_t NameKey(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ull;
  return SplitMix64(h);
}

// Dropout: in training, zero each value with probability `rate` and scale the rest by 1 / (1 - rate)
// (Keras's inverted dropout); the identity otherwise.
template <typename T>
class DropoutLayer : public GraphLayer<T> {
 public:
  DropoutLayer(const LayerConfig& c, uint64_t layer_key) : rate_(c.rate), key_(layer_key ^ SplitMix64(c.seed)) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions& options, Array<T>* out) override {
    *out = *in[0];
    scale_.clear();
    if (!options.training || rate_ == 0.0) return absl::OkStatus();
    const uint64_t base = SplitMix64(SplitMix64(options.seed ^ key_) + static_cast<uint64_t>(options.step));
    const T keep_scale = T(1.0 / (1.0 - rate_));
    scale_.resize(out->data.size());
    for (size_t i = 0; i < scale_.size(); ++i) {
      const double u = static_cast<double>(SplitMix64(base + i) >> 11) * 0x1.0p-53;  // [0, 1)
      scale_[i] = u < rate_ ? T(0) : keep_scale;
      out->data[i] *= scale_[i];
    }
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays&, const typename GraphLayer<T>::Arrays&, const Array<T>& out,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    if (din[0] == nullptr) return;
    for (int64_t i = 0; i < out.size(); ++i) din[0]->data[i] += scale_.empty() ? dout.data[i] : dout.data[i] * scale_[i];
  }

 private:
  double rate_;
  uint64_t key_;
  std::vector<T> scale_;  // empty: the identity
};

// Concatenate along a per-example axis (config.axis after shape inference).
template <typename T>
class ConcatenateLayer : public GraphLayer<T> {
 public:
  explicit ConcatenateLayer(const GraphLayerSpec& spec) : spec_(spec) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions&, Array<T>* out) override {
    out->Resize(WithBatch<T>(in[0]->batch(), spec_.output_shape));  // every element is written below
    Walk(in, out->data.data(), [](const T* part, T* whole, int64_t n) { std::memcpy(whole, part, n * sizeof(T)); });
    return absl::OkStatus();
  }
  // Each input's gradient is its slice of the output's, copied whole (no zero-fill, no add).
  bool WritesGradients() const override { return true; }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&, const Array<T>&,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    const T* whole = dout.data.data();
    int64_t offset = 0;
    const int64_t outer = Outer(*in[0]), total = Inner(spec_.output_shape);
    for (size_t k = 0; k < in.size(); ++k) {
      const int64_t n = Inner(in[k]->shape, 1);
      if (din[k] != nullptr) {
        for (int64_t o = 0; o < outer; ++o) {
          std::memcpy(din[k]->data.data() + o * n, whole + o * total + offset, n * sizeof(T));
        }
      }
      offset += n;
    }
  }

 private:
  // Elements per outer index of `shape` from the concatenation axis on (`skip` leading batch axes).
  int64_t Inner(const std::vector<int64_t>& shape, int skip = 0) const {
    int64_t n = 1;
    for (size_t i = spec_.config.axis + skip; i < shape.size(); ++i) n *= shape[i];
    return n;
  }
  int64_t Outer(const Array<T>& a) const {
    int64_t n = 1;
    for (int64_t i = 0; i <= spec_.config.axis; ++i) n *= a.shape[i];  // batch and the axes before `axis`
    return n;
  }
  template <typename Fn>
  void Walk(const typename GraphLayer<T>::Arrays& in, T* whole, Fn fn) const {
    const int64_t outer = Outer(*in[0]), total = Inner(spec_.output_shape);
    int64_t offset = 0;
    for (const Array<T>* part : in) {
      const int64_t n = Inner(part->shape, 1);
      for (int64_t o = 0; o < outer; ++o) fn(part->data.data() + o * n, whole + o * total + offset, n);
      offset += n;
    }
  }

  GraphLayerSpec spec_;
};

}  // namespace

template <typename T>
std::unique_ptr<GraphLayer<T>> MakeShapeLayer(const GraphLayerSpec& spec) {
  switch (spec.kind) {
    case LayerKind::kInput:
    case LayerKind::kFlatten:
    case LayerKind::kReshape:
      return std::make_unique<ReshapeLayer<T>>(spec);
    case LayerKind::kDropout:
      return std::make_unique<DropoutLayer<T>>(spec.config, NameKey(spec.name));
    case LayerKind::kConcatenate:
      return std::make_unique<ConcatenateLayer<T>>(spec);
    default:
      return nullptr;
  }
}

template std::unique_ptr<GraphLayer<float>> MakeShapeLayer<float>(const GraphLayerSpec&);
template std::unique_ptr<GraphLayer<double>> MakeShapeLayer<double>(const GraphLayerSpec&);

}  // namespace pstrain
