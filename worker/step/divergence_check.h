// TerminateOnNaN (Keras's callback) for the processes that compute gradients: a worker step or a
// `pstrain train` step whose training loss, gradients or variables hold NaN or Inf fails with an
// error naming the step and the variable, so the job stops before a diverged model is pushed or
// saved. On unless the job spec's terminate_on_nan is false. A scan of the variables and gradients
// per step costs one read of the model, small beside the step's compute.
// Thread-safety: pure functions.
#ifndef PSTRAIN_WORKER_STEP_DIVERGENCE_CHECK_H_
#define PSTRAIN_WORKER_STEP_DIVERGENCE_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/plan/model_variables.h"
#include "common/tensor/tensor.h"

namespace pstrain {

// The advice every divergence error ends with.
inline constexpr char kDivergenceAdvice[] =
    "lower the learning rate or check the data; the checkpoints already saved are kept (terminate_on_nan: "
    "false in the job spec, or --terminate_on_nan=false, lets the job go on)";
inline constexpr char kLossGrowthAdvice[] =
    "lower the learning rate or check the data; the checkpoints already saved are kept "
    "(divergence_loss_factor: 0 in the job spec, or --divergence_loss_factor=0, turns this rule off)";

// FailedPrecondition when a variable in `params` (in `variables` order) holds NaN/Inf:
// "<step>: variable dense/kernel holds 3 non-finite values (NaN/Inf) <when>; <advice>".
absl::Status CheckVariablesFinite(absl::string_view step, absl::string_view when,
                                  const std::vector<VariableSpec>& variables, const std::vector<Tensor>& params);

// FailedPrecondition when the step's mean training loss is not finite or a gradient holds NaN/Inf,
// naming the first such variable.
absl::Status CheckStepFinite(absl::string_view step, double loss, const std::vector<VariableSpec>& variables,
                             const std::vector<Tensor>& grads);

// The loss-growth rule, for finite garbage (a learning rate of 1e30 trains to losses near 1e31
// without a NaN): the reference is the lowest mean training loss of the first kLossReferenceSteps
// steps this process computed (of those seen so far while fewer), at least 1; a later step whose
// mean loss passes `factor` x the reference has diverged. The lowest, not the mean: a loss that
// already grows during those steps must not raise its own reference. The first step only sets it.
// `factor` 0 turns the rule off (job spec divergence_loss_factor, --divergence_loss_factor).
// Thread-safety: not thread-safe; one per sequence of steps (a trainer, a worker's data part).
inline constexpr int kLossReferenceSteps = 10;
class LossGrowthCheck {
 public:
  explicit LossGrowthCheck(double factor) : factor_(factor) {}
  // OK, or FailedPrecondition "training diverged at <step>: the training loss is X, more than
  // <factor> x the reference loss Y of the first steps; <advice>". A non-finite loss is left to
  // CheckStepFinite (OK here).
  absl::Status Observe(absl::string_view step, double loss);

 private:
  double factor_;
  int seen_ = 0;
  double lowest_ = 0;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_STEP_DIVERGENCE_CHECK_H_
