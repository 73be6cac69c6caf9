#include "ps/transport/shared_port_listener.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "ps/transport/tensor_channel_wire.h"

namespace pstrain {
absl::StatusOr<std::unique_ptr<SharedPortListener>> SharedPortListener::Bind(const std::string& address) {
  std::string host, port;
  if (!SplitHostPort(address, &host, &port)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot listen on \"", address, "\": expected host:port"));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address, ": ", ::gai_strerror(rc)));
  }
  bool has_v4 = false;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) has_v4 |= a->ai_family == AF_INET;
  std::unique_ptr<SharedPortListener> l(new SharedPortListener);
  std::string error;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    sockaddr_storage sa{};
    std::memcpy(&sa, a->ai_addr, a->ai_addrlen);
    if (l->port_ != 0) {  // port 0: every address gets the port the first one was given
      if (a->ai_family == AF_INET) reinterpret_cast<sockaddr_in*>(&sa)->sin_port = htons(l->port_);
      if (a->ai_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port = htons(l->port_);
    }
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    SetSocketInt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
    // "[::]" alone also takes IPv4; next to an IPv4 address the two must not overlap.
    if (a->ai_family == AF_INET6) SetSocketInt(fd, IPPROTO_IPV6, IPV6_V6ONLY, has_v4 ? 1 : 0);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      continue;
    }
    if (l->port_ == 0) {
      sockaddr_storage bound{};
      socklen_t len = sizeof(bound);
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      l->port_ = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                                  : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    }
    l->listen_fds_.push_back(fd);
  }
  ::freeaddrinfo(found);
  if (l->listen_fds_.empty()) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address, ": ", error.empty() ? "no address" : error,
                                               " (is the port in use, or the host not an address of this machine?)"));
  }
  if (::pipe2(l->wake_fds_, O_CLOEXEC) != 0) return absl::InternalError("cannot create the listener's wake-up pipe");
  return l;
}

SharedPortListener::~SharedPortListener() {
  Shutdown();
  for (int fd : wake_fds_) {
    if (fd >= 0) ::close(fd);
  }
}

void SharedPortListener::Start(Handlers handlers, absl::Duration preface_timeout) {
  handlers_ = std::move(handlers);
  preface_timeout_ = preface_timeout;
  started_ = true;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

void SharedPortListener::AcceptLoop() {
  std::vector<pollfd> fds;
  for (int fd : listen_fds_) fds.push_back({fd, POLLIN, 0});
  fds.push_back({wake_fds_[0], POLLIN, 0});
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds.back().revents != 0) return;  // Shutdown
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const int fd = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        // Out of descriptors: the pending connection stays queued, so back off instead of spinning.
        if (errno == EMFILE || errno == ENFILE) ::poll(nullptr, 0, 100);
        continue;  // otherwise the client gave up already: keep serving the others
      }
      SetSocketInt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
      absl::MutexLock l(&mu_);
      Reap();
      if (closing_) {
        ::close(fd);
        continue;
      }
      const uint64_t id = next_id_++;
      Connection& c = connections_[id];
      c.fd = fd;
      const int listener_fd = fds[i].fd;
      c.thread = std::thread([this, listener_fd, fd, id] {
        Dispatch(id, listener_fd, fd);
        absl::MutexLock l(&mu_);
        auto it = connections_.find(id);
        if (it != connections_.end()) it->second.finished = true;
      });
    }
  }
}

void SharedPortListener::Dispatch(uint64_t id, int listener_fd, int fd) {
  // Forgets `fd` (closing it unless gRPC takes it) under the lock, so Shutdown never touches a
  // reused number. False when the listener is closing: `fd` was closed instead of handed over.
  auto release = [this, id, fd](bool close_it) {
    absl::MutexLock l(&mu_);
    auto it = connections_.find(id);
    if (it != connections_.end()) it->second.fd = -1;
    if (close_it || closing_) ::close(fd);
    return !closing_;
  };
  char preface[kTensorChannelPreface.size()];
  size_t got = 0;
  const absl::Time deadline = absl::Now() + preface_timeout_;
  while (got < sizeof(preface) && std::memcmp(preface, kTensorChannelPreface.data(), got) == 0) {
    pollfd p{fd, POLLIN, 0};
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (ms <= 0 || ::poll(&p, 1, ms) <= 0) {
      release(true);
      return;
    }
    const ssize_t r = ::recv(fd, preface + got, sizeof(preface) - got, 0);
    if (r <= 0) {
      release(true);
      return;
    }
    got += static_cast<size_t>(r);
  }
  if (got == sizeof(preface) && std::memcmp(preface, kTensorChannelPreface.data(), got) == 0) {
    SetDeadPeerDetection(fd);
    handlers_.tensor_channel(fd);
    release(true);
    return;
  }
  if (!release(false)) return;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);  // gRPC's endpoints expect it
  handlers_.grpc(listener_fd, fd, std::string(preface, got));
}

void SharedPortListener::Reap() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (it->second.finished) {
      it->second.thread.join();
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void SharedPortListener::Shutdown() {
  if (stopped_) return;
  stopped_ = true;
  {
    absl::MutexLock l(&mu_);
    closing_ = true;
  }
  if (started_) {
    const char wake = 1;
    (void)!::write(wake_fds_[1], &wake, 1);
    accept_thread_.join();
  }
  for (int fd : listen_fds_) ::close(fd);
  listen_fds_.clear();
  std::vector<std::thread> threads;
  {
    absl::MutexLock l(&mu_);
    for (auto& [id, c] : connections_) {
      if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);
      threads.push_back(std::move(c.thread));
    }
  }
  for (std::thread& t : threads) t.join();
  absl::MutexLock l(&mu_);
  connections_.clear();
}

}  // namespace pstrain
