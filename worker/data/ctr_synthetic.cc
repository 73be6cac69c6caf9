#include "worker/data/ctr_synthetic.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"
#include "common/metrics/binary_metrics.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

constexpr size_t kWriteChunkBytes = 1 << 20;

absl::Status WriteError(const std::string& path) {
  return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
}

// Streams split `split` into `path` through a temporary file (fsynced, then renamed), and sums
// up what the true probabilities say about its labels.
absl::StatusOr<CtrSplitSummary> WriteSplit(Env* env, const CtrPlantedModel& model, CtrSplit split, int64_t examples,
                                           const std::string& path) {
  const std::string temporary = absl::StrCat(path, ".tmp.", ::getpid());
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) return WriteError(temporary);
  const bool keep_probabilities = split == CtrSplit::kTest;
  std::vector<float> labels;
  std::vector<double> logits;
  double positives = 0.0, loss_sum = 0.0;
  std::string chunk;
  CtrExample example;
  bool ok = true;
  for (int64_t i = 0; i < examples && ok; ++i) {
    model.Draw(split, i, &example);
    CtrPlantedModel::AppendLine(example, &chunk);
    positives += example.label;
    const float label = example.label;
    loss_sum += LogLossFromLogits({&label, 1}, absl::Span<const double>(&example.logit, 1));
    if (keep_probabilities) {
      labels.push_back(example.label);
      logits.push_back(example.logit);
    }
    if (chunk.size() >= kWriteChunkBytes || i + 1 == examples) {
      ok = std::fwrite(chunk.data(), 1, chunk.size(), file) == chunk.size();
      chunk.clear();
    }
  }
  ok = ok && std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
  ok = std::fclose(file) == 0 && ok;
  if (!ok) {
    absl::Status error = WriteError(temporary);
    std::remove(temporary.c_str());
    return error;
  }
  RETURN_IF_ERROR(env->Rename(temporary, path));
  CtrSplitSummary summary;
  summary.examples = examples;
  summary.positive_rate = examples > 0 ? positives / static_cast<double>(examples) : 0.0;
  summary.bayes_logloss = examples > 0 ? loss_sum / static_cast<double>(examples) : 0.0;
  summary.bayes_auc = keep_probabilities ? ExactAuc(labels, logits) : std::numeric_limits<double>::quiet_NaN();
  return summary;
}

nlohmann::json SplitJson(const CtrSplitSummary& s, bool with_auc) {
  nlohmann::json out = {
      {"examples", s.examples}, {"positive_rate", s.positive_rate}, {"bayes_logloss", s.bayes_logloss}};
  if (with_auc) out["bayes_auc"] = s.bayes_auc;
  return out;
}

absl::StatusOr<CtrSplitSummary> SplitFromJson(const nlohmann::json& root, const std::string& key,
                                              const std::string& path) {
  if (!root.contains(key) || !root[key].is_object()) {
    return absl::DataLossError(absl::StrCat(path, " has no \"", key, "\" object; regenerate the set"));
  }
  const nlohmann::json& j = root[key];
  CtrSplitSummary s;
  const std::string where = absl::StrCat(path, ": ", key);
  ASSIGN_OR_RETURN(s.examples, OptionalInt(j, "examples", 0, where + ".examples"));
  ASSIGN_OR_RETURN(s.positive_rate, OptionalNumber(j, "positive_rate", 0.0, where + ".positive_rate"));
  ASSIGN_OR_RETURN(s.bayes_logloss, OptionalNumber(j, "bayes_logloss", 0.0, where + ".bayes_logloss"));
  ASSIGN_OR_RETURN(s.bayes_auc,
                   OptionalNumber(j, "bayes_auc", std::numeric_limits<double>::quiet_NaN(), where + ".bayes_auc"));
  return s;
}

}  // namespace

absl::StatusOr<CtrSyntheticSummary> WriteCtrSyntheticSet(Env* env, const CtrSyntheticOptions& options,
                                                         const std::string& dir) {
  RETURN_IF_ERROR(ValidateCtrSyntheticOptions(options));
  RETURN_IF_ERROR(env->CreateDirs(dir));
  CtrSyntheticSummary summary;
  summary.train_path = absl::StrCat(dir, "/", kCtrTrainFile);
  summary.test_path = absl::StrCat(dir, "/", kCtrTestFile);
  summary.bayes_path = absl::StrCat(dir, "/", kCtrBayesFile);
  RETURN_IF_ERROR(env->RemoveAll(summary.bayes_path));
  const CtrPlantedModel model(options);
  ASSIGN_OR_RETURN(summary.train, WriteSplit(env, model, CtrSplit::kTrain, options.train_examples, summary.train_path));
  ASSIGN_OR_RETURN(summary.test, WriteSplit(env, model, CtrSplit::kTest, options.test_examples, summary.test_path));
  const nlohmann::json bayes = {{"generator", "pstrain datagen ctr"},
                                {"format", "criteo-tsv"},
                                {"seed", options.seed},
                                {"train_examples", options.train_examples},
                                {"test_examples", options.test_examples},
                                {"files", {{"train", kCtrTrainFile}, {"test", kCtrTestFile}}},
                                {"model", model.Describe()},
                                {"train", SplitJson(summary.train, false)},
                                {"test", SplitJson(summary.test, true)}};
  RETURN_IF_ERROR(env->WriteFileAtomic(summary.bayes_path, DumpJson(bayes, 2) + "\n"));
  return summary;
}

absl::StatusOr<CtrSyntheticSummary> ReadCtrSyntheticSummary(Env* env, const std::string& dir) {
  CtrSyntheticSummary summary;
  summary.train_path = absl::StrCat(dir, "/", kCtrTrainFile);
  summary.test_path = absl::StrCat(dir, "/", kCtrTestFile);
  summary.bayes_path = absl::StrCat(dir, "/", kCtrBayesFile);
  ASSIGN_OR_RETURN(std::string text, env->ReadFile(summary.bayes_path));
  absl::StatusOr<nlohmann::json> root = ParseJson(text, summary.bayes_path);
  if (!root.ok()) return absl::DataLossError(root.status().message());
  if (!root->is_object()) return absl::DataLossError(absl::StrCat(summary.bayes_path, " is not a JSON object"));
  ASSIGN_OR_RETURN(summary.train, SplitFromJson(*root, "train", summary.bayes_path));
  ASSIGN_OR_RETURN(summary.test, SplitFromJson(*root, "test", summary.bayes_path));
  return summary;
}

}  // namespace pstrain
