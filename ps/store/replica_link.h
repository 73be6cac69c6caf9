// ReplicaLink: a primary ps's forwarding of applied updates to the ps that holds their backups
// (ps_replicas 1). Each forward is a push whose replica_versions give the version each update had
// on the primary, so the backup applies them in the primary's order even though several forwards
// travel at once (`in_flight` sender threads, each its own connection). A forward is a header and
// the update's bytes, sent from the buffers the worker's push arrived in (no copy): the caller keeps
// them until `done` runs. `done` runs once the backup has the update: the primary answers the
// worker's push only then, so no acknowledged update exists on one ps only while both are up.
// Forwards wait on threads of their own, never on the threads serving pushes: two ps that back
// each other up would otherwise each wait, with every serving thread, for the other's answer.
//
// Errors: UNAVAILABLE / DEADLINE_EXCEEDED are retried with backoff for up to `retry_for` (a
// backup restarting), then the forward fails UNAVAILABLE naming the backup. Any other code is
// permanent: the link logs it once, fails this forward and every later one with
// FAILED_PRECONDITION naming both ps tasks and the cause, and never retries it. Detach (the
// backup was lost and the chief said so) answers pending and later forwards OK at once: the
// primary's copy is then the only one. Stop (the ps is stopping) fails them UNAVAILABLE and ends
// the retries in progress.
// Thread-safety: all methods are thread-safe; `done` runs on a sender thread (or the caller's,
// after Detach, Stop or a permanent failure) and must not block.
#ifndef PSTRAIN_PS_STORE_REPLICA_LINK_H_
#define PSTRAIN_PS_STORE_REPLICA_LINK_H_

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/platform/env.h"
#include "proto/ps.pb.h"

namespace pstrain {

// Sends one push, as a header and its bytes (common/wire/push_parts.h), to a ps and waits for its
// answer (a PsClient's PushParts, in the ps main).
using ReplicaSender = std::function<absl::Status(const PushRequest& header, absl::Span<const absl::string_view> payload,
                                                 PushResponse* response)>;
// Sends a shard's whole state to the ps holding its backup (PsService.InstallReplica).
using ReplicaInstaller = std::function<absl::Status(const ReplicaStateRequest& request)>;
struct ReplicaPeer {
  ReplicaSender push;          // never null
  ReplicaInstaller install;    // null: re-attaching a returned backup fails with Unimplemented
};
// How to reach ps task `ps`.
using ReplicaConnector = std::function<ReplicaPeer(int ps)>;

class ReplicaLink {
 public:
  using DoneCallback = std::function<void(absl::Status)>;

  struct Options {
    std::string from = "ps:0";  // this ps, for messages
    std::string to = "ps:1";    // the backup's ps
    int in_flight = 4;          // forwards sent at once
    absl::Duration retry_for = absl::Seconds(60);
    Env* env = nullptr;  // the clock of the retries; not owned. REQUIRED: non-null (the PsServer's)
    std::function<void(const std::string&)> log;  // may be null
  };

  ReplicaLink(Options options, ReplicaPeer peer);
  // Fails the forwards still queued with UNAVAILABLE and joins the senders.
  ~ReplicaLink();

  // Queues a forward: `header` (a push header with replica_versions) and its `payload`
  // (common/wire/push_parts.h), whose bytes must stay valid until `done` runs.
  void Forward(PushRequest header, std::vector<absl::string_view> payload, DoneCallback done);
  // Sends a shard's state to the backup (blocking), retrying as forwards do; the link's permanent
  // failure, or the call's.
  absl::Status Install(const ReplicaStateRequest& request);
  // The backup is gone for good: pending and later forwards are answered OK without sending.
  void Detach(const std::string& why);
  // The ps is stopping: pending forwards, the retries in progress and later forwards fail
  // UNAVAILABLE.
  void Stop();
  // OK while forwarding; the permanent failure once one happened.
  absl::Status status() const;
  bool detached() const;
  int64_t forwarded() const;

 private:
  struct Pending {
    PushRequest header;
    std::vector<absl::string_view> payload;
    DoneCallback done;
  };
  void SendLoop();
  // One call with its retries (forwards and installs); the status to answer it with.
  absl::Status Send(const std::function<absl::Status()>& call);

  const Options options_;
  Env* const env_;
  const ReplicaPeer peer_;
  mutable absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool detached_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  int64_t forwarded_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> senders_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_REPLICA_LINK_H_
