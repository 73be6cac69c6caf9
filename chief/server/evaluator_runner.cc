#include "chief/server/evaluator_runner.h"

#include <signal.h>

#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "chief/checkpoint/checkpoint_manager.h"
#include "chief/checkpoint/model_dir.h"
#include "chief/coordinator/training_budget.h"
#include "chief/evaluation/checkpoint_evaluator.h"
#include "chief/records/chief_metrics.h"
#include "chief/records/metrics_writer.h"
#include "chief/records/run_events.h"
#include "chief/server/chief_runner.h"
#include "common/platform/exit_codes.h"

namespace pstrain {
namespace {

// True when SIGTERM or SIGINT arrived within `secs` (the signals are blocked and waited for).
bool WaitForStopSignal(int64_t secs) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  const timespec timeout = {static_cast<time_t>(secs), 0};
  const int sig = sigtimedwait(&set, nullptr, &timeout);
  return sig == SIGTERM || sig == SIGINT;
}

// The newest "ckpt-<step>" with step > `after`, or -1.
int64_t NewestStepAfter(Env* env, const std::string& model_dir, int64_t after) {
  absl::StatusOr<std::vector<std::string>> names = env->ListDir(model_dir);
  int64_t best = -1;
  if (!names.ok()) return best;
  for (const std::string& name : *names) {
    const int64_t step = CheckpointManager::StepOfName(name);
    if (step > after && step > best) best = step;
  }
  return best;
}

}  // namespace

int RunEvaluator(Env* env, const EvaluatorConfig& config) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // One evaluator per model dir (beside its chief): two would write eval/ over each other.
  absl::StatusOr<std::unique_ptr<FileLock>> lock =
      LockModelDir(env, config.model_dir, "evaluator.lock", "pstrain-chief, task evaluator:0");
  if (!lock.ok()) {
    LogLine("evaluator", std::string(lock.status().message()));
    return ExitCodeFor(lock.status());
  }
  int64_t final_step = -1;
  absl::StatusOr<int64_t> examples = TrainExamples(env, config.job.data);
  if (examples.ok()) {
    absl::StatusOr<TrainingBudget> budget = ComputeBudget(config.job, *examples, 1);
    if (budget.ok()) final_step = budget->total_steps;
  }
  if (!env->CreateDirs(config.model_dir + "/eval").ok()) {
    LogLine("evaluator", "cannot create " + config.model_dir + "/eval");
    return kExitRuntimeFailure;
  }
  absl::StatusOr<std::unique_ptr<MetricsWriter>> metrics = MetricsWriter::Open(config.model_dir + "/eval/metrics.jsonl");
  if (!metrics.ok()) {
    LogLine("evaluator", std::string(metrics.status().message()));
    return kExitRuntimeFailure;
  }
  LogLine("evaluator", absl::StrCat("watching ", config.model_dir, " for checkpoints",
                                    final_step > 0 ? absl::StrCat(" until step ", final_step) : ""));
  MetricsRegistry own_registry;
  EvalMetrics gauges(config.metrics != nullptr ? config.metrics : &own_registry);
  RunEvents events(config.model_dir, UnixSeconds());
  CheckpointEvalOptions options;
  options.data = config.job.data;  // the user's job spec names the data, never the checkpoint's
  options.threads = config.threads;
  int64_t last = -1;
  while (true) {
    const int64_t step = NewestStepAfter(env, config.model_dir, last);
    if (step >= 0) {
      const std::string dir = absl::StrCat(config.model_dir, "/ckpt-", step);
      const int64_t eval_start_micros = env->NowMicros();
      absl::StatusOr<EvalResult> r = EvaluateCheckpoint(env, dir, options);
      if (r.ok()) {
        LogLine("evaluator", absl::StrCat(dir, ": ", FormatEval(*r)));
        gauges.OnEval(*r, (env->NowMicros() - eval_start_micros) * 1e-6);
        nlohmann::json record = EvalJson(*r);
        record["kind"] = "eval";
        record["step"] = r->step;
        record["checkpoint"] = dir;
        (*metrics)->Write(record).IgnoreError();
        absl::Status written = events.Record(record);
        if (!written.ok()) LogLine("evaluator", std::string(written.message()));
        last = step;
        if (final_step > 0 && step >= final_step) return kExitOk;
      } else if (r.status().code() == absl::StatusCode::kNotFound && !env->FileExists(dir)) {
        last = step;  // pruned by the chief before we got to it
      } else {
        LogLine("evaluator", absl::StrCat("cannot evaluate ", dir, ": ", r.status().message()));
        last = step;
      }
      // A signal that came during the evaluation: checkpoints keep coming, so look now, not only
      // when the evaluator has caught up.
      if (WaitForStopSignal(0)) break;
      continue;
    }
    if (WaitForStopSignal(config.poll_interval_secs)) break;
  }
  LogLine("evaluator", "stopping on a signal");
  return kExitStoppedBySignal;
}

}  // namespace pstrain
