// Keras's activations on rows of a matrix (softmax over the last axis), forward and backward, for
// the layers that apply them (Dense, Activation, Cross's preactivation).
// Thread-safety: plain functions.
#ifndef PSTRAIN_WORKER_GRAPH_ACTIVATION_MATH_H_
#define PSTRAIN_WORKER_GRAPH_ACTIVATION_MATH_H_

#include <cstdint>

#include "common/graph/model_graph.h"

namespace pstrain {

// y = f(x) for `count` values in rows of `cols` (softmax normalises each row). x and y may alias.
template <typename T>
void ActivationForward(ActivationKind kind, const T* x, int64_t count, int64_t cols, T* y);

// dx = dy * f'(x), given x, y = f(x) and dy. dx may alias dy. Writes (does not add).
template <typename T>
void ActivationBackward(ActivationKind kind, const T* x, const T* y, const T* dy, int64_t count, int64_t cols, T* dx);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_GRAPH_ACTIVATION_MATH_H_
