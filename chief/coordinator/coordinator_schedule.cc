// Coordinator: the scheduling half (training phases, evaluation, checkpoints, progress).
#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "chief/coordinator/coordinator.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

// The next multiple of `every` after `step` (or `limit` when `every` <= 0).
int64_t NextBoundary(int64_t step, int64_t every, int64_t limit) {
  if (every <= 0) return limit;
  return std::min(limit, (step / every + 1) * every);
}

constexpr int64_t kFeedIntervalMicros = 5000;

}  // namespace

absl::Status Coordinator::TrainLoop() {
  const ScheduleSpec& sched = spec_.schedule;
  while (!stop_requested_) {
    const int64_t step = tracker_->global_step();
    if (step >= budget_.total_steps) break;
    const int64_t eval_every = EvalEverySteps();
    const int64_t eval_at = NextBoundary(step, eval_every, budget_.total_steps);
    const int64_t ckpt_at = NextBoundary(step, sched.checkpoint_every_steps, budget_.total_steps);
    RETURN_IF_ERROR(RunTrainingPhase(std::min(eval_at, ckpt_at)));
    if (rolled_back_) {  // sync: every ps went back to a checkpoint; plan from that step
      rolled_back_ = false;
      continue;
    }
    const int64_t now_step = tracker_->global_step();
    if (now_step >= budget_.total_steps) break;  // the final evaluation and checkpoint follow
    if (eval_every > 0 && now_step % eval_every == 0 && HasTestData()) {
      SetState("evaluating");
      RETURN_IF_ERROR(Evaluate().status());
      SetState("training");
    }
    const bool step_due = sched.checkpoint_every_steps > 0 && now_step % sched.checkpoint_every_steps == 0;
    if (checkpoints_ != nullptr && (step_due || TimedCheckpointDue()) && now_step != last_checkpoint_step_) {
      RETURN_IF_ERROR(SaveCheckpointTolerant(/*final=*/false));
    }
  }
  return absl::OkStatus();
}

int64_t Coordinator::EvalEverySteps() const {
  if (spec_.schedule.eval_every_steps >= 0) return spec_.schedule.eval_every_steps;  // 0: only at the end
  // As a Keras fit() with validation data: the test set after every epoch (the last one is the
  // final evaluation).
  return budget_.steps_per_epoch < budget_.total_steps ? budget_.steps_per_epoch : 0;
}

bool Coordinator::TimedCheckpointDue() const {
  const int64_t every = spec_.schedule.checkpoint_every_secs;
  return checkpoints_ != nullptr && every > 0 && env_->NowMicros() - last_checkpoint_micros_ >= every * 1000000;
}

absl::Status Coordinator::RunTrainingPhase(int64_t stop_at) {
  int64_t left = (stop_at * num_workers_) - tracker_->worker_steps();
  while (left > 0) {
    RETURN_IF_ERROR(queue_.error());
    if (stop_requested_ || TimedCheckpointDue()) {
      if (spec_.mode != "sync") queue_.DropWaiting();  // sync rounds must stay whole
      break;
    }
    left -= Feed(left);
    MaybeReport(false);
    RETURN_IF_ERROR(CheckWorkersAlive());
    RETURN_IF_ERROR(CheckPsTrouble());
    if (rolled_back_) break;
    env_->SleepForMicros(kFeedIntervalMicros);
  }
  return WaitPhase();
}

int64_t Coordinator::Feed(int64_t worker_steps_left) {
  const int64_t k = std::max<int64_t>(1, spec_.schedule.steps_per_closure);
  if (spec_.mode == "sync") {
    if (queue_.pending() >= num_workers_) return 0;  // at most one whole round waiting
    const int64_t steps = std::min(k, worker_steps_left / num_workers_);
    for (int w = 0; w < num_workers_; ++w) {
      Closure c;
      c.id = next_closure_id_++;
      c.num_steps = static_cast<int32_t>(steps);
      c.first_step = sync_next_step_;
      c.target_worker = w;
      data_->Assign(w, &c);  // part w's next batches, whichever worker ends up running them
      queue_.Push(c);
    }
    sync_next_step_ += steps;
    return steps * num_workers_;
  }
  int64_t pushed = 0;
  const int64_t want_waiting = 2 * static_cast<int64_t>(std::max(1, pool_->NumAlive()));
  while (worker_steps_left - pushed > 0 && queue_.pending() < want_waiting) {
    Closure c;
    c.id = next_closure_id_++;
    c.num_steps = static_cast<int32_t>(std::min(k, worker_steps_left - pushed));
    queue_.Push(c);
    pushed += c.num_steps;
  }
  return pushed;
}

