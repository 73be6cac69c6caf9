// Accepts every connection on the ps's port and tells tensor-channel clients (their preface) from
// gRPC clients by their first bytes: gRPC's are handed to gRPC with the bytes already read, the
// channel's are served here. One port serves both, so a ps keeps a single address in TF_CONFIG,
// compose files and Kubernetes Services.
//
// One event-loop thread (epoll) watches every connection that waits for its peer, and a fixed set
// of io threads (io_threads.h) moves the bytes of those that have some: a connection holds a
// thread only while it has bytes to move or a call to start, so idle and stalled peers cost a
// socket each, never a thread. Bounds: at most `max_connections` connections at once (more are
// closed at accept, with a log line at most once a second); a connection must send its preface,
// finish TLS and its hello within `preface_timeout`, and once a frame's first byte arrived the rest
// within the channel's frame timeout, or it is closed. Deadlines follow the Env's clock, checked
// at least every 100 ms.
// Thread-safety: Start and Shutdown from one thread; the rest is internal.
#ifndef PSTRAIN_PS_TRANSPORT_SHARED_PORT_LISTENER_H_
#define PSTRAIN_PS_TRANSPORT_SHARED_PORT_LISTENER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/platform/env.h"
#include "common/security/call_policy.h"
#include "ps/transport/io_threads.h"
#include "ps/transport/tensor_channel_server.h"

namespace pstrain {

class SharedPortListener {
 public:
  struct Options {
    int max_connections = 4096;  // tensor-channel connections and those not sorted yet
    absl::Duration preface_timeout = absl::Seconds(10);
    int io_threads = 0;  // 0: twice the cores, at least 4, at most 32
    Env* env = nullptr;  // the clock of the deadlines; not owned. REQUIRED: non-null
    SecurityLog log;     // refused connections; empty: std::cerr
  };
  // Takes ownership of `fd` (non-blocking), whose first bytes `first_bytes` were already read.
  using GrpcHandoff = std::function<void(int listener_fd, int fd, std::string first_bytes)>;

  // Binds `address` ("0.0.0.0:2222", "[::]:2222", "localhost:0"; port 0 picks a free one) on every
  // address the host resolves to. Unavailable naming the address when it cannot bind;
  // InvalidArgument when it is not host:port.
  static absl::StatusOr<std::unique_ptr<SharedPortListener>> Bind(const std::string& address);
  // Runs Shutdown().
  ~SharedPortListener();

  int port() const { return port_; }
  // Starts accepting. `channel` is not owned and must outlive Shutdown().
  void Start(TensorChannelServer* channel, GrpcHandoff grpc, Options options);
  // Connections held now (gRPC's excluded).
  int connections() const;
  // Threads this listener runs (the event loop and the io threads).
  int threads() const { return threads_; }
  // Stops accepting, ends every tensor-channel connection and waits for the io threads. Idempotent.
  void Shutdown();

 private:
  struct Connection;
  // Lets a session's wake outlive the listener harmlessly.
  struct Waker {
    absl::Mutex mu;
    SharedPortListener* listener ABSL_GUARDED_BY(mu) = nullptr;
  };

  SharedPortListener() = default;
  void Loop();
  void Accept(int listen_fd);
  void ExpireDeadlines();
  int MillisToNextDeadline();
  // Serves connection `id` on an io thread until it waits.
  void Run(uint64_t id);
  // Reads the preface of `c`: a session, a handoff to gRPC, or the end.
  enum class Sorted { kWait, kSession, kHandedOff, kClose };
  Sorted Sort(Connection* c);
  void Wake(uint64_t id);
  void OnRoom();
  void SetDeadline(Connection* c, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets `c` (closing its socket unless gRPC took it); the caller destroys what is returned
  // after unlocking (a session gives budget back, which takes the lock).
  std::unique_ptr<Connection> Forget(Connection* c, bool close_fd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::vector<int> listen_fds_;
  int epoll_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a pipe that wakes the loop for Shutdown
  int port_ = 0;
  int threads_ = 0;
  Options options_;
  Env* env_ = nullptr;
  TensorChannelServer* channel_ = nullptr;
  GrpcHandoff grpc_;
  std::unique_ptr<IoThreads> io_;
  std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
  std::thread loop_thread_;
  bool started_ = false, stopped_ = false;
  absl::Time accept_paused_until_ = absl::InfinitePast();  // loop thread only
  bool accepting_ = true;                                  // loop thread only
  absl::Time last_refusal_log_ = absl::InfinitePast();     // loop thread only
  int64_t refused_ = 0;                                    // loop thread only

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1000;
  std::map<uint64_t, std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<absl::Time, uint64_t>> deadlines_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> room_waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_SHARED_PORT_LISTENER_H_
