#include "worker/step/divergence_check.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

int64_t NonFinite(const Tensor& t) {
  return CountNonFiniteFloats(absl::string_view(reinterpret_cast<const char*>(t.raw()), t.num_bytes()));
}

// The first of `tensors` holding NaN/Inf, or -1.
int FirstNonFinite(const std::vector<Tensor>& tensors, int64_t* count) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    *count = NonFinite(tensors[i]);
    if (*count > 0) return static_cast<int>(i);
  }
  return -1;
}

std::string NameOf(const std::vector<VariableSpec>& variables, int i) {
  return i < static_cast<int>(variables.size()) ? variables[i].name : absl::StrCat("#", i);
}

}  // namespace

absl::Status CheckVariablesFinite(absl::string_view step, absl::string_view when,
                                  const std::vector<VariableSpec>& variables, const std::vector<Tensor>& params) {
  int64_t count = 0;
  const int i = FirstNonFinite(params, &count);
  if (i < 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("training diverged at ", step, ": variable ", NameOf(variables, i),
                                                    " holds ", count, " non-finite values (NaN/Inf) ", when, "; ",
                                                    kDivergenceAdvice));
}

absl::Status CheckStepFinite(absl::string_view step, double loss, const std::vector<VariableSpec>& variables,
                             const std::vector<Tensor>& grads) {
  int64_t count = 0;
  const int i = FirstNonFinite(grads, &count);
  if (std::isfinite(loss) && i < 0) return absl::OkStatus();
  std::string what = std::isfinite(loss) ? absl::StrCat("the training loss is ", loss)
                                         : absl::StrCat("the training loss is ", std::isnan(loss) ? "NaN" : "infinite");
  absl::StrAppend(&what, i < 0 ? "; every gradient is finite"
                               : absl::StrCat(", and the gradient of variable ", NameOf(variables, i), " holds ", count,
                                              " non-finite values (NaN/Inf)"));
  return absl::FailedPreconditionError(absl::StrCat("training diverged at ", step, ": ", what, "; ", kDivergenceAdvice));
}

absl::Status LossGrowthCheck::Observe(absl::string_view step, double loss) {
  if (factor_ <= 0 || !std::isfinite(loss)) return absl::OkStatus();
  if (seen_ > 0) {
    const double reference = std::max(1.0, lowest_);
    if (loss > factor_ * reference) {
      return absl::FailedPreconditionError(absl::StrCat("training diverged at ", step, ": the training loss is ", loss,
                                                        ", more than ", factor_, " x the reference loss ", reference,
                                                        " of the first steps; ", kLossGrowthAdvice));
    }
  }
  if (seen_ < kLossReferenceSteps) {
    lowest_ = seen_ == 0 ? loss : std::min(lowest_, loss);
    ++seen_;
  }
  return absl::OkStatus();
}

}  // namespace pstrain
