// Accepts connections on the ps's port and tells tensor-channel clients (kTensorChannelPreface)
// from gRPC clients by their first bytes: the first are served on a thread of their own, the rest
// are handed to gRPC with the bytes already read. One port serves both, so a ps keeps a single
// address in TF_CONFIG, compose files and Kubernetes Services. Part of the RPC edge.
// Thread-safety: Start and Shutdown from one thread; the handlers run on the listener's threads.
#ifndef PSTRAIN_PS_TRANSPORT_SHARED_PORT_LISTENER_H_
#define PSTRAIN_PS_TRANSPORT_SHARED_PORT_LISTENER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace pstrain {

class SharedPortListener {
 public:
  struct Handlers {
    // Takes ownership of `fd`, whose first bytes `preface` were already read.
    std::function<void(int listener_fd, int fd, std::string preface)> grpc;
    // Serves a tensor-channel connection until it ends; the listener closes `fd` afterwards.
    std::function<void(int fd)> tensor_channel;
  };

  // Binds `address` ("0.0.0.0:2222", "[::]:2222", "localhost:0"; port 0 picks a free one) on every
  // address the host resolves to. Unavailable naming the address when it cannot bind.
  static absl::StatusOr<std::unique_ptr<SharedPortListener>> Bind(const std::string& address);
  // Runs Shutdown().
  ~SharedPortListener();

  int port() const { return port_; }
  // Starts accepting. A connection that sends nothing for `preface_timeout` is closed.
  void Start(Handlers handlers, absl::Duration preface_timeout = absl::Seconds(10));
  // Stops accepting, ends every tensor-channel connection (its handler sees the socket fail) and
  // waits for their threads. Idempotent.
  void Shutdown();

 private:
  struct Connection {
    int fd = -1;
    bool finished = false;
    std::thread thread;
  };

  SharedPortListener() = default;
  void AcceptLoop();
  // Reads the preface of connection `id` and dispatches it; runs on the connection's thread.
  void Dispatch(uint64_t id, int listener_fd, int fd);
  // Joins the threads of finished connections.
  void Reap() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::vector<int> listen_fds_;
  int wake_fds_[2] = {-1, -1};  // a pipe that wakes the accept loop for Shutdown
  int port_ = 0;
  Handlers handlers_;
  absl::Duration preface_timeout_;
  std::thread accept_thread_;
  bool started_ = false, stopped_ = false;

  absl::Mutex mu_;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Connection> connections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_SHARED_PORT_LISTENER_H_
