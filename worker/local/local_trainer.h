// LocalTrainer: the whole job in one process with no cluster (`pstrain train`): the same initial
// weights as the cluster, the same model, data pipeline, loss scaling (per-example losses summed
// and divided by the GLOBAL batch) and optimizer, applied in place. Initialisation and the
// optimizer are injected so this unit shares them with the ps instead of copying them.
// Thread-safety: one Run at a time per object.
#ifndef PSTRAIN_WORKER_LOCAL_LOCAL_TRAINER_H_
#define PSTRAIN_WORKER_LOCAL_LOCAL_TRAINER_H_

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "common/tensor/tensor.h"
#include "worker/exchange/sparse_lookup.h"
#include "worker/step/divergence_check.h"
#include "worker/step/replica_set.h"

namespace pstrain {

class Env;
class ShardIterator;
class ThreadPool;
struct Dataset;

// Writes the initial value of `var` (full shape, already allocated) from the job seed.
using VariableInitializer = std::function<absl::Status(const VariableSpec& var, uint64_t seed, Tensor* value)>;

// Applies one optimizer update per step: params[i] -= f(grads[i], state).
class ParameterUpdater {
 public:
  virtual ~ParameterUpdater() = default;
  // Updates every dense variable and ends the step (counts it). Embedding tables
  // (VariableSpec::sparse) are skipped: grads[i] of a table is ignored; update it with ApplySparse.
  virtual absl::Status Apply(const std::vector<Tensor>& grads, std::vector<Tensor>* params) = 0;
  // Updates table `variable` (the whole [rows, dim] table, held in `table`) at the GLOBAL rows
  // `ids` with `grad_rows` ([ids.size(), dim]), with the ps's sparse-apply semantics: duplicate ids
  // summed first, untouched rows and their optimizer slots unchanged (optimizers that update every
  // row, such as adam, move them all as the ps does). Call it for each table of a step BEFORE the
  // step's Apply. InvalidArgument for an id outside the table, a shape mismatch or a dense variable.
  // Calls for DIFFERENT tables may run concurrently (they share no state); never with Apply.
  virtual absl::Status ApplySparse(int variable, absl::Span<const int64_t> ids, const Tensor& grad_rows,
                                   Tensor* table) {
    return absl::UnimplementedError("this updater has no sparse apply");
  }

  // Dynamic tables (VariableSpec::dynamic) live inside the updater, never as a [max_rows, dim]
  // tensor: each is the table one ps shard of one would hold (ps/store/dynamic_table.h), so its
  // rows, admission, TTL and cap follow the cluster's rules exactly.
  // LookupDynamic: rows ([keys.size(), dim], reallocated only when its shape changes) = the held
  // rows of `keys`, or their initial rows; stores nothing and counts nothing toward admission.
  // PushDynamic: applies `grad_rows` ([keys.size(), dim]) at `step` (the updates already applied,
  // as the ps is told), then drops rows past the TTL as the ps does after a push. Calls for
  // different tables may run concurrently; never with Apply. InvalidArgument for a variable that
  // is not a dynamic table or a shape mismatch.
  virtual absl::Status LookupDynamic(int variable, absl::Span<const int64_t> keys, Tensor* rows) const {
    return absl::UnimplementedError("this updater has no dynamic tables");
  }
  virtual absl::Status PushDynamic(int variable, absl::Span<const int64_t> keys, const Tensor& grad_rows,
                                   int64_t step) {
    return absl::UnimplementedError("this updater has no dynamic tables");
  }
  // The checkpoint bytes of dynamic table `variable` (EncodeDynamicTableState: what a ps holding
  // its only shard writes), and in `rows` (when not null) the rows they hold. InvalidArgument for a
  // variable that is not a dynamic table.
  virtual absl::StatusOr<std::string> SaveDynamic(int variable, int64_t* rows) const {
    return absl::UnimplementedError("this updater has no dynamic tables");
  }
  // Replaces dynamic table `variable`'s state by `bytes` (EncodeDynamicTableState, as SaveDynamic
  // writes and --init_from makes). InvalidArgument as above, or naming what does not fit.
  virtual absl::Status RestoreDynamic(int variable, const std::string& bytes) {
    return absl::UnimplementedError("this updater has no dynamic tables");
  }
  // The rows dynamic table `variable` holds now (cheap: no copy). InvalidArgument as above.
  virtual absl::StatusOr<int64_t> DynamicRows(int variable) const {
    return absl::UnimplementedError("this updater has no dynamic tables");
  }
};
// `seed`: the job seed, which the dynamic tables' initial rows are drawn from (as on the ps).
using UpdaterFactory = std::function<absl::StatusOr<std::unique_ptr<ParameterUpdater>>(
    const OptimizerSpec& optimizer, const std::vector<VariableSpec>& variables, uint64_t seed)>;

struct LocalTrainOptions {
  int threads = 1;
  int replicas = 1;
  std::string data_dir;  // overrides data.dir when non-empty
  int64_t epochs = 0;    // > 0 overrides the schedule
  int64_t steps = 0;     // > 0 overrides the schedule (takes precedence over epochs)
  bool evaluate = true;  // evaluate on the test set after each epoch
  // > 0: a report (and with `evaluate` a test pass) after every this many steps of an epoch as well
  // as at its end, so a curve shows how the model follows data that changes within an epoch.
  int64_t report_every_steps = 0;
  int64_t memory_budget_bytes = 0;  // most bytes a data file may fill (0: the host's default budget)
};

// One line of progress: an epoch, or with a step budget or LocalTrainOptions::report_every_steps
// a window of up to one epoch of steps; the train figures cover the window's steps only.
struct EpochReport {
  int64_t epoch = 0;
  int64_t steps = 0;  // global steps done so far
  double train_loss = 0, train_accuracy = 0;
  double test_loss = 0, test_accuracy = 0;  // NaN-free zeros when not evaluated
  // Binary (CTR) models, NaN otherwise: the training AUC (AucAverage over chunks of
  // steps_per_closure steps) and the exact AUC over the whole test set.
  double train_auc = std::nan(""), test_auc = std::nan("");
  double train_seconds = 0, eval_seconds = 0;
  double examples_per_second = 0;  // training examples over training time
  int64_t dynamic_rows = -1;        // rows held by all dynamic tables at the report; -1: none
};

// The metrics of one pass over the test set.
struct TestMetrics {
  int64_t examples = 0;
  double loss = 0;            // mean per-example loss (binary models: the log loss)
  double accuracy = 0;        // classification; binary: (logit > 0) == label
  double auc = std::nan("");  // binary models: exact over the whole set
};

class LocalTrainer {
 public:
  // Loads data (NotFound / DataLoss naming the file), builds the model and the optimizer. `env`
  // (not owned; REQUIRES: non-null) reads the data.
  static absl::StatusOr<std::unique_ptr<LocalTrainer>> Create(Env* env, const JobSpec& job,
                                                              const LocalTrainOptions& options,
                                                              const VariableInitializer& init,
                                                              const UpdaterFactory& updater,
                                                              const GradientComputerFactory& compute);
  ~LocalTrainer();

