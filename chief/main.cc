// pstrain-chief: the coordinator of a training cluster (TF_CONFIG task type "chief"), or, with task
// type "evaluator", the sidecar that evaluates each new checkpoint of the model dir. Flags are
// parsed here only and passed down as a config struct.
#include <cstdlib>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "chief/chief_runner.h"
#include "chief/evaluator_runner.h"
#include "common/cluster_spec.h"
#include "common/cpu_level.h"
#include "common/exit_codes.h"
#include "common/job_spec.h"
#include "common/metrics_endpoint.h"
#include "common/process_metrics.h"
#include "common/status_macros.h"

ABSL_FLAG(std::string, job, "cnn", "job spec: a preset (linear, mlp, cnn, ctr) or a JSON file");
ABSL_FLAG(std::string, model_dir, "", "directory for checkpoints, metrics.jsonl and summary.json");
ABSL_FLAG(std::string, tf_config, "", "read TF_CONFIG from this file instead of the environment");
ABSL_FLAG(int64_t, epochs, 0, "train this many epochs (overrides the job's schedule)");
ABSL_FLAG(int64_t, steps, 0, "train this many global steps (overrides the job's schedule)");
ABSL_FLAG(int64_t, steps_per_closure, 0, "worker steps per scheduled closure (overrides the job's)");
ABSL_FLAG(std::string, mode, "", "async or sync (overrides the job's)");
ABSL_FLAG(int64_t, eval_every_steps, -1, "evaluate every N global steps (overrides the job's; 0 = at the end)");
ABSL_FLAG(int64_t, checkpoint_every_steps, -1, "checkpoint every N global steps (overrides the job's)");
ABSL_FLAG(int64_t, checkpoint_every_secs, -1, "checkpoint every N seconds (overrides the job's)");
ABSL_FLAG(int64_t, wait_timeout_secs, 120, "how long to wait for every ps and worker to answer at start");
ABSL_FLAG(int64_t, progress_secs, 5, "seconds between progress lines");
ABSL_FLAG(int64_t, closure_timeout_secs, 600, "a worker that does not finish a closure in time is lost");
ABSL_FLAG(int64_t, poll_secs, 1, "how often a lost worker is polled");
ABSL_FLAG(int64_t, all_workers_lost_timeout_secs, 600, "fail when no worker answers for this long");
ABSL_FLAG(bool, restore, true, "resume from the newest checkpoint in --model_dir");
ABSL_FLAG(bool, init_only, false,
          "create (or restore) the variables on the ps, save a checkpoint in --model_dir and stop (no workers "
          "needed): for inspecting initial weights or re-partitioning a checkpoint");
ABSL_FLAG(std::string, data_dir, "",
          "data directory (overrides the job's data.dir; criteo: the cache of the default synthetic set)");
ABSL_FLAG(std::string, train_files, "",
          "criteo jobs: comma-separated training files or globs (overrides data.train_files)");
ABSL_FLAG(std::string, test_files, "", "criteo jobs: comma-separated test files or globs (overrides data.test_files)");
ABSL_FLAG(int64_t, eval_poll_secs, 2, "evaluator: how often to look for a new checkpoint");
ABSL_FLAG(int, metrics_port, 0,
          "serve Prometheus metrics at http://0.0.0.0:PORT/metrics (0 = off; the chief's gRPC server listens on "
          "0.0.0.0 too)");

