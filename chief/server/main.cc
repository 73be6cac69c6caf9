// pstrain-chief: the coordinator of a training cluster (TF_CONFIG task type "chief"), or, with task
// type "evaluator", the sidecar that evaluates each new checkpoint of the model dir. Flags are
// parsed here only (the ones every task takes in common/config/task_bootstrap.cc) and passed down as
// a config struct.
#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "chief/checkpoint/initial_dynamic_tables.h"
#include "chief/server/chief_runner.h"
#include "chief/server/evaluator_runner.h"
#include "common/config/cluster_spec.h"
#include "common/config/job_spec.h"
#include "common/config/task_bootstrap.h"
#include "common/config/task_flags.h"
#include "common/config/value_range.h"
#include "common/graph/initial_weights.h"
#include "common/metrics/metrics_endpoint.h"
#include "common/metrics/process_metrics.h"
#include "common/plan/memory_budget.h"
#include "common/platform/cpu_level.h"
#include "common/platform/exit_codes.h"
#include "common/platform/resource_errors.h"
#include "common/platform/status_macros.h"
#include "common/security/tls_config.h"

ABSL_FLAG(std::string, job, "cnn", "job spec: a preset (linear, mlp, cnn, ctr) or a JSON file");
ABSL_FLAG(std::string, model_dir, "",
          "directory for checkpoints, metrics.jsonl and summary.json (required, unless --ephemeral)");
ABSL_FLAG(bool, ephemeral, false, "train without a model dir: no checkpoint, no metrics file, nothing is kept");
ABSL_FLAG(bool, start_over, false,
          "move an earlier run's checkpoints and metrics in --model_dir aside (into previous-run-<time>/) and train "
          "from step 0");
ABSL_FLAG(bool, terminate_on_nan, true,
          "stop the job when a loss, gradient or variable turns NaN/Inf, naming the step and the variable "
          "(overrides the job's terminate_on_nan)");
ABSL_FLAG(double, divergence_loss_factor, -1,
          "stop the job as diverged when a step's training loss passes this many times the lowest loss of the first "
          "10 steps (at least 1); 0 turns the rule off (overrides the job's divergence_loss_factor, default 1000)");
ABSL_FLAG(int64_t, memory_budget_bytes, 0,
          "memory each task may use: the plan's bytes on every ps and worker are checked against it before "
          "anything starts (default 0: half of this host's memory)");
ABSL_FLAG(int64_t, epochs, 0, "train this many epochs (overrides the job's schedule; positive)");
ABSL_FLAG(int64_t, steps, 0, "train this many global steps (overrides the job's schedule; positive)");
ABSL_FLAG(int64_t, steps_per_closure, 0, "worker steps per scheduled closure (overrides the job's; positive)");
ABSL_FLAG(std::string, mode, "", "async or sync (overrides the job's)");
ABSL_FLAG(int64_t, ps_replicas, -1, "backups per shard, 0 or 1 (overrides the job's ps_replicas)");
ABSL_FLAG(int64_t, eval_every_steps, 0, "evaluate every N global steps (overrides the job's; 0 = only at the end; default: after every epoch)");
ABSL_FLAG(int64_t, checkpoint_every_steps, 0, "checkpoint every N global steps (overrides the job's)");
ABSL_FLAG(int64_t, checkpoint_every_secs, 0, "checkpoint every N seconds (overrides the job's)");
ABSL_FLAG(int64_t, wait_timeout_secs, 120, "how long to wait for every ps and worker to answer at start");
ABSL_FLAG(int64_t, progress_secs, 5, "seconds between progress lines");
ABSL_FLAG(int64_t, closure_timeout_secs, 600, "a worker that does not finish a closure in time is lost");
ABSL_FLAG(int64_t, worker_silence_timeout_secs, 30,
          "a worker running a closure that answers no Handshake for this long (stopped, hung, unreachable) is lost: "
          "its closure is re-run on another worker, and it is taken back when it answers again");
ABSL_FLAG(int64_t, poll_secs, 1, "how often a lost worker is polled");
ABSL_FLAG(int64_t, all_workers_lost_timeout_secs, 600, "fail when no worker answers for this long");
ABSL_FLAG(int64_t, ps_recovery_timeout_secs, 300,
          "how long a lost ps may take to answer again at its address before the job fails");
ABSL_FLAG(int64_t, ps_health_deadline_secs, 15,
          "a ps that does not answer the chief's health check within this long is taken for lost (a hung ps)");
