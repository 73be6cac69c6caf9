// ProgressTracker: the chief's running totals of training (global step, examples, loss and
// accuracy sums, per-worker staleness) and the windows between two progress reports, which become
// the progress line on stderr and one JSON line of the metrics file.
// Global steps: a global step is `batch_size` examples; a worker step uses batch_size/num_workers,
// so num_workers worker steps make one global step, in both async and sync modes.
// Thread-safety: every method may be called from any thread.
#ifndef PSTRAIN_CHIEF_COORDINATOR_PROGRESS_TRACKER_H_
#define PSTRAIN_CHIEF_COORDINATOR_PROGRESS_TRACKER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "chief/evaluation/evaluation.h"
#include "common/metrics/auc_average.h"
#include "common/platform/env.h"
#include "nlohmann/json.hpp"
#include "proto/worker.pb.h"

namespace pstrain {

struct ProgressWindow {
  int64_t global_step = 0;
  int64_t total_steps = 0;
  double epoch = 0.0;             // fractional epochs done
  double wall_seconds = 0.0;      // since the tracker started
  double examples_per_second = 0.0;
  double loss = 0.0;              // mean per-example loss over the window (NaN when no examples)
  double accuracy = 0.0;          // over the window (NaN when no examples or not classification)
  // Binary (CTR) models: the training AUC over the window, the mean of the closures' exact AUCs
  // (each over its own examples) weighted by examples (common/metrics/auc_average.h); NaN otherwise.
  double auc = 0.0;
  double eta_seconds = 0.0;       // at the rate since the tracker started
  std::vector<int64_t> max_staleness;  // per worker, over the window
};

class ProgressTracker {
 public:
  // `env` is not owned. `start_step` is where this run began (resumed jobs). Accuracy is reported
  // for classification, AUC for binary models, neither for regression.
  ProgressTracker(Env* env, int num_workers, int64_t batch_size, int64_t total_steps, int64_t steps_per_epoch,
                  int64_t start_step, MetricsKind kind = MetricsKind::kClassification);

  void OnTrainResult(int worker, int64_t worker_steps, const RunStepsResponse& response);

  int64_t global_step() const;
  int64_t worker_steps() const;   // counted since the start of the job (start_step * num_workers + ...)
  double last_loss() const;
  double last_accuracy() const;
  double last_auc() const;  // the training AUC of the most recent window that had one (NaN: none)
  double examples_per_second() const;  // since start
  int64_t examples() const;            // trained in this run

  // Sets the global step back to `global_step` (sync mode after every ps rolled back to a
  // checkpoint); examples trained stay counted. REQUIRES: global_step >= the start step.
  void RollBackTo(int64_t global_step);

  // Closes the current window and opens the next one.
  ProgressWindow TakeWindow();

  // "step 120/9380 (epoch 0.13) | 1234.5 examples/s | loss 0.5321 | accuracy 81.2% | ETA 3m12s"
  // (binary models: "| AUC 0.7712" instead of the accuracy).
  static std::string FormatLine(const ProgressWindow& w);
  // {"step", "wall_time", "loss", "accuracy", "examples_per_second", "epoch", "staleness": [...]},
  // and "auc" for binary models.
  static nlohmann::json ToJson(const ProgressWindow& w);

 private:
  Env* const env_;
  const int num_workers_;
  const int64_t batch_size_;
  const int64_t total_steps_;
  const int64_t steps_per_epoch_;
  const int64_t start_step_;
  const int64_t start_micros_;
  const MetricsKind kind_;

  mutable absl::Mutex mu_;
  int64_t worker_steps_ ABSL_GUARDED_BY(mu_) = 0;  // in this run
  int64_t examples_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t window_examples_ ABSL_GUARDED_BY(mu_) = 0;
  double window_loss_sum_ ABSL_GUARDED_BY(mu_) = 0.0;
  int64_t window_correct_ ABSL_GUARDED_BY(mu_) = 0;
  AucAverage window_auc_ ABSL_GUARDED_BY(mu_);
  double last_auc_ ABSL_GUARDED_BY(mu_);
  int64_t window_start_micros_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int64_t> window_staleness_ ABSL_GUARDED_BY(mu_);
  double last_loss_ ABSL_GUARDED_BY(mu_);
  double last_accuracy_ ABSL_GUARDED_BY(mu_);
};

// "1h02m", "3m12s", "45s".
std::string FormatDuration(double seconds);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_COORDINATOR_PROGRESS_TRACKER_H_