namespace pstrain {
namespace {

absl::StatusOr<JobSpec> JobFromFlags() {
  ASSIGN_OR_RETURN(JobSpec job, LoadJobSpec(absl::GetFlag(FLAGS_job)));
  if (absl::GetFlag(FLAGS_epochs) > 0) {
    job.schedule.epochs = absl::GetFlag(FLAGS_epochs);
    job.schedule.steps = 0;
  }
  if (absl::GetFlag(FLAGS_steps) > 0) {
    job.schedule.steps = absl::GetFlag(FLAGS_steps);
    job.schedule.epochs = 0;
  }
  if (absl::GetFlag(FLAGS_steps_per_closure) > 0) job.schedule.steps_per_closure = absl::GetFlag(FLAGS_steps_per_closure);
  if (!absl::GetFlag(FLAGS_mode).empty()) job.mode = absl::GetFlag(FLAGS_mode);
  if (absl::GetFlag(FLAGS_eval_every_steps) >= 0) job.schedule.eval_every_steps = absl::GetFlag(FLAGS_eval_every_steps);
  if (absl::GetFlag(FLAGS_checkpoint_every_steps) >= 0) {
    job.schedule.checkpoint_every_steps = absl::GetFlag(FLAGS_checkpoint_every_steps);
  }
  if (absl::GetFlag(FLAGS_checkpoint_every_secs) >= 0) {
    job.schedule.checkpoint_every_secs = absl::GetFlag(FLAGS_checkpoint_every_secs);
  }
  if (!absl::GetFlag(FLAGS_data_dir).empty()) job.data.dir = absl::GetFlag(FLAGS_data_dir);
  RETURN_IF_ERROR(
      OverrideCtrDataFiles(absl::GetFlag(FLAGS_train_files), absl::GetFlag(FLAGS_test_files), "--", &job));
  return JobSpecFromJson(JobSpecToJson(job));  // validates the overrides too
}

int Main() {
  absl::StatusOr<TfConfig> config = LoadTfConfig(absl::GetFlag(FLAGS_tf_config));
  if (!config.ok()) {
    std::cerr << "pstrain-chief: bad TF_CONFIG: " << config.status().message() << "\n";
    return kExitBadConfiguration;
  }
  for (const std::string& note : config->notes) std::cerr << "pstrain-chief: " << note << "\n";
  const bool evaluator = config->task.has_value() && config->task->type == kEvaluator;
  absl::Status valid = ValidateTaskForRole(*config, evaluator ? kEvaluator : kChief);
  if (!valid.ok()) {
    std::cerr << "pstrain-chief: bad TF_CONFIG: " << valid.message() << "\n";
    return kExitBadConfiguration;
  }
  absl::StatusOr<JobSpec> job = JobFromFlags();
  if (!job.ok()) {
    std::cerr << "pstrain-chief: bad job spec (--job=" << absl::GetFlag(FLAGS_job) << "): " << job.status().message()
              << "\n";
    return kExitBadConfiguration;
  }
  absl::StatusOr<CpuLevel> level = ConfigureCpuLevel(std::getenv(kCpuLevelEnv));
  if (!level.ok()) {
    std::cerr << "pstrain-chief: bad configuration: " << level.status().message() << "\n";
    return kExitBadConfiguration;
  }
  LogLine(evaluator ? "evaluator" : "chief", "cpu kernels: " + DescribeCpuLevel());
  MetricsRegistry metrics;
  AddProcessMetrics(&metrics, config->task->ToString(), evaluator ? kEvaluator : kChief);
  absl::StatusOr<std::unique_ptr<HttpMetricsServer>> metrics_server =
      ServeMetrics(&metrics, "0.0.0.0", absl::GetFlag(FLAGS_metrics_port), "pstrain-chief");
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
    return RunEvaluator(e);
  }
  ChiefConfig c;
  c.tf_config = *config;
  c.job = *job;
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
  c.poll_interval_secs = absl::GetFlag(FLAGS_poll_secs);
  c.all_workers_lost_timeout_secs = absl::GetFlag(FLAGS_all_workers_lost_timeout_secs);
  c.restore = absl::GetFlag(FLAGS_restore);
  c.init_only = absl::GetFlag(FLAGS_init_only);
  c.metrics = &metrics;
  return RunChief(c);
}

}  // namespace
}  // namespace pstrain

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "pstrain-chief --job=cnn --model_dir=DIR   (TF_CONFIG in the environment, task type chief or evaluator)");
  absl::ParseCommandLine(argc, argv);
  return pstrain::Main();
}
