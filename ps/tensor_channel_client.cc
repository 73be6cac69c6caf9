#include "ps/tensor_channel_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ps/bulk_messages.h"
#include "ps/tensor_channel_wire.h"

namespace pstrain {
namespace {

constexpr char kPsClosed[] = "the ps closed the tensor channel connection (did the ps stop?)";
// A connection attempt gives up after this even when the call's deadline is later, as gRPC's does.
constexpr absl::Duration kConnectTimeout = absl::Seconds(20);
// The most row bytes one pull may answer (the ps's message limit).
constexpr uint64_t kMaxRowsBytes = (uint64_t{1} << 31) - (uint64_t{1} << 20);

int MillisLeft(absl::Time deadline) {
  const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

}  // namespace

TensorChannelClient::TensorChannelClient(const std::string& address, std::string peer) : peer_(std::move(peer)) {
  SplitHostPort(address, &host_, &port_);  // a malformed address fails at Connect, naming the peer
}

TensorChannelClient::~TensorChannelClient() {
  absl::MutexLock l(&mu_);
  for (int fd : idle_) ::close(fd);
}

absl::Status TensorChannelClient::Named(const absl::Status& s) const {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(peer_, ": ", s.message()));
}

absl::StatusOr<int> TensorChannelClient::Connect(absl::Time deadline) const {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host_.c_str(), port_.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host_, ": ", ::gai_strerror(rc)));
  }
  const absl::Time give_up = std::min(deadline, absl::Now() + kConnectTimeout);
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        const int ready = ::poll(&p, 1, MillisLeft(give_up));
        socklen_t len = sizeof(err);
        err = ready <= 0 ? ETIMEDOUT : 0;
        if (ready > 0) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
    if (err != 0) {
      error = std::strerror(err);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    if (absl::Now() >= deadline) return absl::DeadlineExceededError("deadline exceeded while connecting");
    return absl::UnavailableError(absl::StrCat("cannot connect to the tensor channel: ", error));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  SetSocketInt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
  SetDeadPeerDetection(fd);
  FrameIo io(fd, deadline, kPsClosed);
  if (absl::Status s = io.Write({{const_cast<char*>(kTensorChannelPreface.data()), kTensorChannelPreface.size()}});
      !s.ok()) {
    ::close(fd);
    return s;
  }
  return fd;
}

absl::StatusOr<int> TensorChannelClient::Acquire(absl::Time deadline) {
  for (;;) {
    int fd = -1;
    {
      absl::MutexLock l(&mu_);
      if (idle_.empty()) break;
      fd = idle_.back();
      idle_.pop_back();
    }
    // An idle connection has nothing to read; readable means the ps closed or reset it.
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) == 0) return fd;
    ::close(fd);
  }
  return Connect(deadline);
}

void TensorChannelClient::Release(int fd, bool reusable) {
  if (!reusable) {
    ::close(fd);
    return;
  }
  absl::MutexLock l(&mu_);
  idle_.push_back(fd);
}

absl::Status TensorChannelClient::Exchange(const TensorCallRequest& call, const std::vector<absl::string_view>& payload,
                                           absl::Time deadline, TensorCallResponse* answer, uint64_t* payload_bytes,
                                           int* fd) {
  absl::StatusOr<int> conn = Acquire(deadline);
  if (!conn.ok()) return conn.status();
  FrameIo io(*conn, deadline, kPsClosed);
  absl::Status s = io.WriteFrame(call, payload);
  if (s.ok()) s = io.ReadFrameStart(answer, payload_bytes);
  if (!s.ok()) {  // the connection is out of step or gone
    Release(*conn, false);
    return s;
  }
  if (answer->code() != 0) {
    if (*payload_bytes != 0) {
      Release(*conn, false);
      return absl::InternalError("tensor channel protocol violation: the ps sent tensor bytes with an error");
    }
    Release(*conn, true);  // a rejected call leaves the connection in step
    const int code = answer->code();
    return absl::Status(code > 0 && code <= 16 ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kInternal,
                        answer->message());
  }
  *fd = *conn;
  return absl::OkStatus();
}

