// Coordinator: the chief's logic, over PsClient and WorkerClient interfaces (no gRPC here).
// Run() waits for the cluster, plans the variables, creates them on the ps tasks (or restores the
// newest complete checkpoint of the model dir), configures the workers, then schedules closures of
// k steps until the budget is spent, evaluating and checkpointing on the job's schedule and at the
// end. Async mode: each worker takes closures on its own; sync mode: every round of k steps goes to
// ALL workers at once (the ps apply the mean once per step). The chief decides which data part
// and batch position every closure trains (DataPositions, saved with each checkpoint). A lost or
// silent worker's closure goes to another worker with the same data (sync mode: beside that
// worker's own closure of the round, so every update stays the exact global-batch update) and the
// worker is polled until it comes back. A lost ps (a worker's closure failed on it, or it missed
// the health watch's deadline: gone, hung, cut off) pauses the queue while HandleLostPs waits for
// it at its address (bounded by ps_recovery.timeout_ms): back with its shards -> nothing
// restored; restarted -> async: only its shards come back from the newest verified checkpoint (or
// the initializers), the other ps keep their newer state; sync: every ps rolls back to that
// checkpoint, and the step counter and the data positions follow. Each loss is logged, recorded in
// metrics.jsonl (kind "ps_recovery") and counted in Prometheus. A non-retryable error, or a ps
// that never answers again, stops the job with a message naming the cause.
// Thread-safety: Run() on one thread; RequestStop() and Status() from any thread.
#ifndef PSTRAIN_CHIEF_COORDINATOR_COORDINATOR_H_
#define PSTRAIN_CHIEF_COORDINATOR_COORDINATOR_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "chief/checkpoint/checkpoint_manager.h"
#include "chief/checkpoint/data_positions.h"
#include "chief/coordinator/closure_queue.h"
#include "chief/coordinator/cluster_waiter.h"
#include "chief/coordinator/progress_tracker.h"
#include "chief/coordinator/training_budget.h"
#include "chief/coordinator/worker_pool.h"
#include "chief/evaluation/evaluation.h"
#include "chief/records/chief_metrics.h"
#include "chief/records/metrics_writer.h"
#include "chief/records/run_events.h"
#include "chief/recovery/ps_health_watch.h"
#include "chief/recovery/ps_recovery.h"
#include "common/config/job_spec.h"
#include "common/graph/float_tensor.h"
#include "common/metrics/metrics_registry.h"
#include "common/plan/variable_planner.h"
#include "common/platform/env.h"
#include "nlohmann/json.hpp"
#include "proto/chief.pb.h"

