#include "worker/local/local_trainer.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/metrics/auc_average.h"
#include "common/metrics/binary_metrics.h"
#include "common/platform/status_macros.h"
#include "worker/cpu/thread_pool.h"
#include "worker/data/dataset.h"
#include "worker/data/shard_iterator.h"
#include "worker/exchange/table_rows.h"
#include "worker/step/ctr_evaluation.h"
#include "worker/step/divergence_check.h"
#include "worker/step/worker.h"

namespace pstrain {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

LocalTrainer::~LocalTrainer() = default;

absl::StatusOr<std::unique_ptr<LocalTrainer>> LocalTrainer::Create(Env* env, const JobSpec& job,
                                                                   const LocalTrainOptions& options,
                                                                   const VariableInitializer& init,
                                                                   const UpdaterFactory& updater,
                                                                   const GradientComputerFactory& compute) {
  std::unique_ptr<LocalTrainer> t(new LocalTrainer());
  t->job_ = job;
  t->loss_growth_ = LossGrowthCheck(job.divergence_loss_factor);
  t->options_ = options;
  ASSIGN_OR_RETURN(t->variables_, ModelVariables(job.model));
  t->tables_.resize(t->variables_.size());
  for (size_t i = 0; i < t->variables_.size(); ++i) {
    const VariableSpec& v = t->variables_[i];
    t->params_.emplace_back();
    if (v.dynamic.has_value()) continue;  // held by the updater, never as [max_rows, dim]
    Tensor value(DType::kFloat32, v.shape);
    RETURN_IF_ERROR(init(v, job.seed, &value));
    (v.sparse ? t->tables_[i] : t->params_[i]) = std::move(value);
  }
  if (job.model.is_ctr()) {
    ASSIGN_OR_RETURN(t->dedupe_, IdDeduper::ForModel(job.model, t->variables_));
    for (size_t i = 0; i < t->variables_.size(); ++i) {
      if (t->variables_[i].sparse) t->table_indices_.push_back(i);
    }
    // A step's gathers and sparse applies are one independent piece of work per table: spread over
    // the compute threads, they do not leave all but one thread idle between the steps' GEMMs.
    t->table_pool_ = std::make_unique<ThreadPool>(static_cast<int>(
        std::max<size_t>(1, std::min<size_t>(std::max(options.threads, 1), t->table_indices_.size()))));
  }
  ASSIGN_OR_RETURN(t->updater_, updater(job.optimizer, t->variables_, job.seed));
  ASSIGN_OR_RETURN(t->replicas_, ReplicaSet::Create(job.model, options.replicas, options.threads, compute));
  ASSIGN_OR_RETURN(Dataset train, LoadDataset(env, job, Split::kTrain, options.data_dir, options.memory_budget_bytes));
  t->NoteBadLines("training", train);
  if (options.evaluate) {
    ASSIGN_OR_RETURN(Dataset test, LoadDataset(env, job, Split::kTest, options.data_dir, options.memory_budget_bytes));
    t->NoteBadLines("test", test);
    t->test_ = std::make_shared<const Dataset>(std::move(test));
  }
  // One "worker" of one: the same shard and shuffle order as worker 0 of a 1-worker cluster.
  t->train_ =
      std::make_unique<ShardIterator>(std::make_shared<const Dataset>(std::move(train)), 0, 1, TrainShuffleSeed(job));
  return t;
}

void LocalTrainer::NoteBadLines(const std::string& split, const Dataset& data) {
  if (data.bad_lines_skipped == 0) return;
  data_warnings_.push_back(absl::StrCat("skipped ", data.bad_lines_skipped, " bad lines of the ", split,
                                        " data (data.skip_bad_lines); the first: ", data.first_bad_line));
}

int64_t LocalTrainer::steps_per_epoch() const { return train_->BatchesPerEpoch(job_.batch_size); }

int64_t LocalTrainer::total_steps() const {
  if (options_.steps > 0) return options_.steps;
  if (options_.epochs > 0) return options_.epochs * steps_per_epoch();
  if (job_.schedule.steps > 0) return job_.schedule.steps;
  return job_.schedule.epochs * steps_per_epoch();
}

absl::StatusOr<std::string> LocalTrainer::SaveDynamicTable(size_t variable, int64_t* rows) const {
  if (variable >= variables_.size() || !variables_[variable].dynamic.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("variable ", variable, " is not a dynamic table"));
  }
  return updater_->SaveDynamic(static_cast<int>(variable), rows);
}

