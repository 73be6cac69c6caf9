#include "chief/coordinator/worker_pool.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/wire/protocol_version.h"
#include "common/wire/ps_trouble.h"

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
  busy_.resize(workers_.size());
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Start() {
  for (int i = 0; i < num_workers(); ++i) {
    threads_.emplace_back([this, i] { Run(i); });
    for (int r = 0; r < options_.rescue_threads; ++r) threads_.emplace_back([this, i] { RunRescue(i); });
  }
  if (options_.silence_timeout_ms > 0) threads_.emplace_back([this] { Watch(); });
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

void WorkerPool::SetStateLocked(int worker, bool alive, const std::string& error) {
  states_[worker].alive = alive;
  if (!alive) {
    states_[worker].failures++;
    states_[worker].last_error = error;
  }
}

void WorkerPool::SetAlive(int worker, bool alive, const std::string& error) {
  {
    absl::MutexLock lock(&mu_);
    SetStateLocked(worker, alive, error);
  }
  queue_->SetTargetLost(worker, !alive);
}

void WorkerPool::MarkLost(int worker, const absl::Status& cause) {
  SetAlive(worker, false, std::string(cause.message()));
  ReportLost(worker, cause);
}

void WorkerPool::ReportLost(int worker, const absl::Status& cause) {
  absl::Status fatal = sink_->OnWorkerLost(worker, cause);
  if (!fatal.ok()) queue_->Fail(fatal);
}

bool WorkerPool::IsAlive(int worker) {
  absl::MutexLock lock(&mu_);
  return states_[worker].alive;
}

void WorkerPool::Run(int worker) {
  while (!stopping_) {
    if (!IsAlive(worker)) {
      env_->SleepForMicros(options_.poll_interval_ms * 1000);
      if (!stopping_ && PollOnce(worker)) {
        SetAlive(worker, true, "");
        sink_->OnWorkerBack(worker);
      }
      continue;
    }
    DispatchOne(worker, ClosureQueue::TakeMode::kOwn);
  }
}

void WorkerPool::RunRescue(int worker) {
  while (!stopping_) {
    if (!IsAlive(worker)) {
      env_->SleepForMicros(options_.poll_interval_ms * 1000);
      continue;
    }
    DispatchOne(worker, ClosureQueue::TakeMode::kOrphans);
  }
}

bool WorkerPool::DispatchOne(int worker, ClosureQueue::TakeMode mode) {
  std::optional<Closure> closure = queue_->Take(worker, absl::Milliseconds(100), mode);
  if (!closure.has_value()) return false;
  sink_->AssignData(worker, &*closure);
  bool lost_meanwhile = false;
  {
    absl::MutexLock lock(&mu_);
    // Taken just before the watchdog declared this worker lost: that section re-queued what was
    // in flight then, so this one goes back too rather than to a worker nobody watches.
    lost_meanwhile = !states_[worker].alive;
    Busy& busy = busy_[worker];
    if (!lost_meanwhile) {
      if (busy.in_flight.empty()) busy.last_heard_micros = env_->NowMicros();
      busy.in_flight[closure->id] = *closure;
    }
  }
  if (lost_meanwhile) {
    queue_->Requeue(*closure);
    return false;
  }
  absl::Status s = Execute(worker, *closure);
  bool abandoned;
  {
    absl::MutexLock lock(&mu_);
    busy_[worker].in_flight.erase(closure->id);
    abandoned = abandoned_.erase(closure->id) > 0;
  }
  // An abandoned closure was re-queued and the worker declared lost already.
  if (!s.ok() && !abandoned) HandleFailure(worker, *closure, s);
  return true;
}

void WorkerPool::Watch() {
  while (!stopping_) {
    env_->SleepForMicros(options_.poll_interval_ms * 1000);
    for (int w = 0; w < num_workers() && !stopping_; ++w) {
      {
        absl::MutexLock lock(&mu_);
        if (!states_[w].alive || busy_[w].in_flight.empty()) continue;
      }
      const bool answered = Answers(w);
      std::vector<Closure> requeue;
      absl::Status cause;
      {
        absl::MutexLock lock(&mu_);
        Busy& busy = busy_[w];
        if (answered) {
          busy.last_heard_micros = env_->NowMicros();
          continue;
        }
        const int64_t silent_ms = (env_->NowMicros() - busy.last_heard_micros) / 1000;
        if (!states_[w].alive || busy.in_flight.empty() || silent_ms < options_.silence_timeout_ms) continue;
        for (const auto& [id, c] : busy.in_flight) {
          requeue.push_back(c);
          abandoned_.insert(id);
        }
        cause = absl::DeadlineExceededError(
            absl::StrCat("silent for ", silent_ms / 1000.0, " s with ", requeue.size(),
                         " closure(s) in flight (no Handshake answer; the limit is --worker_silence_timeout_secs)"));
        // Lost in the same section that took its closures: one its threads take from now on is
        // re-queued by DispatchOne, never left running on it unwatched.
        SetStateLocked(w, false, std::string(cause.message()));
      }
      for (const Closure& c : requeue) queue_->Requeue(c);
      queue_->SetTargetLost(w, true);  // after the re-queue: see HandleFailure
      ReportLost(w, cause);
    }
  }
}

absl::Status WorkerPool::Execute(int worker, const Closure& closure) {
  WorkerClient* client = workers_[worker];
  if (closure.kind == Closure::Kind::kTrain) {
    RunStepsRequest request;
    request.set_closure_id(closure.id);
    request.set_num_steps(closure.num_steps);
    request.set_first_step(closure.first_step);
    request.set_data_part(std::max(closure.data_part, 0));
    request.set_data_position(std::max<int64_t>(closure.data_position, 0));
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
    {
      absl::MutexLock lock(&mu_);
      states_[worker].ps_failures++;
      states_[worker].last_error = std::string(status.message());
    }
    // The sink pauses the queue first: no other worker may take the closure (and a phase end,
    // e.g. a checkpoint of a ps that lost its shards) before the ps is checked.
    sink_->OnPsTrouble(*ps, status);
    queue_->Requeue(closure);  // the same ids and steps: it runs again once the ps is back
    env_->SleepForMicros(options_.ps_trouble_backoff_ms * 1000);
    return;
  }
  if (!IsRetryableWorkerError(status)) {
    queue_->Fail(absl::Status(status.code(), absl::StrCat(peer, " failed: ", status.message())));
    return;
  }
  // Re-queued first, then lost (which turns this worker's waiting sync closures into orphans all
  // at once): a rescue thread must see this round's orphan beside the later ones, never a later
  // one alone (it would wait on the ps for this one).
  queue_->Requeue(closure);
  bool was_alive;
  {
    absl::MutexLock lock(&mu_);
    was_alive = states_[worker].alive;
  }
  if (was_alive) MarkLost(worker, status);
}

bool WorkerPool::Answers(int worker) {
  HandshakeRequest hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_caller("chief:0");
  HandshakeResponse reply;
  return workers_[worker]->Handshake(hello, &reply, options_.handshake_timeout_ms).ok();
}

bool WorkerPool::PollOnce(int worker) {
  if (!Answers(worker)) return false;
  ConfigureResponse configured;
  absl::Status s = workers_[worker]->Configure(configure_(worker), &configured, options_.configure_timeout_ms);
  if (s.ok()) return true;
  if (!IsRetryableWorkerError(s)) {
    queue_->Fail(absl::Status(s.code(), absl::StrCat(peers_[worker], " rejected its configuration: ", s.message())));
  }
  return false;
}

}  // namespace pstrain
