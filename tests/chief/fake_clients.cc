#include "tests/chief/fake_clients.h"

#include <thread>

#include "common/wire/ps_trouble.h"

namespace pstrain {

absl::Status FakeWorker::RunSteps(const RunStepsRequest& r, RunStepsResponse* out, int64_t) {
  if (down) return absl::UnavailableError("connection refused");
  if (!run_error.ok()) return run_error;
  std::this_thread::sleep_for(std::chrono::microseconds(sleep_micros.load()));
  if (runs_before_failing >= 0 && runs_before_failing-- == 0) {
    if (down_with != nullptr) *down_with = true;
    down = true;
    return absl::UnavailableError("Socket closed");
  }
  if (ps_trouble_when && !ps_trouble_done && ps_trouble_when()) {
    ps_trouble_done = true;
    if (ps_trouble_do) ps_trouble_do();
    return PsTroubleStatus(ps_trouble_ps, absl::UnavailableError(absl::StrCat(
                                              "ps:", ps_trouble_ps, " at fake: the ps closed the connection")));
  }
  if (runs_before_silence >= 0 && runs_before_silence-- == 0) {
    silent = true;
    while (silent) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (fail_next_runs > 0) {
    --fail_next_runs;
    down = true;
    return absl::UnavailableError("Socket closed");
  }
  {
    absl::MutexLock lock(&mu);
    runs.push_back(r);
  }
  steps_run += r.num_steps();
  out->set_closure_id(r.closure_id());
  out->set_steps_done(r.num_steps());
  out->set_examples(r.num_steps() * per_step_batch_);
  out->set_loss_sum(out->examples() * 1.0);
  out->set_correct(out->examples() / 2);
  out->set_max_staleness(index_ + 1);
  return absl::OkStatus();
}

absl::Status FakeWorker::Evaluate(const EvaluateRequest& r, EvaluateResponse* out, int64_t) {
  if (down) return absl::UnavailableError("connection refused");
  const int64_t begin = test_examples_ * r.shard_index() / r.num_shards();
  const int64_t end = test_examples_ * (r.shard_index() + 1) / r.num_shards();
  {
    absl::MutexLock lock(&mu);
    eval_shards.insert(r.shard_index());
  }
  out->set_examples(end - begin);
  out->set_loss_sum(0.5 * (end - begin));
  out->set_correct((end - begin) * 9 / 10);
  return absl::OkStatus();
}

}  // namespace pstrain
