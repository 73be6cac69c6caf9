#include "ps/transport/shared_port_listener.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/config/cluster_spec.h"
#include "ps/transport/tensor_channel_session.h"

namespace pstrain {
namespace {

// epoll tags below kFirstConnectionId: the wake pipe, then the listening sockets.
constexpr uint64_t kWakeTag = 0;
constexpr uint64_t kFirstListenTag = 1;
// A thread moving a frame's bytes waits this long for more before it gives the connection back to
// the event loop (when no other connection waits for a thread): a transfer keeps its thread
// across the short gaps of a busy socket instead of paying a hand-over per gap.
constexpr int kLingerMillis = 1;

int IoThreadCount(int configured) {
  if (configured > 0) return configured;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(2 * cores, 4, 32);
}

}  // namespace

struct SharedPortListener::Connection {
  enum class Owner {
    kArmed,    // waits in epoll for its socket
    kRunning,  // an io thread serves it
    kParked,   // waits for a ps call or for room in the payload budget: no thread, no epoll
  };
  uint64_t id = 0;
  int fd = -1;
  int listener_fd = -1;
  Owner owner = Owner::kArmed;
  absl::Time deadline = absl::InfiniteFuture();
  bool expired = false;       // its deadline passed while an io thread served it
  bool wake_pending = false;  // its call finished while an io thread still served it
  std::string first_bytes;    // the preface, as it arrives
  std::shared_ptr<TensorChannelSession> session;
};

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
  l->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (l->epoll_fd_ < 0 || ::pipe2(l->wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("cannot start the listener of ", address, ": ", std::strerror(errno)));
  }
  return l;
}

SharedPortListener::~SharedPortListener() {
  Shutdown();
  for (int fd : wake_fds_) {
    if (fd >= 0) ::close(fd);
  }
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void SharedPortListener::Start(TensorChannelServer* channel, GrpcHandoff grpc, Options options) {
  options_ = std::move(options);
  env_ = options_.env;
  channel_ = channel;
  grpc_ = std::move(grpc);
  const int io_threads = IoThreadCount(options_.io_threads);
  io_ = std::make_unique<IoThreads>(io_threads);
  threads_ = io_threads + 1;
  {
    absl::MutexLock l(&waker_->mu);
    waker_->listener = this;
  }
  channel_->payloads()->set_on_room([waker = waker_] {
    absl::MutexLock l(&waker->mu);
    if (waker->listener != nullptr) waker->listener->OnRoom();
  });
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.u64 = kWakeTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fds_[0], &e);
  for (size_t i = 0; i < listen_fds_.size(); ++i) {
    e.data.u64 = kFirstListenTag + i;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fds_[i], &e);
  }
  started_ = true;
  loop_thread_ = std::thread([this] { Loop(); });
}

int SharedPortListener::connections() const {
  absl::MutexLock l(&mu_);
  return static_cast<int>(connections_.size());
}

int SharedPortListener::MillisToNextDeadline() {
  absl::Time first = absl::InfiniteFuture();
  {
    absl::MutexLock l(&mu_);
    if (!deadlines_.empty()) first = deadlines_.begin()->first;
  }
  // At least every 100 ms: a faked clock moves too. One more so the deadline has passed on waking.
  const absl::Duration left = std::clamp(first - env_->Now(), absl::ZeroDuration(), absl::Milliseconds(99));
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

void SharedPortListener::Loop() {
  epoll_event events[256];
  for (;;) {
    const int n = ::epoll_wait(epoll_fd_, events, 256, MillisToNextDeadline());
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kWakeTag) return;  // Shutdown
      if (tag < kFirstListenTag + listen_fds_.size()) {
        Accept(listen_fds_[tag - kFirstListenTag]);
        continue;
      }
      absl::MutexLock l(&mu_);
      auto it = connections_.find(tag);
      if (it == connections_.end() || it->second->owner != Connection::Owner::kArmed) continue;
      it->second->owner = Connection::Owner::kRunning;
      io_->Schedule([this, tag] { Run(tag); });
    }
    ExpireDeadlines();
    if (!accepting_ && env_->Now() >= accept_paused_until_) {  // descriptors may be free again
      accepting_ = true;
      for (size_t i = 0; i < listen_fds_.size(); ++i) {
        epoll_event e{};
        e.events = EPOLLIN;
        e.data.u64 = kFirstListenTag + i;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fds_[i], &e);
      }
    }
  }
}

