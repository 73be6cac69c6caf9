#include "chief/worker_pool.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/protocol_version.h"
#include "common/ps_trouble.h"

namespace pstrain {

bool IsRetryableWorkerError(const absl::Status& status) {
  // A worker process that restarted between two calls answers "not configured yet": it is back,
  // and polling re-configures it.
  if (status.code() == absl::StatusCode::kFailedPrecondition &&
      absl::StrContains(status.message(), "not configured")) {
    return true;
  }
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

WorkerPool::WorkerPool(Env* env, std::vector<WorkerClient*> workers, ClosureQueue* queue, WorkerPoolSink* sink,
                       ConfigureFn configure, WorkerPoolOptions options)
    : env_(env),
      workers_(std::move(workers)),
      queue_(queue),
      sink_(sink),
      configure_(std::move(configure)),
      options_(options) {
  for (WorkerClient* w : workers_) peers_.push_back(w->peer());
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < workers_.size(); ++i) {
    PoolWorkerInfo s;
    s.index = static_cast<int>(i);
    s.peer = peers_[i];
    states_.push_back(s);
  }
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Start() {
  for (int i = 0; i < num_workers(); ++i) threads_.emplace_back([this, i] { Run(i); });
}

void WorkerPool::Stop() {
  stopping_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

int WorkerPool::NumAlive() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const PoolWorkerInfo& s : states_) n += s.alive ? 1 : 0;
  return n;
}

std::vector<PoolWorkerInfo> WorkerPool::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return states_;
}

void WorkerPool::SetAlive(int worker, bool alive, const std::string& error) {
  absl::MutexLock lock(&mu_);
  states_[worker].alive = alive;
  if (!alive) {
    states_[worker].failures++;
    states_[worker].last_error = error;
  }
}

void WorkerPool::Run(int worker) {
  while (!stopping_) {
    bool alive;
    {
      absl::MutexLock lock(&mu_);
      alive = states_[worker].alive;
    }
    if (!alive) {
      env_->SleepForMicros(options_.poll_interval_ms * 1000);
      if (!stopping_ && PollOnce(worker)) {
        SetAlive(worker, true, "");
        sink_->OnWorkerBack(worker);
      }
      continue;
    }
    std::optional<Closure> closure = queue_->Take(worker, absl::Milliseconds(100));
    if (!closure.has_value()) continue;
    absl::Status s = Execute(worker, *closure);
    if (!s.ok()) HandleFailure(worker, *closure, s);
  }
}

absl::Status WorkerPool::Execute(int worker, const Closure& closure) {
  WorkerClient* client = workers_[worker];
  if (closure.kind == Closure::Kind::kTrain) {
    RunStepsRequest request;
    request.set_closure_id(closure.id);
    request.set_num_steps(closure.num_steps);
    request.set_first_step(closure.first_step);
    RunStepsResponse response;
    absl::Status s = client->RunSteps(request, &response, options_.run_steps_timeout_ms);
    if (!s.ok()) return s;
    queue_->Finish(closure, [&] { sink_->OnTrainResult(worker, closure, response); });
  } else {
    EvaluateRequest request;
    request.set_shard_index(closure.shard_index);
    request.set_num_shards(closure.num_shards);
    EvaluateResponse response;
    absl::Status s = client->Evaluate(request, &response, options_.evaluate_timeout_ms);
    if (!s.ok()) return s;
    queue_->Finish(closure, [&] { sink_->OnEvalResult(worker, closure, response); });
  }
  absl::MutexLock lock(&mu_);
  states_[worker].closures_done++;
  return absl::OkStatus();
}

void WorkerPool::HandleFailure(int worker, const Closure& closure, const absl::Status& status) {
  const std::string& peer = peers_[worker];
  if (std::optional<int> ps = PsTroubleIndex(status); ps.has_value()) {
    queue_->Requeue(closure);  // the same ids and steps: it runs again once the ps is back
    {
      absl::MutexLock lock(&mu_);
      states_[worker].ps_failures++;
      states_[worker].last_error = std::string(status.message());
    }
    sink_->OnPsTrouble(*ps, status);
    env_->SleepForMicros(options_.ps_trouble_backoff_ms * 1000);
    return;
  }
  if (!IsRetryableWorkerError(status)) {
    queue_->Fail(absl::Status(status.code(), absl::StrCat(peer, " failed: ", status.message())));
    return;
  }
  queue_->Requeue(closure);
  SetAlive(worker, false, std::string(status.message()));
  absl::Status fatal = sink_->OnWorkerLost(worker, status);
  if (!fatal.ok()) queue_->Fail(fatal);
}

bool WorkerPool::PollOnce(int worker) {
  HandshakeRequest hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_caller("chief:0");
  HandshakeResponse reply;
  if (!workers_[worker]->Handshake(hello, &reply, options_.handshake_timeout_ms).ok()) return false;
  ConfigureResponse configured;
  absl::Status s = workers_[worker]->Configure(configure_(worker), &configured, options_.configure_timeout_ms);
  if (s.ok()) return true;
  if (!IsRetryableWorkerError(s)) {
    queue_->Fail(absl::Status(s.code(), absl::StrCat(peers_[worker], " rejected its configuration: ", s.message())));
  }
  return false;
}

}  // namespace pstrain
