// Add, Subtract, Multiply, Average, Dot and the recommenders' DotInteraction (DLRM).
#include <cmath>

#include "worker/graph/layer_factories.h"

namespace pstrain {
namespace {

template <typename T>
class ElementwiseLayer : public GraphLayer<T> {
 public:
  explicit ElementwiseLayer(LayerKind kind) : kind_(kind) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions&, Array<T>* out) override {
    *out = *in[0];
    const size_t k = in.size();
    for (size_t j = 1; j < k; ++j) {
      const std::vector<T>& x = in[j]->data;
      for (size_t i = 0; i < x.size(); ++i) {
        switch (kind_) {
          case LayerKind::kSubtract: out->data[i] -= x[i]; break;
          case LayerKind::kMultiply: out->data[i] *= x[i]; break;
          default: out->data[i] += x[i]; break;  // Add, Average
        }
      }
    }
    if (kind_ == LayerKind::kAverage) {
      for (T& v : out->data) v /= T(k);
    }
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&, const Array<T>& out,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    for (size_t j = 0; j < in.size(); ++j) {
      if (din[j] == nullptr) continue;
      for (int64_t i = 0; i < out.size(); ++i) {
        T g = dout.data[i];
        if (kind_ == LayerKind::kSubtract && j == 1) g = -g;
        if (kind_ == LayerKind::kAverage) g /= T(in.size());
        if (kind_ == LayerKind::kMultiply) {
          for (size_t m = 0; m < in.size(); ++m) {
            if (m != j) g *= in[m]->data[i];
          }
        }
        din[j]->data[i] += g;
      }
    }
  }

 private:
  LayerKind kind_;
};

// Dot over the last axis of two [batch, d] inputs -> [batch, 1]; with normalize, of their
// L2-normalised rows (x / sqrt(max(|x|^2, 1e-12)), as Keras's l2_normalize).
template <typename T>
class DotLayer : public GraphLayer<T> {
 public:
  explicit DotLayer(bool normalize) : normalize_(normalize) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions&, Array<T>* out) override {
    const int64_t rows = in[0]->rows(), d = in[0]->last();
    out->Reset({rows, 1});
    for (int side = 0; side < 2; ++side) {
      unit_[side] = *in[side];
      inv_norm_[side].assign(rows, T(1));
      if (!normalize_) continue;
      for (int64_t r = 0; r < rows; ++r) {
        T* x = unit_[side].data.data() + r * d;
        T sq = 0;
        for (int64_t c = 0; c < d; ++c) sq += x[c] * x[c];
        inv_norm_[side][r] = T(1) / std::sqrt(std::max(sq, T(1e-12)));
        clamped_[side].resize(rows);
        clamped_[side][r] = sq < T(1e-12);
        for (int64_t c = 0; c < d; ++c) x[c] *= inv_norm_[side][r];
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      T s = 0;
      for (int64_t c = 0; c < d; ++c) s += unit_[0].data[r * d + c] * unit_[1].data[r * d + c];
      out->data[r] = s;
    }
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&, const Array<T>&,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    const int64_t rows = in[0]->rows(), d = in[0]->last();
    std::vector<T> du(d);
    for (int side = 0; side < 2; ++side) {
      if (din[side] == nullptr) continue;
      const Array<T>& other = unit_[1 - side];
      for (int64_t r = 0; r < rows; ++r) {
        const T* u = unit_[side].data.data() + r * d;
        T along = 0;  // u . du: the part of du along u, which the normalisation removes
        for (int64_t c = 0; c < d; ++c) {
          du[c] = dout.data[r] * other.data[r * d + c];
          along += u[c] * du[c];
        }
        const bool project = normalize_ && !clamped_[side][r];
        for (int64_t c = 0; c < d; ++c) {
          din[side]->data[r * d + c] += inv_norm_[side][r] * (project ? du[c] - u[c] * along : du[c]);
        }
      }
    }
  }

 private:
  bool normalize_;
  Array<T> unit_[2];
  std::vector<T> inv_norm_[2];
  std::vector<bool> clamped_[2];
};

// DotInteraction: the pairwise dot products of F inputs [batch, d]: for rows i and columns j < i
// (j <= i with self_interaction), row-major, as TensorFlow Recommenders gathers them; with
// skip_gather all F * F with the others zero.
template <typename T>
class DotInteractionLayer : public GraphLayer<T> {
 public:
  explicit DotInteractionLayer(const GraphLayerSpec& spec) : c_(spec.config), width_(spec.output_shape[0]) {}
  absl::Status Forward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&,
                       const ForwardOptions&, Array<T>* out) override {
    const int64_t rows = in[0]->rows(), d = in[0]->last(), f = static_cast<int64_t>(in.size());
    out->Reset({rows, width_});
    for (int64_t r = 0; r < rows; ++r) {
      int64_t k = 0;
      for (int64_t i = 0; i < f; ++i) {
        for (int64_t j = 0; j < f; ++j) {
          const bool kept = c_.self_interaction ? j <= i : j < i;
          if (!kept && !c_.skip_gather) continue;
          T s = 0;
          if (kept) {
            for (int64_t c = 0; c < d; ++c) s += in[i]->data[r * d + c] * in[j]->data[r * d + c];
          }
          out->data[r * width_ + k++] = s;
        }
      }
    }
    return absl::OkStatus();
  }
  void Backward(const typename GraphLayer<T>::Arrays& in, const typename GraphLayer<T>::Arrays&, const Array<T>&,
                const Array<T>& dout, const std::vector<Array<T>*>& din, const std::vector<Array<T>*>&) override {
    const int64_t rows = in[0]->rows(), d = in[0]->last(), f = static_cast<int64_t>(in.size());
    for (int64_t r = 0; r < rows; ++r) {
      int64_t k = 0;
      for (int64_t i = 0; i < f; ++i) {
        for (int64_t j = 0; j < f; ++j) {
          const bool kept = c_.self_interaction ? j <= i : j < i;
          if (!kept && !c_.skip_gather) continue;
          const T g = dout.data[r * width_ + k++];
          if (!kept) continue;
          for (int64_t c = 0; c < d; ++c) {
            if (din[i] != nullptr) din[i]->data[r * d + c] += g * in[j]->data[r * d + c];
            if (din[j] != nullptr) din[j]->data[r * d + c] += g * in[i]->data[r * d + c];
          }
        }
      }
    }
  }

 private:
  LayerConfig c_;
  int64_t width_;
};

}  // namespace

template <typename T>
std::unique_ptr<GraphLayer<T>> MakeMergeLayer(const GraphLayerSpec& spec) {
  switch (spec.kind) {
    case LayerKind::kAdd:
    case LayerKind::kSubtract:
    case LayerKind::kMultiply:
    case LayerKind::kAverage:
      return std::make_unique<ElementwiseLayer<T>>(spec.kind);
    case LayerKind::kDot: return std::make_unique<DotLayer<T>>(spec.config.normalize);
    case LayerKind::kDotInteraction: return std::make_unique<DotInteractionLayer<T>>(spec);
    default: return nullptr;
  }
}

template std::unique_ptr<GraphLayer<float>> MakeMergeLayer<float>(const GraphLayerSpec&);
template std::unique_ptr<GraphLayer<double>> MakeMergeLayer<double>(const GraphLayerSpec&);

}  // namespace pstrain