void SharedPortListener::Accept(int listen_fd) {
  for (;;) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: the pending connections stay queued; stop watching for a while
        // instead of spinning on them.
        for (int l : listen_fds_) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, l, nullptr);
        accepting_ = false;
        accept_paused_until_ = env_->Now() + absl::Milliseconds(100);
        channel_->Log(absl::StrCat("out of file descriptors (", std::strerror(errno),
                                   "): not accepting for 100 ms; raise the open-files limit (ulimit -n)"));
      }
      return;  // EAGAIN: all accepted; otherwise the client gave up already
    }
    absl::MutexLock l(&mu_);
    if (static_cast<int>(connections_.size()) >= options_.max_connections || stopping_) {
      ::close(fd);
      ++refused_;
      const absl::Time now = env_->Now();
      if (now - last_refusal_log_ >= absl::Seconds(1)) {
        channel_->Log(absl::StrCat("refused ", refused_, " connection(s): ", connections_.size(),
                                   " are open, the most this ps takes (--max_connections)"));
        last_refusal_log_ = now;
        refused_ = 0;
      }
      continue;
    }
    SetSocketInt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
    auto c = std::make_unique<Connection>();
    c->id = next_id_++;
    c->fd = fd;
    c->listener_fd = listen_fd;
    SetDeadline(c.get(), env_->Now() + options_.preface_timeout);
    epoll_event e{};
    e.events = EPOLLIN | EPOLLONESHOT;
    e.data.u64 = c->id;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
    connections_[c->id] = std::move(c);
  }
}

void SharedPortListener::SetDeadline(Connection* c, absl::Time deadline) {
  if (c->deadline == deadline) return;
  if (c->deadline != absl::InfiniteFuture()) deadlines_.erase({c->deadline, c->id});
  c->deadline = deadline;
  if (deadline != absl::InfiniteFuture()) deadlines_.insert({deadline, c->id});
}

void SharedPortListener::ExpireDeadlines() {
  std::vector<std::unique_ptr<Connection>> closed;
  {
    absl::MutexLock l(&mu_);
    const absl::Time now = env_->Now();
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      Connection* c = connections_.at(deadlines_.begin()->second).get();
      SetDeadline(c, absl::InfiniteFuture());
      if (c->owner == Connection::Owner::kRunning) {
        c->expired = true;  // its io thread closes it
        ::shutdown(c->fd, SHUT_RDWR);
      } else {
        closed.push_back(Forget(c, true));
      }
    }
  }
}

std::unique_ptr<SharedPortListener::Connection> SharedPortListener::Forget(Connection* c, bool close_fd) {
  SetDeadline(c, absl::InfiniteFuture());
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  if (close_fd) ::close(c->fd);
  room_waiters_.erase(c->id);
  auto it = connections_.find(c->id);
  std::unique_ptr<Connection> out = std::move(it->second);
  connections_.erase(it);
  return out;
}