namespace pstrain {

struct CoordinatorOptions {
  std::string model_dir;                 // "" = no checkpoints, no metrics file
  ClusterWaitOptions wait;
  WorkerPoolOptions pool;
  int64_t progress_interval_ms = 5000;   // between progress lines (and at least between records)
  // Training records (metrics.jsonl, TensorBoard, the metrics' gauges) are also taken every
  // 1/record_points of the run's steps, so even a short run draws a curve; the progress lines
  // stay every progress_interval_ms.
  int record_points = 40;
  int eval_shards_per_worker = 2;
  int64_t all_workers_lost_timeout_ms = 600000;  // fail when no worker answers for this long
  bool restore = true;                   // resume from the newest checkpoint in model_dir
  // Move an earlier run's checkpoints and metrics aside (model_dir/previous-run-<time>/) and start
  // from step 0. Without it, restore = false on a model dir an earlier run used is refused, so two
  // runs are never mixed.
  bool start_over = false;
  // Every task's budget (0: not checked): the plan's bytes on each ps (values and optimizer slots)
  // and a worker's (model, gradients, data, activations) are checked before anything is created.
  int64_t memory_budget_bytes = 0;
  // Create (or restore) the variables on the ps, save a checkpoint and stop: no worker is needed.
  // For inspecting initial weights and for re-partitioning a checkpoint.
  bool init_only = false;
  std::function<void(const std::string&)> log;  // progress and events, one line each (may be empty)
  // Where the chief's Prometheus metrics go (not owned; nullptr: a registry of the coordinator's
  // own that nobody serves).
  MetricsRegistry* metrics = nullptr;
  // A lost ps (chief/recovery/ps_recovery.h): how long it may take to answer again.
  PsRecoveryOptions ps_recovery;
  // How often every ps is handshaken through `ps_probes` (0: no health watch); a ps that misses a
  // probe's deadline is taken for lost, so that deadline decides when a hung ps counts as lost.
  int64_t ps_health_interval_ms = 2000;
  // ps_probes[i] reaches ps task i with a short deadline (not owned; empty: the ps clients, whose
  // deadline may be minutes).
  std::vector<PsClient*> ps_probes;
  // A checkpoint that cannot be written (a full disk, a ps that cannot write its shards) is
  // warned about, counted and tried again at the next interval; the job fails after this many
  // in a row (>= 1), or when the final checkpoint cannot be written.
  int max_checkpoint_failures = 3;
  // Starting values (--init_from) of every variable, by name, instead of the initializers (not
  // checked here: ReadInitialWeights checked them against the job's variables; nullptr: the
  // initializers). Used only when the model dir holds no checkpoint: a checkpoint wins, as
  // TensorFlow restores over initial values. They are written as the model dir's ckpt-0
  // (CheckpointManager::SaveValues), which every ps restores partitioned as the plan says, so a ps
  // lost before the next checkpoint comes back with them too. REQUIRES: a model_dir.
  std::shared_ptr<const FloatTensorMap> initial_values;
  // With initial_values, the dynamic tables' starting rows (chief/checkpoint/initial_dynamic_tables.h):
  // their files (name -> bytes) and the index entries listing them, written into ckpt-0 too.
  std::map<std::string, std::string> initial_dynamic_files;
  std::vector<SavedDynamicShard> initial_dynamic_shards;
};

struct JobSummary {
  std::string state;                     // "done", "stopped" (RequestStop) or "initialized"
  int64_t global_step = 0;
  int64_t total_steps = 0;
  int64_t start_step = 0;                // > 0 when resumed
  int64_t examples = 0;                  // trained in this run
  double seconds = 0.0;                  // the whole run, waiting and final evaluation included
  double train_seconds = 0.0;            // the training loop (inline evaluations included)
  double examples_per_second = 0.0;      // examples / train_seconds
  std::optional<EvalResult> final_eval;
  double final_train_auc = std::nan("");  // binary models: the last progress window's training AUC
  double bayes_test_auc = std::nan("");   // the default synthetic CTR set: the Bayes-optimal test AUC
  std::string checkpoint;                // newest checkpoint written ("" when none)
  std::string metrics_file;
  std::vector<std::string> lost_workers;
  nlohmann::json ToJson() const;
};

class Coordinator : public WorkerPoolSink {
 public:
  // Clients are not owned and must outlive the coordinator; ps_addresses[i] is where workers
  // reach ps task i.
  Coordinator(Env* env, JobSpec spec, std::vector<PsClient*> ps, std::vector<WorkerClient*> workers,
              std::vector<std::string> ps_addresses, CoordinatorOptions options);
  ~Coordinator() override;

  // The whole job. Errors: DeadlineExceeded (tasks never answered), InvalidArgument and other
  // non-retryable codes naming the task and the cause, Unavailable for a lost ps or every worker
  // lost.
  absl::StatusOr<JobSummary> Run();

  // Asks Run() to stop: in-flight closures finish, a checkpoint is written, Run() returns
  // state "stopped". Safe from a signal-watching thread.
  void RequestStop();

  // A snapshot for the status service.
  ChiefStatusResponse Status() const;