absl::Status TensorChannelClient::Pull(const PullRequest& request, PullResponse* response, absl::Time deadline) {
  TensorCallRequest call;
  PullRequest* header = call.mutable_pull();
  *header->mutable_shard_names() = request.shard_names();
  header->set_min_version(request.min_version());
  std::vector<absl::string_view> payload;  // the sparse entries' ids follow the message
  for (const SparseRows& r : request.sparse()) {
    SparseRows* h = header->add_sparse();
    h->set_shard_name(r.shard_name());
    h->set_num_ids(r.num_ids());
    call.add_payload_bytes(static_cast<int64_t>(r.ids().size()));
    payload.push_back(r.ids());
  }
  TensorCallResponse answer;
  uint64_t payload_bytes = 0;
  int fd = -1;
  if (absl::Status s = Exchange(call, payload, deadline, &answer, &payload_bytes, &fd); !s.ok()) return Named(s);
  const PullResponse& got = answer.pull();
  const int dense = got.values_size();
  uint64_t announced = 0;
  for (int64_t b : answer.payload_bytes()) announced += static_cast<uint64_t>(std::max<int64_t>(b, 0));
  if (answer.payload_bytes_size() != dense + got.sparse_size() || announced != payload_bytes ||
      dense != request.shard_names_size() || got.sparse_size() != request.sparse_size()) {
    Release(fd, false);
    return Named(absl::InternalError(
        absl::StrCat("tensor channel protocol violation: ", dense, " values and ", got.sparse_size(),
                     " sparse entries with ", answer.payload_bytes_size(), " sizes for ", request.shard_names_size(),
                     " shards and ", request.sparse_size(), " sparse entries")));
  }
  FrameIo io(fd, deadline, kPsClosed);
  for (int i = 0; i < dense + got.sparse_size(); ++i) {
    const size_t bytes = static_cast<size_t>(answer.payload_bytes(i));
    std::string* data;
    if (i < dense) {
      const ShardValue& in = got.values(i);
      data = PrepareValue(i, in.name(), in.version(), in.value().dtype(), in.value().shape(), bytes, response);
    } else {
      const SparseRows& in = got.sparse(i - dense);
      const SparseRows& asked = request.sparse(i - dense);
      // Checked before the buffer is sized: the rows must be those asked for, in whole floats.
      if (in.shard_name() != asked.shard_name() || in.num_ids() != asked.num_ids() || bytes > kMaxRowsBytes ||
          (in.num_ids() == 0 ? bytes != 0 : bytes % (4 * in.num_ids()) != 0)) {
        Release(fd, false);
        return Named(absl::InternalError(
            absl::StrCat("tensor channel protocol violation: ", bytes, " bytes of rows for ", in.num_ids(),
                         " ids of shard ", in.shard_name(), ", asked ", asked.num_ids(), " of ", asked.shard_name())));
      }
      data = PrepareRows(i - dense, in, bytes, response);
    }
    if (absl::Status s = io.Read(data->data(), bytes); !s.ok()) {
      Release(fd, false);
      return Named(s);
    }
  }
  while (response->values_size() > dense) response->mutable_values()->RemoveLast();
  while (response->sparse_size() > got.sparse_size()) response->mutable_sparse()->RemoveLast();
  Release(fd, true);
  return absl::OkStatus();
}

absl::Status TensorChannelClient::Push(const PushRequest& request, PushResponse* response, absl::Time deadline) {
  TensorCallRequest call;
  *call.mutable_push() = PushHeader(request);
  std::vector<absl::string_view> payload;
  for (const ShardGradient& g : request.gradients()) {
    call.add_payload_bytes(static_cast<int64_t>(g.gradient().data().size()));
    payload.push_back(g.gradient().data());
  }
  for (const SparseRows& r : request.sparse()) {
    call.add_payload_bytes(static_cast<int64_t>(r.ids().size()));
    call.add_payload_bytes(static_cast<int64_t>(r.values().size()));
    payload.push_back(r.ids());
    payload.push_back(r.values());
  }
  TensorCallResponse answer;
  uint64_t payload_bytes = 0;
  int fd = -1;
  if (absl::Status s = Exchange(call, payload, deadline, &answer, &payload_bytes, &fd); !s.ok()) return Named(s);
  if (payload_bytes != 0) {
    Release(fd, false);
    return Named(absl::InternalError("tensor channel protocol violation: a push answer carries tensor bytes"));
  }
  Release(fd, true);
  *response = std::move(*answer.mutable_push());
  return absl::OkStatus();
}

}  // namespace pstrain
