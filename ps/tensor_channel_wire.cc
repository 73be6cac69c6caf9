#include "ps/tensor_channel_wire.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

constexpr uint32_t kFrameMagic = 0x46545350;  // "PSTF" read as little-endian bytes
// sendmsg takes at most IOV_MAX (1024 on Linux) parts per call.
constexpr size_t kMaxIovPerCall = 512;

void PutLe(uint64_t v, int bytes, char* out) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint64_t GetLe(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

}  // namespace

void SetSocketInt(int fd, int level, int option, int value) { ::setsockopt(fd, level, option, &value, sizeof(value)); }

void SetDeadPeerDetection(int fd) {
  SetSocketInt(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
  SetSocketInt(fd, IPPROTO_TCP, TCP_KEEPIDLE, 20);
  SetSocketInt(fd, IPPROTO_TCP, TCP_KEEPINTVL, 10);
  SetSocketInt(fd, IPPROTO_TCP, TCP_KEEPCNT, 6);
  SetSocketInt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, 80000);
}

bool SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  return !port->empty();
}

void EncodeFrameHeader(uint32_t message_bytes, uint64_t payload_bytes, char out[kFrameHeaderBytes]) {
  PutLe(kFrameMagic, 4, out);
  PutLe(message_bytes, 4, out + 4);
  PutLe(payload_bytes, 8, out + 8);
}

absl::Status DecodeFrameHeader(const char in[kFrameHeaderBytes], uint32_t* message_bytes, uint64_t* payload_bytes) {
  if (GetLe(in, 4) != kFrameMagic) {
    return absl::InternalError("tensor channel out of step: a frame does not start with the frame magic");
  }
  *message_bytes = static_cast<uint32_t>(GetLe(in + 4, 4));
  *payload_bytes = GetLe(in + 8, 8);
  if (*message_bytes > kMaxFrameMessageBytes) {
    return absl::InternalError(absl::StrCat("tensor channel out of step: a frame announces a ", *message_bytes,
                                            "-byte message (at most ", kMaxFrameMessageBytes, ")"));
  }
  return absl::OkStatus();
}

FrameIo::FrameIo(int fd, absl::Time deadline, std::string peer_close)
    : fd_(fd), deadline_(deadline), peer_close_(std::move(peer_close)) {
  if (deadline_ == absl::InfiniteFuture()) {
    timeval none{};  // no timeout: clears what an earlier caller with a deadline set
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
  }
}

absl::Status FrameIo::ArmTimeout(int option) {
  if (deadline_ == absl::InfiniteFuture()) return absl::OkStatus();
  const absl::Duration left = deadline_ - absl::Now();
  if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("deadline exceeded on the tensor channel");
  // A zero timeval means "no timeout": round up so a few microseconds left still time out.
  const timeval tv = absl::ToTimeval(std::max(left, absl::Microseconds(1)));
  ::setsockopt(fd_, SOL_SOCKET, option, &tv, sizeof(tv));
  return absl::OkStatus();
}

absl::Status FrameIo::Failure(const char* what, int err) const {
  if (err == EAGAIN || err == EWOULDBLOCK) {
    return absl::DeadlineExceededError(absl::StrCat("deadline exceeded while ", what, " on the tensor channel"));
  }
  if (err == 0) return absl::UnavailableError(peer_close_);
  return absl::UnavailableError(
      absl::StrCat("tensor channel connection failed while ", what, ": ", std::strerror(err)));
}

absl::Status FrameIo::Write(std::vector<iovec> parts) {
  size_t first = 0;
  while (first < parts.size()) {
    if (parts[first].iov_len == 0) {
      ++first;
      continue;
    }
    if (absl::Status s = ArmTimeout(SO_SNDTIMEO); !s.ok()) return s;
    msghdr msg{};
    msg.msg_iov = &parts[first];
    msg.msg_iovlen = std::min(parts.size() - first, kMaxIovPerCall);
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Failure("sending", errno);
    }
    size_t left = static_cast<size_t>(n);
    while (left > 0 && first < parts.size()) {
      const size_t k = std::min(left, parts[first].iov_len);
      parts[first].iov_base = static_cast<char*>(parts[first].iov_base) + k;
      parts[first].iov_len -= k;
      left -= k;
      if (parts[first].iov_len == 0) ++first;
    }
  }
  return absl::OkStatus();
}

