// The evaluator sidecar (TF_CONFIG task type "evaluator", outside the training cluster as in
// TensorFlow): watches the model dir, evaluates each new complete checkpoint in this process (no
// cluster calls), prints the result, appends it to "<model_dir>/eval/metrics.jsonl" and to the
// TensorBoard event files of <model_dir>/eval, sets its Prometheus gauges, and stops
// after the checkpoint of the job's last step, or on SIGTERM/SIGINT.
// Thread-safety: RunEvaluator is called once, from main.
#ifndef PSTRAIN_CHIEF_SERVER_EVALUATOR_RUNNER_H_
#define PSTRAIN_CHIEF_SERVER_EVALUATOR_RUNNER_H_

#include <string>

#include "common/config/job_spec.h"
#include "common/metrics/metrics_registry.h"
#include "common/platform/env.h"

namespace pstrain {

struct EvaluatorConfig {
  std::string model_dir;
  JobSpec job;                     // for the data dir and the final step when no checkpoint says
  int64_t poll_interval_secs = 2;
  int threads = 1;
  MetricsRegistry* metrics = nullptr;  // the process's Prometheus metrics (not owned; may be null)
};

// Returns the process exit code: 0 after the final checkpoint (or a stop signal), 1 on a
// runtime failure. `env` (not owned; REQUIRES: non-null) gives the clock and files.
int RunEvaluator(Env* env, const EvaluatorConfig& config);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_SERVER_EVALUATOR_RUNNER_H_
