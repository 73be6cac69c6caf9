#include "worker/local_trainer.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/data/dataset.h"
#include "worker/data/shard_iterator.h"
#include "worker/divergence_check.h"
#include "worker/worker.h"

namespace pstrain {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

LocalTrainer::~LocalTrainer() = default;

absl::StatusOr<std::unique_ptr<LocalTrainer>> LocalTrainer::Create(const JobSpec& job,
                                                                   const LocalTrainOptions& options,
                                                                   const VariableInitializer& init,
                                                                   const UpdaterFactory& updater,
                                                                   const GradientComputerFactory& compute) {
  std::unique_ptr<LocalTrainer> t(new LocalTrainer());
  t->job_ = job;
  t->options_ = options;
  ASSIGN_OR_RETURN(t->variables_, ModelVariables(job.model));
  for (const VariableSpec& v : t->variables_) {
    t->params_.emplace_back(DType::kFloat32, v.shape);
    RETURN_IF_ERROR(init(v, job.seed, &t->params_.back()));
  }
  ASSIGN_OR_RETURN(t->updater_, updater(job.optimizer, t->variables_));
  ASSIGN_OR_RETURN(t->replicas_, ReplicaSet::Create(job.model, options.replicas, options.threads, compute));
  ASSIGN_OR_RETURN(Dataset train, LoadDataset(job, Split::kTrain, options.data_dir));
  if (options.evaluate) {
    ASSIGN_OR_RETURN(Dataset test, LoadDataset(job, Split::kTest, options.data_dir));
    t->test_ = std::make_shared<const Dataset>(std::move(test));
  }
  // One "worker" of one: the same shard and shuffle order as worker 0 of a 1-worker cluster.
  t->train_ = std::make_unique<ShardIterator>(std::make_shared<const Dataset>(std::move(train)), 0, 1,
                                              TrainShuffleSeed(job));
  return t;
}

int64_t LocalTrainer::steps_per_epoch() const { return train_->BatchesPerEpoch(job_.batch_size); }

int64_t LocalTrainer::total_steps() const {
  if (options_.steps > 0) return options_.steps;
  if (options_.epochs > 0) return options_.epochs * steps_per_epoch();
  if (job_.schedule.steps > 0) return job_.schedule.steps;
  return job_.schedule.epochs * steps_per_epoch();
}

absl::Status LocalTrainer::EvaluateTest(double* loss, double* accuracy) {
  constexpr int64_t kEvalBatch = 256;  // keeps activations cache-sized
  BatchMetrics m;
  Batch batch;
  for (int64_t b = 0; b < test_->size; b += kEvalBatch) {
    FillRange(*test_, b, std::min(test_->size, b + kEvalBatch), &batch);
    RETURN_IF_ERROR(replicas_->Evaluate(params_, batch, &m));
  }
  *loss = m.examples > 0 ? m.loss_sum / m.examples : 0;
  *accuracy = m.examples > 0 ? static_cast<double>(m.correct) / m.examples : 0;
  return absl::OkStatus();
}

absl::Status LocalTrainer::Run(const std::function<void(const EpochReport&)>& on_epoch) {
  const int64_t total = total_steps(), per_epoch = steps_per_epoch();
  const float loss_scale = 1.f / static_cast<float>(job_.batch_size);
  Batch batch;
  int64_t step = 0;
  for (int64_t epoch = 1; step < total; ++epoch) {
    EpochReport report;
    report.epoch = epoch;
    BatchMetrics m;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t k = 0; k < per_epoch && step < total; ++k, ++step) {
      train_->Next(job_.batch_size, &batch);
      const double loss_before = m.loss_sum;
      const int64_t examples_before = m.examples;
      RETURN_IF_ERROR(replicas_->Compute(params_, batch, loss_scale, &grads_, &m));
      const std::string at = absl::StrCat("step ", step + 1);
      if (job_.terminate_on_nan) {
        const double loss = (m.loss_sum - loss_before) / std::max<int64_t>(1, m.examples - examples_before);
        RETURN_IF_ERROR(CheckStepFinite(at, loss, variables_, grads_));
      }
      RETURN_IF_ERROR(updater_->Apply(grads_, &params_));
      if (job_.terminate_on_nan) {
        RETURN_IF_ERROR(CheckVariablesFinite(at, "after the step's update", variables_, params_));
      }
    }
    report.train_seconds = Seconds(start);
    report.steps = step;
    report.train_loss = m.examples > 0 ? m.loss_sum / m.examples : 0;
    report.train_accuracy = m.examples > 0 ? static_cast<double>(m.correct) / m.examples : 0;
    report.examples_per_second = report.train_seconds > 0 ? m.examples / report.train_seconds : 0;
    if (options_.evaluate) {
      const auto eval_start = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(EvaluateTest(&report.test_loss, &report.test_accuracy));
      report.eval_seconds = Seconds(eval_start);
    }
    on_epoch(report);
  }
  return absl::OkStatus();
}

}  // namespace pstrain