  // WorkerPoolSink.
  void OnTrainResult(int worker, const Closure& closure, const RunStepsResponse& response) override;
  void OnEvalResult(int worker, const Closure& closure, const EvaluateResponse& response) override;
  absl::Status OnWorkerLost(int worker, const absl::Status& cause) override;
  void OnWorkerBack(int worker) override;
  void OnPsTrouble(int ps, const absl::Status& cause) override;
  void AssignData(int worker, Closure* closure) override;

 private:
  absl::Status Prepare();
  // Starts over or refuses to mix runs in the model dir (see CoordinatorOptions::start_over).
  absl::Status PrepareModelDir();
  absl::Status CheckMemory(const VariablePlan& plan) const;
  absl::StatusOr<JobSummary> InitOnly();
  bool HasTestData() const;
  nlohmann::json PsStatsJson() const;  // the ps tasks' stats for the summary  // csv jobs without data.test_file cannot evaluate
  absl::Status CreateOrRestore();
  // Writes options_.initial_values as ckpt-0 of the model dir and returns it, to be restored.
  absl::StatusOr<FoundCheckpoint> InitialValuesCheckpoint();
  // Data positions from checkpoint `dir`, or derived from start_step_ (with a log line).
  void RestoreDataPositions(const std::string& dir);
  absl::Status ConfigureAll();
  ConfigureRequest MakeConfigure(int worker) const;
  absl::Status TrainLoop();
  // Trains until global step `stop_at`, or earlier when a stop or a timed checkpoint is due.
  absl::Status RunTrainingPhase(int64_t stop_at);
  // Pushes the next closures (async: any worker; sync: one round for all). Returns worker steps
  // pushed.
  int64_t Feed(int64_t worker_steps_left);
  // Waits for the queue to drain, reporting progress and watching for a job without workers.
  absl::Status WaitPhase();
  absl::Status CheckWorkersAlive();
  absl::StatusOr<EvalResult> Evaluate();
  // Saves a checkpoint of the current step; any failure is returned.
  absl::Status SaveCheckpoint();
  // The same, but a write that fails (after one more try when a ps was lost meanwhile) is put in
  // `write_error` and OK returned; what is returned is what ends the job anyway (a lost ps that
  // cannot be brought back).
  absl::Status SaveCheckpointOnce(absl::Status* write_error);
  // SaveCheckpoint during training: a failed write is warned about and counted, and fails the job
  // only as the `max_checkpoint_failures`-th in a row. `final` (the checkpoint at the end): any
  // failure fails the job, naming the newest checkpoint that was written.
  absl::Status SaveCheckpointTolerant(bool final);
  // Lost ps tasks (coordinator_ps_loss.cc). Probes every ps and hands each that does not answer
  // or lost its shards to HandleLostPs; OK when every ps serves again.
  absl::Status CheckPsAlive();
  // Brings every ps reported in trouble back (HandleLostPs), then resumes the queue. Called on
  // Run()'s thread between feeds and waits.
  absl::Status CheckPsTrouble();
  // The one place a lost ps is handled: a ps that answers with all its shards is kept as it is;
  // otherwise it is waited for and its shards put back (async: that ps's only; sync: every ps
  // rolls back), or, in a job with ps replicas, HandleLostReplicatedPs promotes its backups. A ps
  // already failed over is left to CheckReturnedPs.
  absl::Status HandleLostPs(int ps, const absl::Status& cause, int64_t lost_at_micros);
  // ps_replicas (coordinator_replicas.cc): the rest of HandleLostPs once `ps` was found lost
  // (`why`: what the probe found): promotes the backups of its shards and reroutes the workers
  // at once.
  absl::Status HandleLostReplicatedPs(int ps, const absl::Status& cause, const std::string& why,
                                      int64_t lost_at_micros);
  // ps_replicas: a ps failed over earlier that answers again (probed at most once a second) gets
  // empty backups, filled by their primaries (replica_failover.h Rejoin). OK while it stays away.
  absl::Status CheckReturnedPs();
  // Where lost shards come from: the newest verified checkpoint, or the initializers.
  absl::StatusOr<PsRestoreSource> RestoreSource(int ps);
  // Sync mode: every ps back to `from`, the step counter and the queue with them.
  absl::Status RollBackAll(const PsRestoreSource& from, int restored_ps);
  // Takes a training record when one is due (every record_every_steps_ global steps, or with a
  // progress line) and logs a progress line every progress_interval_ms; `force`: both now.
  void MaybeReport(bool force);
  // Global steps between evaluations: the schedule's eval_every_steps, or one epoch when the
  // schedule does not say (0: only the final evaluation).
  int64_t EvalEverySteps() const;
  // One record of the run: a line of metrics.jsonl and an event of the TensorBoard files.
  void Record(const nlohmann::json& record);
  void Log(const std::string& line) const;
  void SetState(const std::string& state);
  bool TimedCheckpointDue() const;

