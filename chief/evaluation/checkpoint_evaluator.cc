#include "chief/evaluation/checkpoint_evaluator.h"

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "chief/checkpoint/checkpoint_manager.h"
#include "chief/evaluation/saved_dynamic_table.h"
#include "common/config/json_util.h"
#include "common/metrics/binary_metrics.h"
#include "common/plan/model_variables.h"
#include "common/platform/status_macros.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/data/dataset.h"
#include "worker/data/shard_iterator.h"
#include "worker/exchange/table_rows.h"
#include "worker/step/ctr_evaluation.h"

namespace pstrain {

std::string DescribeData(const DataSpec& data, const std::string& data_dir) {
  if (data.dataset == "csv") return absl::StrCat("csv file ", data.test_file.empty() ? "(none)" : data.test_file);
  if (data.dataset == "fashion_mnist") return absl::StrCat("fashion_mnist in ", data_dir.empty() ? data.dir : data_dir);
  return absl::StrCat(data.dataset, " data");
}

absl::StatusOr<std::vector<Tensor>> LoadModelVariables(Env* env, const std::string& dir, const CheckpointIndex& index,
                                                       const ModelSpec& model, int64_t max_bytes) {
  ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(model));
  std::vector<Tensor> out;
  for (const VariableSpec& v : variables) {
    if (v.dynamic.has_value()) {  // no [rows, dim] tensor: SavedDynamicTable reads its files
      out.emplace_back();
      continue;
    }
    ASSIGN_OR_RETURN(Tensor t, ReadCheckpointRows(env, dir, index, v.name, 0, -1, "", max_bytes));
    if (t.shape() != v.shape && t.num_elements() == NumElements(v.shape)) t.Reshape(v.shape);
    if (t.shape() != v.shape) {
      return absl::InvalidArgumentError(absl::StrCat("variable ", v.name, " in ", dir, " has shape ",
                                                     ShapeString(t.shape()), " but the model needs ",
                                                     ShapeString(v.shape)));
    }
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<JobSpec> JobSpecOfCheckpoint(const CheckpointIndex& index) {
  ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(index.job_spec_json, "the checkpoint's job spec"));
  return JobSpecFromJson(doc);
}

absl::StatusOr<std::string> ResolveCheckpoint(Env* env, const std::string& path, std::vector<std::string>* warnings) {
  if (env->FileExists(path + "/index.json")) return path;
  CheckpointManager manager(env, path, 1, {});
  ASSIGN_OR_RETURN(std::optional<FoundCheckpoint> found, manager.FindLatest(warnings, /*remove_incomplete=*/false));
  if (!found.has_value()) {
    return absl::NotFoundError(absl::StrCat(path, " is neither a checkpoint (no index.json) nor a model dir with one"));
  }
  return found->dir;
}

absl::StatusOr<EvalResult> EvaluateCheckpoint(Env* env, const std::string& dir, const CheckpointEvalOptions& options) {
  ASSIGN_OR_RETURN(CheckpointIndex index, ReadCheckpointIndex(env, dir));
  ASSIGN_OR_RETURN(JobSpec job, JobSpecOfCheckpoint(index));
  ASSIGN_OR_RETURN(std::vector<Tensor> params, LoadModelVariables(env, dir, index, job.model, options.max_bytes));
  if (options.data.has_value()) job.data = *options.data;  // the user's data, never the checkpoint's
  ASSIGN_OR_RETURN(Dataset test, LoadDataset(env, job, Split::kTest, options.data_dir, options.max_bytes));
  ASSIGN_OR_RETURN(std::unique_ptr<GradientComputer> computer, NewCpuGradientComputer(job.model, options.threads));
  auto evaluate = [&computer](absl::Span<const Tensor> p, const Batch& batch, BatchMetrics* m) {
    return computer->Evaluate(p, batch, m);
  };
  BatchMetrics m;
  if (job.model.is_ctr()) {
    // The tables move out of `params` (which then holds each chunk's gathered rows).
    ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(job.model));
    std::vector<Tensor> tables(params.size());
    std::vector<std::pair<size_t, SavedDynamicTable>> dynamic;
    for (size_t i = 0; i < variables.size(); ++i) {
      if (variables[i].dynamic.has_value()) {
        ASSIGN_OR_RETURN(SavedDynamicTable table, SavedDynamicTable::Read(env, dir, variables[i], job.seed));
        dynamic.emplace_back(i, std::move(table));
      } else if (variables[i].sparse) {
        tables[i] = std::move(params[i]);
      }
    }
    ASSIGN_OR_RETURN(std::unique_ptr<IdDeduper> dedupe, IdDeduper::ForModel(job.model, variables));
    CtrEvalSteps steps;
    steps.fetch_rows = [&tables, &dynamic](const SparseLookup& lookup, std::vector<Tensor>* p) {
      GatherLookupRows(tables, lookup, p);
      for (const auto& [i, table] : dynamic) table.Lookup(lookup.unique_ids[i], &(*p)[i]);
      return absl::OkStatus();
    };
    steps.evaluate = evaluate;
    RETURN_IF_ERROR(EvaluateCtrRange(test, 0, test.size, steps, dedupe.get(), &params, &m));
  } else {
    Batch batch;
    for (int64_t begin = 0; begin < test.size; begin += options.batch_size) {
      FillRange(test, begin, std::min(test.size, begin + options.batch_size), &batch);
      RETURN_IF_ERROR(evaluate(params, batch, &m));
    }
  }
  if (m.examples == 0) return absl::FailedPreconditionError("the test set is empty");
  EvalResult r;
  r.step = index.global_step;
  r.examples = m.examples;
  r.loss = m.loss_sum / m.examples;
  const MetricsKind kind = MetricsKindOf(job.model);
  r.accuracy = kind == MetricsKind::kClassification ? static_cast<double>(m.correct) / m.examples : std::nan("");
  if (kind == MetricsKind::kBinary) r.auc = ExactAuc(m.labels, m.logits);
  return r;
}

}  // namespace pstrain
