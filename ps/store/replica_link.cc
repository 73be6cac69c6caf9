#include "ps/store/replica_link.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "common/platform/resource_errors.h"

namespace pstrain {
namespace {

bool Retryable(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kDeadlineExceeded;
}

}  // namespace

ReplicaLink::ReplicaLink(Options options, ReplicaPeer peer)
    : options_(std::move(options)), env_(options_.env), peer_(std::move(peer)) {
  const int n = std::max(1, options_.in_flight);
  StartThreadsOrStop(
      &senders_, [&] { for (int i = 0; i < n; ++i) senders_.emplace_back([this] { SendLoop(); }); },
      [this] { Stop(); });
}

ReplicaLink::~ReplicaLink() {
  Stop();
  for (std::thread& t : senders_) t.join();
}

void ReplicaLink::Forward(PushRequest header, std::vector<absl::string_view> payload, DoneCallback done) {
  absl::Status now;
  {
    absl::MutexLock l(&mu_);
    if (detached_) {
      now = absl::OkStatus();
    } else if (!broken_.ok()) {
      now = broken_;
    } else if (stopping_) {
      now = absl::UnavailableError(absl::StrCat(options_.from, " is stopping"));
    } else {
      queue_.push_back({std::move(header), std::move(payload), std::move(done)});
      return;
    }
  }
  done(now);
}

void ReplicaLink::Stop() {
  absl::MutexLock l(&mu_);
  stopping_ = true;  // the senders fail what is queued (Send), then end
}

void ReplicaLink::SendLoop() {
  for (;;) {
    Pending p;
    {
      absl::MutexLock l(&mu_);
      mu_.Await(absl::Condition(
          +[](ReplicaLink* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stopping_ || !self->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // stopping
      p = std::move(queue_.front());
      queue_.pop_front();
    }
    p.done(Send([this, &p] {
      PushResponse response;
      return peer_.push(p.header, p.payload, &response);
    }));
  }
}

void ReplicaLink::Detach(const std::string& why) {
  {
    absl::MutexLock l(&mu_);
    if (detached_) return;
    detached_ = true;
  }
  if (options_.log) options_.log(absl::StrCat("backup link to ", options_.to, " detached: ", why));
}

absl::Status ReplicaLink::status() const {
  absl::MutexLock l(&mu_);
  return broken_;
}

bool ReplicaLink::detached() const {
  absl::MutexLock l(&mu_);
  return detached_;
}

int64_t ReplicaLink::forwarded() const {
  absl::MutexLock l(&mu_);
  return forwarded_;
}

absl::Status ReplicaLink::Install(const ReplicaStateRequest& request) {
  if (!peer_.install) {
    return absl::UnimplementedError(absl::StrCat(options_.from, " cannot send shard states to ", options_.to));
  }
  return Send([this, &request] { return peer_.install(request); });
}

absl::Status ReplicaLink::Send(const std::function<absl::Status()>& call) {
  const int64_t start = env_->NowMicros();
  absl::Duration backoff = absl::Milliseconds(20);
  for (int attempt = 0;; ++attempt) {
    {
      absl::MutexLock l(&mu_);
      if (detached_) return absl::OkStatus();
      if (!broken_.ok()) return broken_;
      if (stopping_) return absl::UnavailableError(absl::StrCat(options_.from, " is stopping"));
    }
    absl::Status s = call();
    if (s.ok()) {
      absl::MutexLock l(&mu_);
      ++forwarded_;
      return s;
    }
    const absl::Duration waited = absl::Microseconds(env_->NowMicros() - start);
    if (!Retryable(s)) {
      absl::Status broken = absl::FailedPreconditionError(absl::StrCat(
          options_.from, " cannot keep its backup on ", options_.to, " up to date: ", s.message(),
          " (a permanent error: forwarding stopped; pushes to the shards it backs up fail until the chief "
          "re-creates the shards)"));
      bool first = false;
      {
        absl::MutexLock l(&mu_);
        if (detached_) return absl::OkStatus();
        first = broken_.ok();
        if (first) broken_ = broken;
      }
      if (first && options_.log) options_.log(std::string(broken.message()));
      return broken;
    }
    if (waited >= options_.retry_for) {
      return absl::UnavailableError(absl::StrCat(options_.from, " could not reach its backup ", options_.to, " for ",
                                                 absl::FormatDuration(waited), " (", attempt + 1,
                                                 " tries): ", s.message()));
    }
    // Wait for the backoff, or less when the link is detached or stopping meanwhile.
    absl::MutexLock l(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](ReplicaLink* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
                               return self->detached_ || self->stopping_;
                             },
                             this),
                         backoff);
    if (stopping_) return absl::UnavailableError(absl::StrCat(options_.from, " is stopping"));
    backoff = std::min(backoff * 2, absl::Seconds(1));
  }
}

}  // namespace pstrain