absl::Status LocalTrainer::FetchRows(size_t i, absl::Span<const int64_t> ids, Tensor* rows) const {
  if (variables_[i].dynamic.has_value()) return updater_->LookupDynamic(static_cast<int>(i), ids, rows);
  GatherRows(tables_[i], ids, rows);
  return absl::OkStatus();
}

std::vector<Tensor> LocalTrainer::Variables() const {
  std::vector<Tensor> out;
  for (size_t i = 0; i < variables_.size(); ++i) out.push_back(variables_[i].sparse ? tables_[i] : params_[i]);
  return out;
}

absl::Status LocalTrainer::EvaluateTest(TestMetrics* out) {
  BatchMetrics m;
  auto evaluate = [this](absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics) {
    return replicas_->Evaluate(params, batch, metrics);
  };
  if (dedupe_ != nullptr) {
    CtrEvalSteps steps;
    steps.fetch_rows = [this](const SparseLookup& lookup, std::vector<Tensor>* params) {
      for (size_t i : table_indices_) RETURN_IF_ERROR(FetchRows(i, lookup.unique_ids[i], &(*params)[i]));
      return absl::OkStatus();
    };
    steps.evaluate = evaluate;
    RETURN_IF_ERROR(EvaluateCtrRange(*test_, 0, test_->size, steps, dedupe_.get(), &params_, &m));
  } else {
    constexpr int64_t kEvalBatch = 256;  // keeps activations cache-sized
    for (int64_t b = 0; b < test_->size; b += kEvalBatch) {
      FillRange(*test_, b, std::min(test_->size, b + kEvalBatch), &batch_);
      RETURN_IF_ERROR(evaluate(params_, batch_, &m));
    }
  }
  out->examples = m.examples;
  out->loss = m.examples > 0 ? m.loss_sum / m.examples : 0;
  out->accuracy = m.examples > 0 ? static_cast<double>(m.correct) / m.examples : 0;
  out->auc = m.logits.empty() ? std::nan("") : ExactAuc(m.labels, m.logits);
  return absl::OkStatus();
}