absl::Status Coordinator::WaitPhase() {
  while (true) {
    absl::Status s = queue_.WaitAllFinished(absl::Now() + absl::Milliseconds(50));
    if (s.code() != absl::StatusCode::kDeadlineExceeded) return s;
    if (stop_requested_ && pool_->NumAlive() == 0) {
      // No worker can finish the closures out: a signal must not wait out the all-workers-lost timeout.
      return absl::CancelledError("stopped while every worker is lost, with closures unfinished");
    }
    MaybeReport(false);
    RETURN_IF_ERROR(CheckWorkersAlive());
    RETURN_IF_ERROR(CheckPsTrouble());
  }
}

absl::Status Coordinator::CheckWorkersAlive() {
  if (pool_->NumAlive() > 0) {
    all_lost_since_micros_ = 0;
    return absl::OkStatus();
  }
  const int64_t now = env_->NowMicros();
  if (all_lost_since_micros_ == 0) all_lost_since_micros_ = now;
  if (now - all_lost_since_micros_ < options_.all_workers_lost_timeout_ms * 1000) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("every worker has been lost for ",
                                             options_.all_workers_lost_timeout_ms / 1000.0,
                                             " s; the job stops at step ", tracker_->global_step()));
}

absl::StatusOr<EvalResult> Coordinator::Evaluate() {
  const int64_t eval_start_micros = env_->NowMicros();
  const int shards = std::max(1, num_workers_ * std::max(1, options_.eval_shards_per_worker));
  std::unique_ptr<EvalAccumulator> acc;
  absl::Status s;
  for (int attempt = 0; attempt < 3; ++attempt) {
    acc = std::make_unique<EvalAccumulator>(shards);
    {
      absl::MutexLock lock(&mu_);
      eval_ = acc.get();
    }
    for (const Closure& c : MakeEvalClosures(shards, next_closure_id_)) queue_.Push(c);
    next_closure_id_ += shards;
    s = WaitPhase();
    if (!s.ok() || !rolled_back_) break;
    rolled_back_ = false;  // sync: the model went back to a checkpoint meanwhile; evaluate that
  }
  {
    absl::MutexLock lock(&mu_);
    eval_ = nullptr;
  }
  RETURN_IF_ERROR(s);
  ASSIGN_OR_RETURN(EvalResult r, acc->Combine(tracker_->global_step(), MetricsKindOf(spec_.model)));
  Log(absl::StrCat("evaluation at step ", r.step, ": ", FormatEval(r)));
  gauges_->OnEval(r, (env_->NowMicros() - eval_start_micros) * 1e-6);
  nlohmann::json j = EvalJson(r);
  j["kind"] = "eval";
  j["step"] = r.step;
  j["wall_time"] = (env_->NowMicros() - tracker_start_micros_) * 1e-6;
  Record(j);
  absl::MutexLock lock(&mu_);
  last_eval_ = r;
  return r;
}

absl::Status Coordinator::SaveCheckpoint() {
  absl::Status write_error;
  RETURN_IF_ERROR(SaveCheckpointOnce(&write_error));
  return write_error;
}

absl::Status Coordinator::SaveCheckpointOnce(absl::Status* write_error) {
  *write_error = absl::OkStatus();
  // A ps restarted without its shards would save none: bring every ps back before saving.
  RETURN_IF_ERROR(CheckPsAlive());
  if (rolled_back_) return absl::OkStatus();  // sync: the state is that of the newest checkpoint
  int64_t step = tracker_->global_step();
  const int64_t save_start_micros = env_->NowMicros();
  // Every handed-out closure has finished here, so the positions match the variables saved.
  absl::StatusOr<std::string> dir =
      checkpoints_->Save(step, spec_json_, {{kDataPositionsFile, DataPositions::ToJson(step, data_->Snapshot())}});
  if (!dir.ok()) {
    // A ps lost while saving: bring it back, then save again (sync mode saves the rolled-back step).
    RETURN_IF_ERROR(CheckPsAlive());
    step = tracker_->global_step();
    dir = checkpoints_->Save(step, spec_json_, {{kDataPositionsFile, DataPositions::ToJson(step, data_->Snapshot())}});
    if (!dir.ok()) {
      *write_error = dir.status();
      return absl::OkStatus();
    }
  }
  last_checkpoint_step_ = step;
  last_checkpoint_micros_ = env_->NowMicros();
  gauges_->OnCheckpoint(step, (last_checkpoint_micros_ - save_start_micros) * 1e-6, DirectoryBytes(*dir));
  Log(absl::StrCat("saved checkpoint ", *dir));
  absl::MutexLock lock(&mu_);
  last_checkpoint_ = *dir;
  return absl::OkStatus();
}