SharedPortListener::Sorted SharedPortListener::Sort(Connection* c) {
  while (c->first_bytes.size() < kPrefaceBytes) {
    char buf[kPrefaceBytes];
    const ssize_t r = ::recv(c->fd, buf, kPrefaceBytes - c->first_bytes.size(), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Sorted::kWait;
    if (r <= 0) return Sorted::kClose;
    c->first_bytes.append(buf, static_cast<size_t>(r));
    const PrefaceKind kind = ClassifyPreface(c->first_bytes);
    if (kind == PrefaceKind::kIncomplete) continue;
    if (kind == PrefaceKind::kOther) {
      std::unique_ptr<Connection> gone;
      {
        absl::MutexLock l(&mu_);
        gone = Forget(c, false);  // gRPC owns the socket now
      }
      grpc_(gone->listener_fd, gone->fd, gone->first_bytes);
      return Sorted::kHandedOff;
    }
    if (kind == PrefaceKind::kLegacy) {
      const std::string refusal = TensorChannelServer::LegacyRefusal();
      (void)!::send(c->fd, refusal.data(), refusal.size(), MSG_NOSIGNAL);  // best effort: it is small
      return Sorted::kClose;
    }
    SetDeadPeerDetection(c->fd);
    c->session = channel_->NewSession(c->fd, std::make_unique<PlainStream>(c->fd), kind, c->deadline);
    c->session->set_wake([waker = waker_, id = c->id] {
      absl::MutexLock l(&waker->mu);
      if (waker->listener != nullptr) waker->listener->Wake(id);
    });
  }
  return Sorted::kSession;
}

void SharedPortListener::Run(uint64_t id) {
  Connection* c;
  {
    absl::MutexLock l(&mu_);
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    c = it->second.get();  // stays: only its running thread forgets a running connection
  }
  for (;;) {
    TensorChannelSession::Wait wait = TensorChannelSession::Wait::kRead;
    if (c->session == nullptr) {
      const Sorted sorted = Sort(c);
      if (sorted == Sorted::kHandedOff) return;
      if (sorted == Sorted::kClose) wait = TensorChannelSession::Wait::kClose;
    }
    if (c->session != nullptr) wait = c->session->Advance();
    const bool socket_wait = wait == TensorChannelSession::Wait::kRead || wait == TensorChannelSession::Wait::kWrite;
    if (socket_wait && c->session != nullptr && c->session->mid_frame() && !io_->Contended()) {
      pollfd p{c->fd, static_cast<short>(wait == TensorChannelSession::Wait::kRead ? POLLIN : POLLOUT), 0};
      if (::poll(&p, 1, kLingerMillis) > 0) {
        bool expired;
        {
          absl::MutexLock l(&mu_);
          expired = c->expired || stopping_;
        }
        if (!expired) continue;
      }
    }
    std::unique_ptr<Connection> closed;  // destroyed unlocked: its session gives budget back
    bool again = false;
    {
      absl::MutexLock l(&mu_);
      if (c->session != nullptr) SetDeadline(c, c->session->deadline());
      if (c->expired || stopping_) wait = TensorChannelSession::Wait::kClose;
      switch (wait) {
        case TensorChannelSession::Wait::kRead:
        case TensorChannelSession::Wait::kWrite: {
          c->owner = Connection::Owner::kArmed;
          epoll_event e{};
          e.events = (wait == TensorChannelSession::Wait::kRead ? EPOLLIN : EPOLLOUT) | EPOLLONESHOT;
          e.data.u64 = id;
          ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &e);
          break;
        }
        case TensorChannelSession::Wait::kCall:
          again = c->wake_pending;  // it finished while this thread still served the connection
          c->wake_pending = false;
          if (!again) c->owner = Connection::Owner::kParked;
          break;
        case TensorChannelSession::Wait::kRoom:
          again = channel_->payloads()->generation() != c->session->room_generation();  // room came meanwhile
          if (!again) {
            c->owner = Connection::Owner::kParked;
            room_waiters_.insert(id);
          }
          break;
        case TensorChannelSession::Wait::kClose:
          closed = Forget(c, true);
          break;
      }
    }
    if (!again) return;
  }
}

void SharedPortListener::Wake(uint64_t id) {
  absl::MutexLock l(&mu_);
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  Connection* c = it->second.get();
  if (c->owner == Connection::Owner::kParked) {
    c->owner = Connection::Owner::kRunning;
    io_->Schedule([this, id] { Run(id); });
  } else {
    c->wake_pending = true;
  }
}

void SharedPortListener::OnRoom() {
  absl::MutexLock l(&mu_);
  for (uint64_t id : room_waiters_) {
    auto it = connections_.find(id);
    if (it == connections_.end() || it->second->owner != Connection::Owner::kParked) continue;
    it->second->owner = Connection::Owner::kRunning;
    io_->Schedule([this, id] { Run(id); });
  }
  room_waiters_.clear();
}

void SharedPortListener::Shutdown() {
  if (stopped_) return;
  stopped_ = true;
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    for (auto& [id, c] : connections_) ::shutdown(c->fd, SHUT_RDWR);  // running sessions fail fast
  }
  if (started_) {
    const char wake = 1;
    (void)!::write(wake_fds_[1], &wake, 1);
    loop_thread_.join();
    {
      absl::MutexLock l(&waker_->mu);
      waker_->listener = nullptr;
    }
    io_->Shutdown();  // queued runs see stopping_ and close their connections
  }
  std::map<uint64_t, std::unique_ptr<Connection>> rest;
  {
    absl::MutexLock l(&mu_);
    for (auto& [id, c] : connections_) ::close(c->fd);
    rest.swap(connections_);
    deadlines_.clear();
    room_waiters_.clear();
  }
  rest.clear();
  for (int fd : listen_fds_) ::close(fd);
  listen_fds_.clear();
}

}  // namespace pstrain
