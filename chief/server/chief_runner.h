// The `pstrain-chief` process once its flags are parsed: connects to the cluster of its TF_CONFIG,
// serves the status service on its own address, runs the Coordinator, turns SIGTERM/SIGINT into a
// checkpoint-and-stop, prints progress on stderr and the final JSON summary on stdout.
// Thread-safety: RunChief is called once, from main.
#ifndef PSTRAIN_CHIEF_SERVER_CHIEF_RUNNER_H_
#define PSTRAIN_CHIEF_SERVER_CHIEF_RUNNER_H_

#include <memory>
#include <string>

#include "common/config/cluster_spec.h"
#include "common/config/job_spec.h"
#include "common/graph/float_tensor.h"
#include "common/metrics/metrics_registry.h"
#include "common/platform/env.h"
#include "common/platform/exit_codes.h"
#include "ps/transport/ps_transport.h"

namespace pstrain {

struct ChiefConfig {
  TfConfig tf_config;     // validated for task type chief
  JobSpec job;            // with the command line's overrides applied
  std::string model_dir;  // "" = no checkpoints and no metrics file
  int64_t wait_timeout_secs = 120;
  int64_t progress_interval_secs = 5;
  int64_t closure_timeout_secs = 600;
  int64_t worker_silence_timeout_secs = 30;  // see WorkerPoolOptions::silence_timeout_ms
  int64_t poll_interval_secs = 1;
  int64_t all_workers_lost_timeout_secs = 600;
  int64_t ps_recovery_timeout_secs = 300;  // a lost ps must answer again within this
  int64_t ps_health_deadline_secs = 15;    // a ps silent this long is taken for lost
  bool restore = true;
  bool start_over = false;            // move an earlier run aside (see CoordinatorOptions)
  bool init_only = false;             // create or restore, checkpoint, stop (see CoordinatorOptions)
  int max_checkpoint_failures = 3;    // failed checkpoints in a row that end the job (see CoordinatorOptions)
  int64_t memory_budget_bytes = 0;    // every task's (see CoordinatorOptions); 0: not checked
  std::string listen;                 // the status service's address ("": 0.0.0.0:<TF_CONFIG port>)
  MetricsRegistry* metrics = nullptr; // the process's Prometheus metrics (not owned; may be null)
  TransportConfig transport;          // how to reach the ps (and with transport.tls, every task)
  // --init_from's values, checked against the job (see CoordinatorOptions::initial_values), and
  // its dynamic tables' files (CoordinatorOptions::initial_dynamic_files / _shards).
  std::shared_ptr<const FloatTensorMap> initial_values;
  std::map<std::string, std::string> initial_dynamic_files;
  std::vector<SavedDynamicShard> initial_dynamic_shards;
};


// Runs the job; returns the process exit code (0 done, 2 bad configuration, 1 runtime failure,
// 143 stopped by a signal after a checkpoint). Messages go to stderr. `env` (not owned; REQUIRES:
// non-null) gives the coordinator's clock and files.
int RunChief(Env* env, const ChiefConfig& config);

// One line "[chief HH:MM:SS] message" on stderr (also used by the evaluator).
void LogLine(const std::string& who, const std::string& message);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_SERVER_CHIEF_RUNNER_H_
