// The values that flow through a graph executor: a shape ([batch] + the layer's per-example shape)
// and its elements in row-major order, in float for training or double for gradient checks. Integer
// inputs (Embedding ids, class labels) travel as values of T too (exact up to 2^24 in float).
// Thread-safety: plain values.
#ifndef PSTRAIN_WORKER_GRAPH_ARRAY_H_
#define PSTRAIN_WORKER_GRAPH_ARRAY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "Eigen/Core"

namespace pstrain {

template <typename T>
struct Array {
  std::vector<int64_t> shape;
  std::vector<T> data;

  Array() = default;
  Array(std::vector<int64_t> s, std::vector<T> d) : shape(std::move(s)), data(std::move(d)) {}
  // A zero-filled array of `s`.
  explicit Array(std::vector<int64_t> s) : shape(std::move(s)) { data.assign(Count(shape), T(0)); }

  static int64_t Count(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
  int64_t batch() const { return shape.empty() ? 1 : shape[0]; }
  int64_t last() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const { return last() == 0 ? 0 : size() / last(); }  // every element but the last axis
  // Resizes to `s` and zero-fills.
  void Reset(const std::vector<int64_t>& s) {
    shape = s;
    data.assign(Count(shape), T(0));
  }
  // Resizes to `s` keeping the storage: for outputs a kernel overwrites in full (no zero-fill).
  void Resize(const std::vector<int64_t>& s) {
    shape = s;
    data.resize(Count(shape));
  }
};

// dst[i] += src[i] for i < n: a fast kernel's written gradient into the executor's accumulated one.
template <typename T>
void AddTo(const T* src, int64_t n, T* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

// Variables (and their gradients) by Keras name, e.g. "dense/kernel".
template <typename T>
using NamedArrays = std::map<std::string, Array<T>>;

// Row-major matrix views for the GEMMs.
template <typename T>
using MatrixRM = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
Eigen::Map<const MatrixRM<T>> ConstMat(const T* p, int64_t rows, int64_t cols) {
  return Eigen::Map<const MatrixRM<T>>(p, rows, cols);
}
template <typename T>
Eigen::Map<MatrixRM<T>> Mat(T* p, int64_t rows, int64_t cols) {
  return Eigen::Map<MatrixRM<T>>(p, rows, cols);
}

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_GRAPH_ARRAY_H_
