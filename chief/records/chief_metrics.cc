#include "chief/records/chief_metrics.h"

#include <cmath>
#include <filesystem>

namespace pstrain {
namespace {

void SetFinite(Gauge* g, double v) {
  if (std::isfinite(v)) g->Set(v);
}

// Staleness in steps: 0, 1, 2, 4, ... 1024.
std::vector<double> StalenessBuckets() {
  std::vector<double> b = {0};
  for (double v = 1; v <= 1024; v *= 2) b.push_back(v);
  return b;
}

}  // namespace

std::string TaskOfPeer(const std::string& peer) { return peer.substr(0, peer.find(' ')); }

double DirectoryBytes(const std::string& dir) {
  std::error_code ec;
  double total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto size = it->file_size(size_ec);
      if (!size_ec) total += static_cast<double>(size);
    }
  }
  return total;
}

ChiefMetrics::ChiefMetrics(MetricsRegistry* r)
    : r_(r),
      global_step_(
          r->GetGauge("pstrain_global_step", "Global steps done (a global step is one batch_size of examples)")),
      total_steps_(r->GetGauge("pstrain_total_steps", "Global steps the job trains in all")),
      epoch_(r->GetGauge("pstrain_epoch", "Epochs done (fractional) at the last progress report")),
      examples_(r->GetCounter("pstrain_examples_total", "Training examples processed by this chief's run")),
      worker_steps_(r->GetCounter("pstrain_worker_steps_total", "Worker steps finished in this chief's run")),
      examples_per_second_(
          r->GetGauge("pstrain_examples_per_second", "Training examples per second over the last progress window")),
      train_loss_(r->GetGauge("pstrain_train_loss", "Mean training loss over the last progress window")),
      train_accuracy_(r->GetGauge("pstrain_train_accuracy", "Training accuracy (0..1) over the last progress window")),
      eval_(r),
      workers_alive_(r->GetGauge("pstrain_workers_alive", "Workers the chief can use now")),
      checkpoints_(r->GetCounter("pstrain_checkpoints_total", "Checkpoints saved")),
      checkpoint_failures_(r->GetCounter("pstrain_checkpoint_failures_total",
                                         "Checkpoints that could not be written (training went on)")),
      checkpoint_step_(r->GetGauge("pstrain_checkpoint_step", "Global step of the newest checkpoint saved")),
      checkpoint_bytes_(r->GetGauge("pstrain_checkpoint_size_bytes", "Size of the newest checkpoint saved")),
      checkpoint_seconds_(r->GetHistogram("pstrain_checkpoint_duration_seconds",
                                          "Time to save one checkpoint (every ps writes its shards)",
                                          LatencyBuckets())) {}

void ChiefMetrics::SetPlan(int64_t total_steps, int64_t start_step) {
  total_steps_->Set(total_steps);
  global_step_->Set(start_step);
}

void ChiefMetrics::OnTrainResult(const std::string& worker, int64_t worker_steps, int64_t examples,
                                 int64_t max_staleness, int64_t global_step) {
  examples_->Increment(examples);
  worker_steps_->Increment(worker_steps);
  global_step_->SetMax(global_step);  // results arrive on several threads
  r_->GetHistogram("pstrain_staleness_steps",
                   "Per closure, the most steps a worker's gradient lagged behind the variables it updated (async)",
                   StalenessBuckets(), {{"worker", TaskOfPeer(worker)}})
      ->Observe(max_staleness);
}

void ChiefMetrics::OnWindow(const ProgressWindow& w) {
  global_step_->SetMax(w.global_step);
  epoch_->Set(w.epoch);
  examples_per_second_->Set(w.examples_per_second);
  SetFinite(train_loss_, w.loss);
  SetFinite(train_accuracy_, w.accuracy);
  if (std::isfinite(w.auc)) {
    r_->GetGauge("pstrain_train_auc", "Training AUC over the last progress window (binary models)")->Set(w.auc);
  }
}

EvalMetrics::EvalMetrics(MetricsRegistry* r)
    : r_(r),
      eval_step_(r->GetGauge("pstrain_eval_step", "Global step of the last evaluation")),
      eval_loss_(r->GetGauge("pstrain_eval_loss", "Test loss of the last evaluation")),
      eval_accuracy_(r->GetGauge("pstrain_eval_accuracy", "Test accuracy (0..1) of the last evaluation")),
      evaluations_(r->GetCounter("pstrain_evaluations_total", "Evaluations finished")),
      eval_seconds_(r->GetHistogram("pstrain_evaluation_duration_seconds", "Time one evaluation of the test set took",
                                    LatencyBuckets())) {}

void ChiefMetrics::OnEval(const EvalResult& r, double seconds) { eval_.OnEval(r, seconds); }

void EvalMetrics::OnEval(const EvalResult& r, double seconds) {
  eval_step_->Set(r.step);
  SetFinite(eval_loss_, r.loss);
  SetFinite(eval_accuracy_, r.accuracy);
  // Binary models only: a job without an AUC exports no AUC series rather than a 0.
  if (std::isfinite(r.auc)) r_->GetGauge("pstrain_eval_auc", "Exact test AUC of the last evaluation")->Set(r.auc);
  evaluations_->Increment();
  eval_seconds_->Observe(seconds);
}

void ChiefMetrics::OnWorkerLost(const std::string& worker) {
  r_->GetCounter("pstrain_workers_lost_total", "Times a worker was declared lost", {{"worker", TaskOfPeer(worker)}})
      ->Increment();
}

void ChiefMetrics::OnPsLost(const std::string& ps) {
  r_->GetCounter("pstrain_ps_lost_total", "Times a ps was taken for lost (gone, silent or restarted)",
                 {{"ps", TaskOfPeer(ps)}})
      ->Increment();
}

void ChiefMetrics::OnPsRecovered(const std::string& ps, double pause_seconds, int64_t lost_updates) {
  const MetricLabels labels = {{"ps", TaskOfPeer(ps)}};
  r_->GetCounter("pstrain_ps_recovered_total", "Times a lost ps was brought back into the running job", labels)
      ->Increment();
  r_->GetCounter("pstrain_ps_recovery_pause_seconds_total",
                 "Seconds training was paused while a lost ps was brought back", labels)
      ->Increment(pause_seconds);
  r_->GetCounter("pstrain_ps_lost_updates_total",
                 "Global steps of updates a lost ps lost (restored from an older checkpoint)", labels)
      ->Increment(static_cast<double>(lost_updates));
}

void ChiefMetrics::OnWorkerBack(const std::string& worker) {
  r_->GetCounter("pstrain_workers_returned_total", "Times a lost worker came back and was re-configured",
                 {{"worker", TaskOfPeer(worker)}})
      ->Increment();
}

void ChiefMetrics::SetWorkersAlive(int alive) { workers_alive_->Set(alive); }

void ChiefMetrics::OnCheckpoint(int64_t step, double seconds, double bytes) {
  checkpoints_->Increment();
  checkpoint_step_->Set(step);
  checkpoint_bytes_->Set(bytes);
  checkpoint_seconds_->Observe(seconds);
}

void ChiefMetrics::OnCheckpointFailed() { checkpoint_failures_->Increment(); }

}  // namespace pstrain