  Env* const env_;
  const JobSpec spec_;
  const std::string spec_json_;
  const std::vector<PsClient*> ps_;
  const std::vector<WorkerClient*> workers_;
  const std::vector<std::string> ps_addresses_;
  const CoordinatorOptions options_;
  const int num_workers_;

  TrainingBudget budget_;
  VariablePlanProto plan_;
  int64_t start_step_ = 0;
  int64_t next_closure_id_ = 1;
  int64_t start_micros_ = 0;
  int64_t last_report_micros_ = 0;     // the last progress line
  int64_t record_every_steps_ = 1;      // set in Prepare (see CoordinatorOptions::record_points)
  int64_t next_record_step_ = 0;
  int64_t train_start_micros_ = 0;
  double train_seconds_ = 0.0;
  int64_t last_checkpoint_micros_ = 0;
  int64_t last_checkpoint_step_ = -1;
  int checkpoint_failures_in_row_ = 0;
  int64_t all_lost_since_micros_ = 0;
  int64_t sync_next_step_ = 0;         // sync mode: global step of the next round   // 0 while some worker is alive
  std::atomic<bool> stop_requested_{false};

  ClosureQueue queue_;
  std::unique_ptr<ProgressTracker> tracker_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<CheckpointManager> checkpoints_;
  std::unique_ptr<DataPositions> data_;  // set in Prepare
  std::unique_ptr<MetricsWriter> metrics_;
  std::unique_ptr<RunEvents> events_;
  std::unique_ptr<MetricsRegistry> own_registry_;  // when options_.metrics is null
  std::unique_ptr<ChiefMetrics> gauges_;
  std::unique_ptr<PsRecovery> recovery_;
  std::unique_ptr<PsHealthWatch> ps_watch_;
  std::set<int> failed_over_;  // ps_replicas: lost ps tasks whose shards were promoted elsewhere
  int64_t last_return_probe_micros_ = 0;
  // Held to change plan_ (Run()'s thread) and to read it from other threads (MakeConfigure).
  mutable absl::Mutex plan_mu_;
  bool rolled_back_ = false;  // sync: the running phase ends, TrainLoop plans again from the step
  int64_t tracker_start_micros_ = 0;  // wall_time 0 of the records
  bool events_failed_ = false;

  mutable absl::Mutex mu_;
  std::string state_ ABSL_GUARDED_BY(mu_) = "waiting";
  std::string last_checkpoint_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> lost_workers_ ABSL_GUARDED_BY(mu_);
  EvalAccumulator* eval_ ABSL_GUARDED_BY(mu_) = nullptr;  // the evaluation in progress; not owned
  std::optional<EvalResult> last_eval_ ABSL_GUARDED_BY(mu_);
  bool ready_ ABSL_GUARDED_BY(mu_) = false;  // Prepare() set budget_, tracker_ and pool_
  struct PsTrouble {
    absl::Status cause;
    int64_t since_micros = 0;
  };
  mutable absl::Mutex trouble_mu_;
  std::map<int, PsTrouble> ps_trouble_ ABSL_GUARDED_BY(trouble_mu_);  // by ps index, first cause
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_COORDINATOR_COORDINATOR_H_
