#include "chief/coordinator/progress_tracker.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"

namespace pstrain {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

ProgressTracker::ProgressTracker(Env* env, int num_workers, int64_t batch_size, int64_t total_steps,
                                 int64_t steps_per_epoch, int64_t start_step, MetricsKind kind)
    : env_(env),
      num_workers_(std::max(1, num_workers)),
      batch_size_(batch_size),
      total_steps_(total_steps),
      steps_per_epoch_(std::max<int64_t>(1, steps_per_epoch)),
      start_step_(start_step),
      start_micros_(env->NowMicros()),
      kind_(kind) {
  absl::MutexLock lock(&mu_);
  window_start_micros_ = start_micros_;
  window_staleness_.assign(num_workers_, 0);
  last_loss_ = kNaN;
  last_accuracy_ = kNaN;
  last_auc_ = kNaN;
}

void ProgressTracker::OnTrainResult(int worker, int64_t worker_steps, const RunStepsResponse& response) {
  absl::MutexLock lock(&mu_);
  worker_steps_ += worker_steps;
  examples_ += response.examples();
  window_examples_ += response.examples();
  window_loss_sum_ += response.loss_sum();
  window_correct_ += response.correct();
  if (kind_ == MetricsKind::kBinary) window_auc_.Add(response.train_auc(), response.examples());
  if (worker >= 0 && worker < num_workers_) {
    window_staleness_[worker] = std::max(window_staleness_[worker], response.max_staleness());
  }
  if (response.examples() > 0) {
    last_loss_ = response.loss_sum() / response.examples();
    if (kind_ == MetricsKind::kClassification) last_accuracy_ = static_cast<double>(response.correct()) / response.examples();
  }
}

void ProgressTracker::RollBackTo(int64_t global_step) {
  absl::MutexLock lock(&mu_);
  worker_steps_ = std::max<int64_t>(0, global_step - start_step_) * num_workers_;
}

int64_t ProgressTracker::global_step() const {
  absl::MutexLock lock(&mu_);
  return start_step_ + worker_steps_ / num_workers_;
}

int64_t ProgressTracker::worker_steps() const {
  absl::MutexLock lock(&mu_);
  return start_step_ * num_workers_ + worker_steps_;
}

double ProgressTracker::last_loss() const {
  absl::MutexLock lock(&mu_);
  return last_loss_;
}

double ProgressTracker::last_auc() const {
  absl::MutexLock lock(&mu_);
  return last_auc_;
}

double ProgressTracker::last_accuracy() const {
  absl::MutexLock lock(&mu_);
  return last_accuracy_;
}

int64_t ProgressTracker::examples() const {
  absl::MutexLock lock(&mu_);
  return examples_;
}

double ProgressTracker::examples_per_second() const {
  const double secs = (env_->NowMicros() - start_micros_) * 1e-6;
  absl::MutexLock lock(&mu_);
  return secs > 0 ? examples_ / secs : 0.0;
}

ProgressWindow ProgressTracker::TakeWindow() {
  const int64_t now = env_->NowMicros();
  absl::MutexLock lock(&mu_);
  ProgressWindow w;
  w.global_step = start_step_ + worker_steps_ / num_workers_;
  w.total_steps = total_steps_;
  w.epoch = static_cast<double>(w.global_step) / steps_per_epoch_;
  w.wall_seconds = (now - start_micros_) * 1e-6;
  const double window_secs = (now - window_start_micros_) * 1e-6;
  w.examples_per_second = window_secs > 0 ? window_examples_ / window_secs : 0.0;
  w.loss = window_examples_ > 0 ? window_loss_sum_ / window_examples_ : kNaN;
  w.accuracy = window_examples_ > 0 && kind_ == MetricsKind::kClassification
                   ? static_cast<double>(window_correct_) / window_examples_
                   : kNaN;
  w.auc = window_auc_.Mean();
  if (std::isfinite(w.auc)) last_auc_ = w.auc;
  window_auc_ = AucAverage{};
  const int64_t done = w.global_step - start_step_;
  w.eta_seconds = done > 0 ? w.wall_seconds / done * (total_steps_ - w.global_step) : kNaN;
  w.max_staleness = window_staleness_;
  window_examples_ = 0;
  window_loss_sum_ = 0.0;
  window_correct_ = 0;
  window_start_micros_ = now;
  window_staleness_.assign(num_workers_, 0);
  return w;
}

std::string ProgressTracker::FormatLine(const ProgressWindow& w) {
  std::string line = absl::StrFormat("step %d/%d (epoch %.2f) | %.1f examples/s", w.global_step, w.total_steps,
                                     w.epoch, w.examples_per_second);
  if (std::isfinite(w.loss)) absl::StrAppendFormat(&line, " | loss %.4f", w.loss);
  if (std::isfinite(w.accuracy)) absl::StrAppendFormat(&line, " | accuracy %.1f%%", 100.0 * w.accuracy);
  if (std::isfinite(w.auc)) absl::StrAppendFormat(&line, " | AUC %.4f", w.auc);
  absl::StrAppendFormat(&line, " | ETA %s", FormatDuration(w.eta_seconds));
  return line;
}

nlohmann::json ProgressTracker::ToJson(const ProgressWindow& w) {
  nlohmann::json j;
  j["step"] = w.global_step;
  j["epoch"] = w.epoch;
  j["wall_time"] = w.wall_seconds;
  j["examples_per_second"] = w.examples_per_second;
  j["loss"] = std::isfinite(w.loss) ? nlohmann::json(w.loss) : nlohmann::json(nullptr);
  j["accuracy"] = std::isfinite(w.accuracy) ? nlohmann::json(w.accuracy) : nlohmann::json(nullptr);
  if (std::isfinite(w.auc)) j["auc"] = w.auc;
  j["staleness"] = w.max_staleness;
  return j;
}

}  // namespace pstrain