  int64_t steps_per_epoch() const;
  int64_t total_steps() const;

  // Trains to the end of the schedule, calling `on_epoch` after each epoch.
  absl::Status Run(const std::function<void(const EpochReport&)>& on_epoch);

  // Loss, accuracy and (binary models) AUC over the whole test set with the current parameters.
  absl::Status EvaluateTest(TestMetrics* metrics);

  // What loading the data noticed and a user should hear (bad lines skipped, with the first's error).
  const std::vector<std::string>& data_warnings() const { return data_warnings_; }

  // The model's variables in ModelVariables() order, tables whole (a copy); a dynamic table
  // (VariableSpec::dynamic), which has no whole tensor, is an empty Tensor (SaveDynamicTable).
  std::vector<Tensor> Variables() const;
  const std::vector<VariableSpec>& variable_specs() const { return variables_; }

  // Dynamic table `variable` (an index into variable_specs()) as the bytes a ps holding its only
  // shard writes to DynamicShardFileName(name, 0, 1), and in `rows` (when not null) the rows they
  // hold. InvalidArgument for another variable.
  absl::StatusOr<std::string> SaveDynamicTable(size_t variable, int64_t* rows = nullptr) const;
  // Starts dynamic table `variable` from `bytes` (ParameterUpdater::RestoreDynamic), e.g. the rows
  // --init_from read. InvalidArgument for another variable or bytes that do not fit the table.
  absl::Status RestoreDynamicTable(size_t variable, const std::string& bytes);
  // The rows all dynamic tables hold now; -1 when the model has none.
  absl::StatusOr<int64_t> DynamicRows() const;

 private:
  LocalTrainer() = default;
  // One training step on the next batch (CTR models: dedupe, gather, sparse and dense apply).
  absl::Status Step(int64_t step, float loss_scale, BatchMetrics* metrics);
  // CTR models: fn(i) for every table i, the tables spread over table_pool_'s threads; the first
  // error in table order.
  absl::Status ForEachTable(const std::function<absl::Status(size_t)>& fn);
  // rows = table i's rows of `ids`: gathered from tables_[i], or looked up in a dynamic table.
  absl::Status FetchRows(size_t i, absl::Span<const int64_t> ids, Tensor* rows) const;
  void NoteBadLines(const std::string& split, const Dataset& data);

  JobSpec job_;
  LossGrowthCheck loss_growth_{0};  // job_.divergence_loss_factor
  LocalTrainOptions options_;
  std::vector<VariableSpec> variables_;
  // params_: what a step computes with. Dense variables whole; CTR models' tables as the step's
  // gathered rows, the whole tables living in tables_ (empty tensors for dense variables and for
  // dynamic tables, which the updater holds).
  std::vector<Tensor> params_, grads_, tables_;
  std::unique_ptr<IdDeduper> dedupe_;       // CTR models
  std::vector<size_t> table_indices_;       // CTR models: the tables' variable indices
  std::unique_ptr<ThreadPool> table_pool_;  // CTR models: gathers and sparse applies per table
  std::vector<std::string> data_warnings_;
  SparseLookup lookup_;
  Batch batch_;
  std::unique_ptr<ParameterUpdater> updater_;
  std::unique_ptr<ReplicaSet> replicas_;
  std::unique_ptr<ShardIterator> train_;
  std::shared_ptr<const Dataset> test_;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_LOCAL_LOCAL_TRAINER_H_