ABSL_FLAG(int64_t, max_checkpoint_failures, 3,
          "fail the job after this many checkpoints in a row could not be written (a failed one is warned about "
          "and tried again at the next interval; a failed final checkpoint always fails the job)");
ABSL_FLAG(bool, restore, true,
          "resume from the newest checkpoint in --model_dir (false is refused when an earlier run is there: use "
          "--start_over)");
ABSL_FLAG(bool, init_only, false,
          "create (or restore) the variables on the ps, save a checkpoint in --model_dir and stop (no workers "
          "needed): for inspecting initial weights or re-partitioning a checkpoint");
ABSL_FLAG(std::string, data_dir, "",
          "data directory (overrides the job's data.dir; criteo: the cache of the default synthetic set)");
ABSL_FLAG(std::string, model_json, "",
          "a Keras model's to_json() file: replaces the job's model, keeping its loss and data");
ABSL_FLAG(std::string, init_from, "",
          "Keras weights (.weights.h5 of Keras 3, or Keras 2's .h5) of the job's Keras model: every variable starts "
          "from them (written as ckpt-0 of --model_dir, which the ps restore); a checkpoint in --model_dir wins");
ABSL_FLAG(std::string, train_files, "",
          "criteo and tfrecord jobs: comma-separated training files or globs (overrides data.train_files)");
ABSL_FLAG(std::string, test_files, "", "criteo and tfrecord jobs: comma-separated test files or globs (overrides data.test_files)");
ABSL_FLAG(int64_t, eval_poll_secs, 2, "evaluator: how often to look for a new checkpoint");

