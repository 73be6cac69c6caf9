#include "chief/evaluation/evaluation.h"

#include <cmath>
#include <string>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/metrics/binary_metrics.h"

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

MetricsKind MetricsKindOf(const ModelSpec& model) {
  if (model.loss == "mse") return MetricsKind::kRegression;
  if (model.loss == "binary_crossentropy") return MetricsKind::kBinary;
  return MetricsKind::kClassification;
}

std::string FormatEval(const EvalResult& r) {
  if (std::isfinite(r.auc)) return absl::StrFormat("test AUC %.4f, log loss %.4f (%d examples)", r.auc, r.loss, r.examples);
  std::string out = absl::StrFormat("test loss %.4f", r.loss);
  if (std::isfinite(r.accuracy)) absl::StrAppendFormat(&out, ", test accuracy %.2f%%", 100.0 * r.accuracy);
  absl::StrAppendFormat(&out, " (%d examples)", r.examples);
  return out;
}

nlohmann::json EvalJson(const EvalResult& r) {
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"test_loss", r.loss}, {"test_accuracy", number(r.accuracy)}, {"test_examples", r.examples}};
  if (std::isfinite(r.auc)) {
    j["test_auc"] = r.auc;
    j["test_logloss"] = r.loss;
  }
  return j;
}

absl::StatusOr<EvalResult> EvalAccumulator::Combine(int64_t step, MetricsKind kind) const {
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
  std::vector<float> logits, labels;
  for (const auto& [index, response] : shards_) {
    r.examples += response.examples();
    loss_sum += response.loss_sum();
    correct += response.correct();
    if (kind != MetricsKind::kBinary) continue;
    const size_t n = static_cast<size_t>(response.examples());
    if (response.logits().size() != n * sizeof(float) || response.labels().size() != n * sizeof(float)) {
      return absl::InvalidArgumentError(absl::StrCat("evaluation shard ", index, " sent ", response.logits().size(),
                                                     " bytes of logits and ", response.labels().size(),
                                                     " of labels for ", n, " examples (4 bytes each expected)"));
    }
    logits.resize(logits.size() + n);
    labels.resize(labels.size() + n);
    std::memcpy(logits.data() + logits.size() - n, response.logits().data(), n * sizeof(float));
    std::memcpy(labels.data() + labels.size() - n, response.labels().data(), n * sizeof(float));
  }
  if (r.examples == 0) return absl::FailedPreconditionError("evaluation saw no test examples");
  r.loss = loss_sum / r.examples;
  r.accuracy = kind == MetricsKind::kClassification ? static_cast<double>(correct) / r.examples : std::nan("");
  if (kind == MetricsKind::kBinary) r.auc = ExactAuc(labels, logits);
  return r;
}

}  // namespace pstrain