absl::Status Coordinator::SaveCheckpointTolerant(bool final) {
  absl::Status write_error;
  RETURN_IF_ERROR(SaveCheckpointOnce(&write_error));
  if (write_error.ok()) {
    checkpoint_failures_in_row_ = 0;
    return absl::OkStatus();
  }
  ++checkpoint_failures_in_row_;
  gauges_->OnCheckpointFailed();
  // The next try waits for the next interval, not the next feed of the training loop.
  last_checkpoint_micros_ = env_->NowMicros();
  std::string newest;
  {
    absl::MutexLock lock(&mu_);
    newest = last_checkpoint_.empty() ? "none was written in this model dir"
                                      : absl::StrCat("the newest, ", last_checkpoint_, ", is kept");
  }
  const std::string path = absl::StrCat(options_.model_dir, "/ckpt-", tracker_->global_step());
  const int limit = std::max(1, options_.max_checkpoint_failures);
  // Aborted, whatever the write's own code: the job ends as a runtime failure (exit 1).
  if (final) {
    return absl::AbortedError(absl::StrCat("the final checkpoint ", path, " could not be written (", newest,
                                           "): ", write_error.message()));
  }
  if (checkpoint_failures_in_row_ >= limit) {
    return absl::AbortedError(absl::StrCat(checkpoint_failures_in_row_, " checkpoints in a row could not be written (",
                                           "--max_checkpoint_failures=", limit, "; ", newest, "); the last, ",
                                           path, ": ", write_error.message()));
  }
  Log(absl::StrCat("WARNING: the checkpoint ", path, " could not be written (failure ", checkpoint_failures_in_row_,
                   " of at most ", limit, " in a row; ", newest, "); training goes on and tries again at the next ",
                   "interval: ", write_error.message()));
  return absl::OkStatus();
}

void Coordinator::MaybeReport(bool force) {
  const int64_t now = env_->NowMicros();
  const bool line_due = force || now - last_report_micros_ >= options_.progress_interval_ms * 1000;
  const int64_t step = tracker_->global_step();
  if (!line_due && step < next_record_step_) return;
  next_record_step_ = (step / record_every_steps_ + 1) * record_every_steps_;
  ProgressWindow w = tracker_->TakeWindow();
  if (line_due) {
    last_report_micros_ = now;
    Log(ProgressTracker::FormatLine(w));
  }
  gauges_->OnWindow(w);
  gauges_->SetWorkersAlive(pool_->NumAlive());
  nlohmann::json j = ProgressTracker::ToJson(w);
  j["kind"] = "train";
  Record(j);
}

void Coordinator::Record(const nlohmann::json& record) {
  if (metrics_ != nullptr) metrics_->Write(record).IgnoreError();
  if (events_ != nullptr) {
    absl::Status s = events_->Record(record);
    if (!s.ok() && !events_failed_) {
      events_failed_ = true;  // say it once: the job goes on without event files
      Log(absl::StrCat("cannot write TensorBoard events: ", s.message()));
    }
  }
}

ChiefStatusResponse Coordinator::Status() const {
  ChiefStatusResponse r;
  bool ready;
  {
    absl::MutexLock lock(&mu_);
    r.set_state(state_);
    r.set_last_checkpoint(last_checkpoint_);
    if (last_eval_.has_value()) r.set_last_accuracy(last_eval_->accuracy);
    ready = ready_;
  }
  if (!ready) return r;  // tracker_, pool_ and budget_ are set once, before ready_
  r.set_total_steps(budget_.total_steps);
  if (tracker_ != nullptr) {
    r.set_global_step(tracker_->global_step());
    r.set_examples_per_second(tracker_->examples_per_second());
    r.set_last_loss(tracker_->last_loss());
  }
  if (pool_ != nullptr) {
    for (const PoolWorkerInfo& s : pool_->Snapshot()) {
      auto* w = r.add_workers();
      w->set_index(s.index);
      w->set_address(s.peer);
      w->set_alive(s.alive);
      w->set_closures_done(s.closures_done);
      w->set_failures(s.failures);
    }
  }
  return r;
}

}  // namespace pstrain
