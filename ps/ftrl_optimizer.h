// FTRL-Proximal (McMahan et al. 2013, "Ad Click Prediction: a View from the Trenches") with the
// formula and defaults of Keras's Ftrl (and TensorFlow's ApplyFtrlV2), per element:
//   g' = g + 2 * l2_shrinkage * w
//   n' = n + g^2
//   z += g' - (n'^(-p) - n^(-p)) / lr * w              (p = learning_rate_power)
//   w  = (clip(z, -l1, l1) - z) / (n'^(-p) / lr + 2 * (l2 + beta / (2 lr)))
//   n  = n'
// Slots: "accumulator" (n, starting at initial_accumulator_value) and "linear" (z, starting at 0).
// Defaults: learning_rate 0.001, learning_rate_power -0.5, initial_accumulator_value 0.1, l1, l2,
// l2_shrinkage and beta 0. The optimizer of CTR work; on a table it updates only the touched rows.
// Thread-safety: as Optimizer.
#ifndef PSTRAIN_PS_FTRL_OPTIMIZER_H_
#define PSTRAIN_PS_FTRL_OPTIMIZER_H_

#include <memory>

#include "ps/optimizer.h"

namespace pstrain {

// REQUIRES: `config` has its defaults filled in and validated (Optimizer::Create does both).
std::unique_ptr<Optimizer> NewFtrlOptimizer(OptimizerProto config);

}  // namespace pstrain

#endif  // PSTRAIN_PS_FTRL_OPTIMIZER_H_
