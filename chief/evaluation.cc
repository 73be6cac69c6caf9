#include "chief/evaluation.h"

#include <cmath>
#include <string>

#include "absl/strings/str_format.h"

#include "absl/strings/str_cat.h"

namespace pstrain {

std::vector<Closure> MakeEvalClosures(int num_shards, int64_t first_id) {
  std::vector<Closure> out;
  for (int i = 0; i < num_shards; ++i) {
    Closure c;
    c.id = first_id + i;
    c.kind = Closure::Kind::kEvaluate;
    c.shard_index = i;
    c.num_shards = num_shards;
    out.push_back(c);
  }
  return out;
}

void EvalAccumulator::Add(int shard_index, const EvaluateResponse& response) {
  absl::MutexLock lock(&mu_);
  shards_.emplace(shard_index, response);
}

std::string FormatEval(const EvalResult& r) {
  std::string out = absl::StrFormat("test loss %.4f", r.loss);
  if (std::isfinite(r.accuracy)) absl::StrAppendFormat(&out, ", test accuracy %.2f%%", 100.0 * r.accuracy);
  absl::StrAppendFormat(&out, " (%d examples)", r.examples);
  return out;
}

absl::StatusOr<EvalResult> EvalAccumulator::Combine(int64_t step, bool classification) const {
  absl::MutexLock lock(&mu_);
  std::string missing;
  for (int i = 0; i < num_shards_; ++i) {
    if (shards_.count(i) == 0) absl::StrAppend(&missing, missing.empty() ? "" : ", ", i);
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("evaluation shards without a result: ", missing));
  }
  EvalResult r;
  r.step = step;
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (const auto& [index, response] : shards_) {
    r.examples += response.examples();
    loss_sum += response.loss_sum();
    correct += response.correct();
  }
  if (r.examples == 0) return absl::FailedPreconditionError("evaluation saw no test examples");
  r.loss = loss_sum / r.examples;
  r.accuracy = classification ? static_cast<double>(correct) / r.examples : std::nan("");
  return r;
}

}  // namespace pstrain
