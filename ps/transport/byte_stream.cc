#include "ps/transport/byte_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

// sendmsg takes at most IOV_MAX (1024 on Linux) parts per call.
constexpr size_t kMaxIovPerCall = 512;

}  // namespace

absl::Status SocketError(const char* what, int err) {
  return absl::UnavailableError(
      absl::StrCat("tensor channel connection failed while ", what, ": ", std::strerror(err)));
}

IoResult PlainStream::Read(char* dst, size_t n) {
  IoResult r;
  for (;;) {
    const ssize_t got = ::recv(fd_, dst, n, 0);
    if (got > 0) {
      r.bytes = static_cast<size_t>(got);
    } else if (got == 0) {
      r.eof = true;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      r.want = Want::kRead;
    } else {
      r.error = SocketError("receiving", errno);
    }
    return r;
  }
}

IoResult PlainStream::Write(const iovec* parts, size_t count) {
  IoResult r;
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(parts);
  msg.msg_iovlen = std::min(count, kMaxIovPerCall);
  for (;;) {
    const ssize_t sent = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (sent >= 0) {
      r.bytes = static_cast<size_t>(sent);
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      r.want = Want::kWrite;
    } else {
      r.error = SocketError("sending", errno);
    }
    return r;
  }
}

absl::Status WaitForSocket(int fd, Want want, absl::Time deadline, Env* env) {
  for (;;) {
    const absl::Duration left = deadline - env->Now();
    if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("deadline exceeded on the tensor channel");
    pollfd p{fd, static_cast<short>(want == Want::kWrite ? POLLOUT : POLLIN), 0};
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(std::min(left, absl::Milliseconds(99)))) + 1;
    const int ready = ::poll(&p, 1, ms);
    if (ready > 0) return absl::OkStatus();  // readable, writable, or failed: the next call tells
    if (ready < 0 && errno != EINTR) return SocketError("waiting", errno);
  }
}

void SetSocketInt(int fd, int level, int option, int value) { ::setsockopt(fd, level, option, &value, sizeof(value)); }

void SetDeadPeerDetection(int fd) {
  SetSocketInt(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
  SetSocketInt(fd, IPPROTO_TCP, TCP_KEEPIDLE, 20);
  SetSocketInt(fd, IPPROTO_TCP, TCP_KEEPINTVL, 10);
  SetSocketInt(fd, IPPROTO_TCP, TCP_KEEPCNT, 6);
  SetSocketInt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, 80000);
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace pstrain