namespace pstrain {
namespace {

std::set<std::string>* given_flags = new std::set<std::string>;  // filled by main before anything reads it

// True when the user gave --name (a default never overrides the job).
template <typename T>
bool Given(const absl::Flag<T>& flag) {
  return given_flags->count(std::string(absl::GetFlagReflectionHandle(flag).Name())) > 0;
}

// The flag's value when given, after a range check naming the flag.
template <typename T>
absl::Status Override(const absl::Flag<T>& flag, const IntRange& range, int64_t* field) {
  if (!Given(flag)) return absl::OkStatus();
  const int64_t v = absl::GetFlag(flag);
  RETURN_IF_ERROR(CheckInRange(v, range, absl::StrCat("--", absl::GetFlagReflectionHandle(flag).Name())));
  *field = v;
  return absl::OkStatus();
}

absl::StatusOr<JobSpec> JobFromFlags() {
  ASSIGN_OR_RETURN(JobSpec job, LoadJobSpec(absl::GetFlag(FLAGS_job)));
  RETURN_IF_ERROR(OverrideModelJson(absl::GetFlag(FLAGS_model_json), "--model_json", &job));
  ScheduleSpec& s = job.schedule;
  const IntRange count = IntBetween(0, kMaxDimension);
  if (Given(FLAGS_epochs) && Given(FLAGS_steps))
    return absl::InvalidArgumentError("give --epochs or --steps, not both");
  RETURN_IF_ERROR(Override(FLAGS_epochs, DimensionRange(), &s.epochs));
  if (Given(FLAGS_epochs)) s.steps = 0;
  RETURN_IF_ERROR(Override(FLAGS_steps, DimensionRange(), &s.steps));
  if (Given(FLAGS_steps)) s.epochs = 0;
  RETURN_IF_ERROR(Override(FLAGS_steps_per_closure, DimensionRange(), &s.steps_per_closure));
  RETURN_IF_ERROR(Override(FLAGS_eval_every_steps, count, &s.eval_every_steps));
  RETURN_IF_ERROR(Override(FLAGS_checkpoint_every_steps, count, &s.checkpoint_every_steps));
  RETURN_IF_ERROR(Override(FLAGS_checkpoint_every_secs, count, &s.checkpoint_every_secs));
  if (Given(FLAGS_mode)) job.mode = absl::GetFlag(FLAGS_mode);
  if (absl::GetFlag(FLAGS_ps_replicas) >= 0) job.ps_replicas = absl::GetFlag(FLAGS_ps_replicas);
  if (Given(FLAGS_terminate_on_nan)) job.terminate_on_nan = absl::GetFlag(FLAGS_terminate_on_nan);
  if (Given(FLAGS_divergence_loss_factor)) job.divergence_loss_factor = absl::GetFlag(FLAGS_divergence_loss_factor);
  if (!absl::GetFlag(FLAGS_data_dir).empty()) job.data.dir = absl::GetFlag(FLAGS_data_dir);
  RETURN_IF_ERROR(OverrideCtrDataFiles(absl::GetFlag(FLAGS_train_files), absl::GetFlag(FLAGS_test_files), "--", &job));
  return JobSpecFromJson(JobSpecToJson(job));  // validates the overrides too
}

// The chief's own settings: timeouts and intervals are positive.
absl::Status CheckChiefFlags() {
  const IntRange secs = IntBetween(1, kMaxDimension);
  for (const auto* flag :
       {&FLAGS_wait_timeout_secs, &FLAGS_progress_secs, &FLAGS_closure_timeout_secs, &FLAGS_poll_secs,
        &FLAGS_all_workers_lost_timeout_secs, &FLAGS_eval_poll_secs, &FLAGS_worker_silence_timeout_secs,
        &FLAGS_ps_recovery_timeout_secs, &FLAGS_ps_health_deadline_secs, &FLAGS_max_checkpoint_failures}) {
    RETURN_IF_ERROR(
        CheckInRange(absl::GetFlag(*flag), secs, absl::StrCat("--", absl::GetFlagReflectionHandle(*flag).Name())));
  }
  if (absl::GetFlag(FLAGS_start_over) && Given(FLAGS_restore) && absl::GetFlag(FLAGS_restore)) {
    return absl::InvalidArgumentError("--start_over and --restore=true contradict each other; give one");
  }
  if (absl::GetFlag(FLAGS_ephemeral) && !absl::GetFlag(FLAGS_model_dir).empty()) {
    return absl::InvalidArgumentError("--ephemeral means no model dir; drop it or --model_dir");
  }
  if (absl::GetFlag(FLAGS_ephemeral) && !absl::GetFlag(FLAGS_init_from).empty()) {
    return absl::InvalidArgumentError(
        "--init_from needs --model_dir, not --ephemeral: the starting values reach the ps as the checkpoint ckpt-0 "
        "written there");
  }
  return absl::OkStatus();
}

int Main() {
  absl::StatusOr<TaskSetup> setup =
      BootstrapTask(Env::Default(), {kChief, kEvaluator}, std::getenv,
                    [](const std::string& note) { std::cerr << "pstrain-chief: " << note << "\n"; });
  if (!setup.ok()) {
    std::cerr << "pstrain-chief: " << setup.status().message() << "\n";
    return kExitBadConfiguration;
  }
  const bool evaluator = setup->type == kEvaluator;
  if (absl::Status flags = CheckChiefFlags(); !flags.ok()) {
    std::cerr << "pstrain-chief: " << flags.message() << "\n";
    return kExitBadConfiguration;
  }
  absl::StatusOr<JobSpec> job = JobFromFlags();
  if (!job.ok()) {
    std::cerr << "pstrain-chief: bad job spec (--job=" << absl::GetFlag(FLAGS_job) << "): " << job.status().message()
              << "\n";
    return kExitBadConfiguration;
  }
  LogLine(evaluator ? "evaluator" : "chief", "cpu kernels: " + DescribeCpuLevel());
  LogLine(evaluator ? "evaluator" : "chief", DescribeTls(setup->transport.tls));
  MetricsRegistry metrics;
  AddProcessMetrics(&metrics, setup->task, setup->type);
  absl::StatusOr<std::unique_ptr<HttpMetricsServer>> metrics_server =
      ServeMetrics(&metrics, setup->metrics_host, setup->metrics_port, "pstrain-chief");
  if (!metrics_server.ok()) {
    std::cerr << "pstrain-chief: " << metrics_server.status().message() << "\n";
    return metrics_server.status().code() == absl::StatusCode::kInvalidArgument ? kExitBadConfiguration
                                                                                : kExitRuntimeFailure;
  }
  if (evaluator) {
    EvaluatorConfig e;
    e.metrics = &metrics;
    e.model_dir = absl::GetFlag(FLAGS_model_dir);
    e.job = *job;
    e.poll_interval_secs = absl::GetFlag(FLAGS_eval_poll_secs);
    if (e.model_dir.empty()) {
      std::cerr << "pstrain-chief: the evaluator needs --model_dir (where the chief writes checkpoints)\n";
      return kExitBadConfiguration;
    }
    return RunEvaluator(Env::Default(), e);
  }
  if (absl::GetFlag(FLAGS_model_dir).empty() && !absl::GetFlag(FLAGS_ephemeral)) {
    std::cerr << "pstrain-chief: no --model_dir: the job would train and keep nothing (no checkpoint to resume or "
                 "evaluate, no metrics). Give --model_dir=DIR, or --ephemeral to train without keeping anything\n";
    return kExitBadConfiguration;
  }
  absl::StatusOr<int64_t> budget = MemoryBudgetBytes(Env::Default(), absl::GetFlag(FLAGS_memory_budget_bytes));
  if (!budget.ok()) {
    std::cerr << "pstrain-chief: " << budget.status().message() << "\n";
    return kExitBadConfiguration;
  }
  ChiefConfig c;
  c.tf_config = setup->tf_config;
  c.job = *job;
  c.memory_budget_bytes = *budget;
  c.listen = setup->listen;
  c.start_over = absl::GetFlag(FLAGS_start_over);
  if (absl::GetFlag(FLAGS_ephemeral)) {
    LogLine("chief",
            "--ephemeral: NOTHING of this run is kept (no checkpoint, no metrics file); give --model_dir "
            "to keep them");
  }
  if (!absl::GetFlag(FLAGS_model_dir).empty() && c.job.schedule.checkpoint_every_steps == 0 &&
      c.job.schedule.checkpoint_every_secs == 0) {
    // As TensorFlow's Estimator: without a checkpoint schedule, a checkpoint every 10 minutes, so a
    // restarted chief never loses more than that.
    c.job.schedule.checkpoint_every_secs = 600;
  }
  c.model_dir = absl::GetFlag(FLAGS_model_dir);
  c.wait_timeout_secs = absl::GetFlag(FLAGS_wait_timeout_secs);
  c.progress_interval_secs = absl::GetFlag(FLAGS_progress_secs);
  c.closure_timeout_secs = absl::GetFlag(FLAGS_closure_timeout_secs);
  c.worker_silence_timeout_secs = absl::GetFlag(FLAGS_worker_silence_timeout_secs);
  c.poll_interval_secs = absl::GetFlag(FLAGS_poll_secs);
  c.all_workers_lost_timeout_secs = absl::GetFlag(FLAGS_all_workers_lost_timeout_secs);
  c.ps_recovery_timeout_secs = absl::GetFlag(FLAGS_ps_recovery_timeout_secs);
  c.ps_health_deadline_secs = absl::GetFlag(FLAGS_ps_health_deadline_secs);
  c.restore = absl::GetFlag(FLAGS_restore) && !c.start_over;
  c.init_only = absl::GetFlag(FLAGS_init_only);
  c.max_checkpoint_failures = static_cast<int>(absl::GetFlag(FLAGS_max_checkpoint_failures));
  c.metrics = &metrics;
  c.transport = setup->transport;
  if (const std::string path = absl::GetFlag(FLAGS_init_from); !path.empty()) {
    // Read and checked before any task is waited for: a bad file fails at once.
    absl::StatusOr<InitialWeights> weights = ReadInitialWeights(Env::Default(), c.job, path);
    const int num_ps = static_cast<int>(c.tf_config.cluster.Addresses(kPs).size());
    absl::StatusOr<InitialDynamicFiles> dynamic =
        weights.ok() ? InitialDynamicTableFiles(c.job, *weights, std::max(1, num_ps)) : weights.status();
    if (!dynamic.ok()) {
      std::cerr << "pstrain-chief: " << dynamic.status().message() << "\n";
      return ExitCodeFor(dynamic.status());
    }
    for (const auto& [table, source] : weights->key_sources) {
      LogLine("chief", absl::StrCat("--init_from: dynamic table ", table, " starts from the file's rows, keyed by ",
                                    source));
      weights->values.erase(table);  // its rows travel in the table's file
    }
    LogLine("chief", absl::StrCat("--init_from=", path, ": ", weights->values.size() + weights->dynamic_keys.size(),
                                  " variables read; they are the starting values unless --model_dir holds a "
                                  "checkpoint"));
    c.initial_values = std::make_shared<const NamedWeights>(std::move(weights->values));
    c.initial_dynamic_files = std::move(dynamic->files);
    c.initial_dynamic_shards = std::move(dynamic->shards);
  }
  return RunChief(Env::Default(), c);
}

}  // namespace
}  // namespace pstrain

int main(int argc, char** argv) {
  pstrain::InstallResourceErrorHandler("pstrain-chief");
  absl::SetProgramUsageMessage(
      "pstrain-chief --job=cnn --model_dir=DIR   (TF_CONFIG in the environment, task type chief or evaluator)");
  if (std::optional<int> exit_now = pstrain::ParseTaskCommandLine(argc, argv, "pstrain-chief", pstrain::given_flags)) {
    return *exit_now;
  }
  return pstrain::Main();
}