absl::Status FrameIo::Read(char* dst, size_t n) {
  while (n > 0) {
    if (absl::Status s = ArmTimeout(SO_RCVTIMEO); !s.ok()) return s;
    // MSG_WAITALL: one call (one wake-up) per buffer while the data keeps coming.
    const ssize_t r = ::recv(fd_, dst, n, MSG_WAITALL);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Failure("receiving", errno);
    }
    if (r == 0) return Failure("receiving", 0);
    dst += r;
    n -= static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

absl::Status FrameIo::Skip(uint64_t n) {
  std::vector<char> scratch(static_cast<size_t>(std::min<uint64_t>(n, uint64_t{1} << 20)));
  while (n > 0) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, scratch.size()));
    if (absl::Status s = Read(scratch.data(), k); !s.ok()) return s;
    n -= k;
  }
  return absl::OkStatus();
}

absl::Status FrameIo::WriteFrame(const google::protobuf::MessageLite& message,
                                 const std::vector<absl::string_view>& payload) {
  char header[kFrameHeaderBytes];
  std::string body = message.SerializeAsString();
  uint64_t payload_bytes = 0;
  for (absl::string_view p : payload) payload_bytes += p.size();
  EncodeFrameHeader(static_cast<uint32_t>(body.size()), payload_bytes, header);
  std::vector<iovec> parts;
  parts.reserve(payload.size() + 2);
  parts.push_back({header, kFrameHeaderBytes});
  parts.push_back({body.data(), body.size()});
  for (absl::string_view p : payload) parts.push_back({const_cast<char*>(p.data()), p.size()});
  return Write(std::move(parts));
}

absl::Status ByteBudget::TryTake(int64_t n) {
  absl::MutexLock l(&mu_);
  if (taken_ + n > limit_) {
    return absl::ResourceExhaustedError(absl::StrCat("more than ", limit_,
                                                     " bytes announced and not yet delivered on the tensor channel"));
  }
  taken_ += n;
  return absl::OkStatus();
}

void ByteBudget::Take(int64_t n) {
  absl::MutexLock l(&mu_);
  auto fits = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return taken_ == 0 || taken_ + n <= limit_; };
  mu_.Await(absl::Condition(&fits));
  taken_ += n;
}

void ByteBudget::Give(int64_t n) {
  absl::MutexLock l(&mu_);
  taken_ -= n;
}

ByteReservation::ByteReservation(ByteBudget* budget, int64_t n) : budget_(budget), bytes_(n) { budget_->Take(n); }

void ByteReservation::Release() {
  if (budget_ != nullptr) budget_->Give(bytes_);
  budget_ = nullptr;
}

int64_t ByteBudget::taken() const {
  absl::MutexLock l(&mu_);
  return taken_;
}

absl::Status FrameIo::ReadFrameStart(google::protobuf::MessageLite* message, uint64_t* payload_bytes,
                                     ByteBudget* budget) {
  closed_between_frames_ = false;
  char header[kFrameHeaderBytes];
  if (absl::Status s = ArmTimeout(SO_RCVTIMEO); !s.ok()) return s;
  // The first byte on its own: a close here is the peer ending the connection, not an error.
  ssize_t r;
  do {
    r = ::recv(fd_, header, 1, 0);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) {
    closed_between_frames_ = r == 0;
    return Failure("receiving", r == 0 ? 0 : errno);
  }
  if (absl::Status s = Read(header + 1, kFrameHeaderBytes - 1); !s.ok()) return s;
  uint32_t message_bytes = 0;
  if (absl::Status s = DecodeFrameHeader(header, &message_bytes, payload_bytes); !s.ok()) return s;
  // Grown piece by piece as bytes arrive: announcing a large message allocates nothing.
  constexpr size_t kPiece = size_t{64} << 10;
  std::string body;
  int64_t taken = 0;
  absl::Status read;
  while (read.ok() && body.size() < message_bytes) {
    const size_t k = std::min<size_t>(kPiece, message_bytes - body.size());
    if (budget != nullptr) {
      read = budget->TryTake(static_cast<int64_t>(k));
      if (!read.ok()) break;
      taken += static_cast<int64_t>(k);
    }
    body.resize(body.size() + k);
    read = Read(body.data() + body.size() - k, k);
  }
  if (budget != nullptr) budget->Give(taken);
  if (!read.ok()) return read;
  if (!message->ParseFromString(body)) {
    return absl::InternalError("tensor channel out of step: a frame's message does not parse");
  }
  return absl::OkStatus();
}

}  // namespace pstrain