absl::Status LocalTrainer::ForEachTable(const std::function<absl::Status(size_t)>& fn) {
  const int threads = table_pool_->size();
  std::vector<absl::Status> status(table_indices_.size());
  table_pool_->Run(threads, [&](int t) {
    for (size_t k = static_cast<size_t>(t); k < table_indices_.size(); k += threads) status[k] = fn(table_indices_[k]);
  });
  for (const absl::Status& s : status) RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

absl::Status LocalTrainer::Step(int64_t step, float loss_scale, BatchMetrics* metrics) {
  train_->Next(job_.batch_size, &batch_);
  if (dedupe_ != nullptr) {
    RETURN_IF_ERROR(dedupe_->Build(&batch_, &lookup_));
    RETURN_IF_ERROR(ForEachTable([this](size_t i) { return FetchRows(i, lookup_.unique_ids[i], &params_[i]); }));
  }
  const double loss_before = metrics->loss_sum;
  const int64_t examples_before = metrics->examples;
  RETURN_IF_ERROR(replicas_->Compute(params_, batch_, loss_scale, &grads_, metrics));
  const std::string at = absl::StrCat("step ", step + 1);
  const bool check = job_.terminate_on_nan;
  const double loss = (metrics->loss_sum - loss_before) / std::max<int64_t>(1, metrics->examples - examples_before);
  RETURN_IF_ERROR(loss_growth_.Observe(at, loss));
  if (check) RETURN_IF_ERROR(CheckStepFinite(at, loss, variables_, grads_));
  if (dedupe_ != nullptr) {
    RETURN_IF_ERROR(ForEachTable([this, check, step](size_t i) {
      if (variables_[i].dynamic.has_value()) {
        // The push's step is the updates applied so far, as a worker tells the ps.
        RETURN_IF_ERROR(updater_->PushDynamic(static_cast<int>(i), lookup_.unique_ids[i], grads_[i], step));
      } else {
        RETURN_IF_ERROR(updater_->ApplySparse(static_cast<int>(i), lookup_.unique_ids[i], grads_[i], &tables_[i]));
      }
      // The updated rows, for the check below: a step changes no other row of a table.
      if (check) return FetchRows(i, lookup_.unique_ids[i], &params_[i]);
      return absl::OkStatus();
    }));
  }
  RETURN_IF_ERROR(updater_->Apply(grads_, &params_));
  if (check) RETURN_IF_ERROR(CheckVariablesFinite(at, "after the step's update", variables_, params_));
  return absl::OkStatus();
}

absl::Status LocalTrainer::Run(const std::function<void(const EpochReport&)>& on_epoch) {
  const int64_t total = total_steps(), per_epoch = steps_per_epoch();
  const float loss_scale = 1.f / static_cast<float>(job_.batch_size);
  const int64_t auc_chunk = std::max<int64_t>(1, job_.schedule.steps_per_closure);
  const int64_t window = options_.report_every_steps > 0 ? options_.report_every_steps : per_epoch;
  int64_t step = 0;
  for (int64_t epoch = 1; step < total; ++epoch) {
    for (int64_t k = 0; k < per_epoch && step < total;) {
      const int64_t window_end = std::min(per_epoch, k + window);  // this report's steps: [k, window_end)
      EpochReport report;
      report.epoch = epoch;
      BatchMetrics m, chunk;
      AucAverage train_auc;
      const auto start = std::chrono::steady_clock::now();
      for (int64_t c = 0; k < window_end && step < total; ++k, ++step, ++c) {
        RETURN_IF_ERROR(Step(step, loss_scale, &chunk));
        if (chunk.logits.empty() || (c + 1) % auc_chunk == 0 || k + 1 == window_end || step + 1 == total) {
          if (!chunk.logits.empty()) train_auc.Add(ExactAuc(chunk.labels, chunk.logits), chunk.examples);
          chunk.logits.clear();
          chunk.labels.clear();
          AddBatchMetrics(chunk, &m);
          chunk = BatchMetrics{};
        }
      }
      AddBatchMetrics(chunk, &m);
      report.train_seconds = Seconds(start);
      report.steps = step;
      report.train_loss = m.examples > 0 ? m.loss_sum / m.examples : 0;
      report.train_accuracy = m.examples > 0 ? static_cast<double>(m.correct) / m.examples : 0;
      report.train_auc = train_auc.Mean();
      report.examples_per_second = report.train_seconds > 0 ? m.examples / report.train_seconds : 0;
      ASSIGN_OR_RETURN(report.dynamic_rows, DynamicRows());
      if (options_.evaluate) {
        const auto eval_start = std::chrono::steady_clock::now();
        TestMetrics test;
        RETURN_IF_ERROR(EvaluateTest(&test));
        report.test_loss = test.loss;
        report.test_accuracy = test.accuracy;
        report.test_auc = test.auc;
        report.eval_seconds = Seconds(eval_start);
      }
      on_epoch(report);
    }
  }
  return absl::OkStatus();
}

absl::Status LocalTrainer::RestoreDynamicTable(size_t variable, const std::string& bytes) {
  if (variable >= variables_.size() || !variables_[variable].dynamic.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("variable ", variable, " is not a dynamic table"));
  }
  return updater_->RestoreDynamic(static_cast<int>(variable), bytes);
}

absl::StatusOr<int64_t> LocalTrainer::DynamicRows() const {
  int64_t rows = -1;
  for (size_t i = 0; i < variables_.size(); ++i) {
    if (!variables_[i].dynamic.has_value()) continue;
    ASSIGN_OR_RETURN(int64_t held, updater_->DynamicRows(static_cast<int>(i)));
    rows = std::max<int64_t>(rows, 0) + held;
  }
  return rows;
}

}  // namespace pstrain
