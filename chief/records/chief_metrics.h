// ChiefMetrics: the chief's Prometheus metrics (global step, examples, examples/s, loss, accuracy,
// evaluations, per-worker staleness, lost and returned workers, checkpoints), registered in a
// MetricsRegistry and updated by the Coordinator; the evaluator sidecar serves EvalMetrics only.
// Names follow Prometheus's conventions: `_total` counters, `_seconds` and `_bytes` units,
// ratios 0..1.
// Thread-safety: every method may be called from any thread.
#ifndef PSTRAIN_CHIEF_RECORDS_CHIEF_METRICS_H_
#define PSTRAIN_CHIEF_RECORDS_CHIEF_METRICS_H_

#include <string>

#include "chief/coordinator/progress_tracker.h"
#include "chief/evaluation/evaluation.h"
#include "common/metrics/metrics_registry.h"

namespace pstrain {

// The evaluation metrics, which the evaluator sidecar serves alone (it does not train).
class EvalMetrics {
 public:
  // `registry` is not owned and must outlive this object.
  explicit EvalMetrics(MetricsRegistry* registry);
  void OnEval(const EvalResult& r, double seconds);

 private:
  MetricsRegistry* const r_;
  Gauge* const eval_step_;
  Gauge* const eval_loss_;
  Gauge* const eval_accuracy_;
  Counter* const evaluations_;
  Histogram* const eval_seconds_;
};

class ChiefMetrics {
 public:
  // `registry` is not owned and must outlive this object.
  explicit ChiefMetrics(MetricsRegistry* registry);

  void SetPlan(int64_t total_steps, int64_t start_step);
  // A closure's result: `worker` is the peer name ("worker:1 at host:port" -> label "worker:1").
  void OnTrainResult(const std::string& worker, int64_t worker_steps, int64_t examples, int64_t max_staleness,
                     int64_t global_step);
  // A progress window (the figures of a progress line).
  void OnWindow(const ProgressWindow& w);
  void OnEval(const EvalResult& r, double seconds);
  void OnWorkerLost(const std::string& worker);
  void OnWorkerBack(const std::string& worker);
  void SetWorkersAlive(int alive);
  // A ps taken for lost (`ps` is its peer name), and what bringing it back cost.
  void OnPsLost(const std::string& ps);
  void OnPsRecovered(const std::string& ps, double pause_seconds, int64_t lost_updates);
  void OnCheckpoint(int64_t step, double seconds, double bytes);
  // A checkpoint that could not be written (the job went on).
  void OnCheckpointFailed();

 private:
  MetricsRegistry* const r_;
  Gauge* const global_step_;
  Gauge* const total_steps_;
  Gauge* const epoch_;
  Counter* const examples_;
  Counter* const worker_steps_;
  Gauge* const examples_per_second_;
  Gauge* const train_loss_;
  Gauge* const train_accuracy_;
  EvalMetrics eval_;
  Gauge* const workers_alive_;
  Counter* const checkpoints_;
  Counter* const checkpoint_failures_;
  Gauge* const checkpoint_step_;
  Gauge* const checkpoint_bytes_;
  Histogram* const checkpoint_seconds_;
};

// "worker:1 at 10.0.0.3:2222" -> "worker:1".
std::string TaskOfPeer(const std::string& peer);

// Bytes of the files under `dir` (0 when it cannot be read).
double DirectoryBytes(const std::string& dir);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_RECORDS_CHIEF_METRICS_H_
