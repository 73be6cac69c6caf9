#include "chief/checkpoint_evaluator.h"

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/json_util.h"
#include "common/model_variables.h"
#include "common/status_macros.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/data/dataset.h"
#include "worker/data/shard_iterator.h"

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

absl::StatusOr<EvalResult> EvaluateCheckpoint(Env* env, const std::string& dir, const CheckpointEvalOptions& options) {
  ASSIGN_OR_RETURN(CheckpointIndex index, ReadCheckpointIndex(env, dir));
  ASSIGN_OR_RETURN(JobSpec job, JobSpecOfCheckpoint(index));
  ASSIGN_OR_RETURN(std::vector<Tensor> params, LoadModelVariables(env, dir, index, job.model, options.max_bytes));
  if (options.data.has_value()) job.data = *options.data;  // the user's data, never the checkpoint's
  ASSIGN_OR_RETURN(Dataset test, LoadDataset(job, Split::kTest, options.data_dir));
  ASSIGN_OR_RETURN(std::unique_ptr<GradientComputer> computer, NewCpuGradientComputer(job.model, options.threads));
  EvalResult r;
  r.step = index.global_step;
  double loss_sum = 0.0;
  int64_t correct = 0;
  Batch batch;
  for (int64_t begin = 0; begin < test.size; begin += options.batch_size) {
    const int64_t end = std::min(test.size, begin + options.batch_size);
    FillRange(test, begin, end, &batch);
    BatchMetrics m;
    RETURN_IF_ERROR(computer->Evaluate(params, batch, &m));
    r.examples += m.examples;
    loss_sum += m.loss_sum;
    correct += m.correct;
  }
  if (r.examples == 0) return absl::FailedPreconditionError("the test set is empty");
  r.loss = loss_sum / r.examples;
  r.accuracy = job.model.loss == "mse" ? std::nan("") : static_cast<double>(correct) / r.examples;
  return r;
}

}  // namespace pstrain
