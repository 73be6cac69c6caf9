#include "ps/transport/tensor_channel_client.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/config/cluster_spec.h"
#include "common/platform/status_macros.h"
#include "common/wire/protocol_version.h"
#include "common/wire/push_parts.h"
#include "ps/transport/bulk_messages.h"
#include "ps/transport/tensor_channel_wire.h"

namespace pstrain {
namespace {

constexpr char kPsClosed[] = "the ps closed the tensor channel connection (did the ps stop?)";
// A connection attempt gives up after this even when the call's deadline is later, as gRPC's does.
constexpr absl::Duration kConnectTimeout = absl::Seconds(20);

absl::Status StatusOf(const TensorCallResponse& answer) {
  const int code = answer.code();
  if (code == 0) return absl::OkStatus();
  return absl::Status(code > 0 && code <= 16 ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kInternal,
                      answer.message());
}

absl::Status ProtocolViolation(const std::string& what) {
  return absl::InternalError(absl::StrCat("tensor channel protocol violation: ", what));
}

// InvalidArgument unless the caller's rows hold num_ids ids of 8 bytes (and a pull's answer is
// then checked against a count that cannot overflow).
absl::Status CheckRowIds(const SparseRows& r, uint64_t bytes) {
  if (r.num_ids() < 0 || bytes % 8 != 0 || static_cast<uint64_t>(r.num_ids()) != bytes / 8 ||
      bytes > static_cast<uint64_t>(kMaxMessageBytes)) {
    return absl::InvalidArgumentError(absl::StrCat("table shard ", r.shard_name(), ": num_ids ", r.num_ids(),
                                                   " does not match ", bytes, " bytes of row ids (8 bytes per id)"));
  }
  return absl::OkStatus();
}

}  // namespace

struct TensorChannelClient::Connection {
  int fd = -1;
  std::unique_ptr<ByteStream> stream;
  ~Connection() {
    stream.reset();
    if (fd >= 0) ::close(fd);
  }
};

// Blocking reads and writes on one connection, bounded by one deadline.
class TensorChannelClient::Call {
 public:
  Call(Connection* c, absl::Time deadline, Env* env) : c_(c), deadline_(deadline), env_(env) {}

  absl::Status Write(std::vector<iovec> parts) {
    size_t first = 0;
    while (first < parts.size()) {
      if (parts[first].iov_len == 0) {
        ++first;
        continue;
      }
      IoResult r = c_->stream->Write(&parts[first], parts.size() - first);
      RETURN_IF_ERROR(r.error);
      if (r.bytes == 0) {
        RETURN_IF_ERROR(WaitForSocket(c_->fd, r.want, deadline_, env_));
        continue;
      }
      for (size_t left = r.bytes; left > 0;) {
        const size_t k = std::min(left, parts[first].iov_len);
        parts[first].iov_base = static_cast<char*>(parts[first].iov_base) + k;
        parts[first].iov_len -= k;
        left -= k;
        if (parts[first].iov_len == 0) ++first;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Read(char* dst, size_t n) {
    while (n > 0) {
      IoResult r = c_->stream->Read(dst, n);
      if (r.eof) return absl::UnavailableError(kPsClosed);
      RETURN_IF_ERROR(r.error);
      if (r.bytes == 0) {
        if (!c_->stream->HasBufferedInput()) RETURN_IF_ERROR(WaitForSocket(c_->fd, r.want, deadline_, env_));
        continue;
      }
      dst += r.bytes;
      n -= r.bytes;
    }
    return absl::OkStatus();
  }

  // Reads a frame's header and message; the caller reads the `*payload_bytes` that follow. Every
  // size is checked before anything is allocated for it.
  absl::Status ReadFrame(TensorCallResponse* message, uint64_t* payload_bytes, const char* first = nullptr,
                         size_t first_bytes = 0) {
    char header[kFrameHeaderBytes];
    if (first_bytes > 0) std::memcpy(header, first, first_bytes);  // memcpy from null is undefined even for 0
    RETURN_IF_ERROR(Read(header + first_bytes, kFrameHeaderBytes - first_bytes));
    ASSIGN_OR_RETURN(FrameHeader h, DecodeFrameHeader(header));
    std::string body(h.message_bytes, '\0');
    RETURN_IF_ERROR(Read(body.data(), body.size()));
    if (!message->ParseFromString(body)) {
      return absl::InternalError("tensor channel out of step: a frame's message does not parse");
    }
    *payload_bytes = h.payload_bytes;
    return absl::OkStatus();
  }

  // Sends `call` with `payload` and reads the answer's header and message. OK with the answer's
  // own status in `answer` (a refused call leaves the connection in step).
  absl::Status Exchange(const TensorCallRequest& call, absl::Span<const absl::string_view> payload,
                        TensorCallResponse* answer, uint64_t* payload_bytes) {
    uint64_t total = 0;
    for (absl::string_view p : payload) total += p.size();
    const std::string head = FrameHead(call, total);
    std::vector<iovec> parts;
    parts.reserve(payload.size() + 1);
    parts.push_back({const_cast<char*>(head.data()), head.size()});
    for (absl::string_view p : payload) parts.push_back({const_cast<char*>(p.data()), p.size()});
    RETURN_IF_ERROR(Write(std::move(parts)));
    return ReadFrame(answer, payload_bytes);
  }

 private:
  Connection* const c_;
  const absl::Time deadline_;
  Env* const env_;
};

TensorChannelClient::TensorChannelClient(const std::string& address, std::string peer, const TransportConfig& config,
                                         Env* env)
    : peer_(std::move(peer)), caller_(config.caller), env_(env != nullptr ? env : Env::Default()) {
  SplitHostPort(address, &host_, &port_);  // a malformed address fails at Connect, naming the peer
  if (config.tls.enabled) {
    absl::StatusOr<std::shared_ptr<const TlsContext>> tls = TlsContext::Create(config.tls, TlsContext::Side::kClient);
    if (tls.ok()) {
      tls_ = *std::move(tls);
    } else {
      tls_error_ = tls.status();
    }
  }
}

TensorChannelClient::~TensorChannelClient() = default;

absl::Status TensorChannelClient::Named(const absl::Status& s) const {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(peer_, ": ", s.message()));
}

absl::StatusOr<int> TensorChannelClient::Dial(absl::Time deadline) const {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host_.c_str(), port_.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host_, ": ", ::gai_strerror(rc)));
  }
  const absl::Time give_up = std::min(deadline, env_->Now() + kConnectTimeout);
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        absl::Status waited = WaitForSocket(fd, Want::kWrite, give_up, env_);
        socklen_t len = sizeof(err);
        err = waited.ok() ? 0 : ETIMEDOUT;
        if (waited.ok()) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
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
    if (env_->Now() >= deadline) return absl::DeadlineExceededError("deadline exceeded while connecting");
    return absl::UnavailableError(absl::StrCat("cannot connect to the tensor channel: ", error));
  }
  SetSocketInt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
  SetDeadPeerDetection(fd);
  return fd;
}

absl::StatusOr<std::unique_ptr<TensorChannelClient::Connection>> TensorChannelClient::Connect(absl::Time deadline) {
  RETURN_IF_ERROR(tls_error_);
  auto c = std::make_unique<Connection>();
  ASSIGN_OR_RETURN(c->fd, Dial(deadline));
  c->stream = std::make_unique<PlainStream>(c->fd);
  Call call(c.get(), deadline, env_);
  const absl::string_view preface = tls_ != nullptr ? kPrefaceTls : kPrefacePlain;
  RETURN_IF_ERROR(call.Write({{const_cast<char*>(preface.data()), preface.size()}}));
  // The ps echoes the preface when it serves the channel this way, or answers one error frame.
  char echo[kPrefaceBytes];
  if (absl::Status s = call.Read(echo, sizeof(echo)); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), " at the connection preface (a ps of protocol version 2 ",
                                               "or older closes it here too)"));
  }
  if (absl::string_view(echo, sizeof(echo)) != preface) {
    TensorCallResponse refusal;
    uint64_t payload_bytes = 0;
    RETURN_IF_ERROR(call.ReadFrame(&refusal, &payload_bytes, echo, sizeof(echo)));
    return StatusOf(refusal);
  }
  if (tls_ != nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<TlsStream> tls, TlsStream::Create(tls_, c->fd, host_));
    for (Want want = Want::kNothing;;) {
      RETURN_IF_ERROR(tls->Handshake(&want));
      if (want == Want::kNothing) break;
      RETURN_IF_ERROR(WaitForSocket(c->fd, want, deadline, env_));
    }
    if (const std::string who = tls->PeerIdentity(); who.rfind("ps:", 0) != 0) {
      return absl::UnauthenticatedError(absl::StrCat("the tensor channel's peer presents the certificate of ",
                                                     who.empty() ? "no task" : who, ", not of a ps task"));
    }
    c->stream = std::move(tls);
  }
  TensorCallRequest hello;
  hello.mutable_hello()->set_protocol_version(kProtocolVersion);
  hello.mutable_hello()->set_caller(caller_);
  TensorCallResponse answer;
  uint64_t payload_bytes = 0;
  RETURN_IF_ERROR(call.Exchange(hello, {}, &answer, &payload_bytes));
  RETURN_IF_ERROR(StatusOf(answer));
  if (payload_bytes != 0) return ProtocolViolation("the hello's answer carries tensor bytes");
  RETURN_IF_ERROR(CheckProtocolVersion(answer.hello().protocol_version(), "the ps"));
  return c;
}

absl::StatusOr<std::unique_ptr<TensorChannelClient::Connection>> TensorChannelClient::Acquire(absl::Time deadline) {
  for (;;) {
    std::unique_ptr<Connection> c;
    {
      absl::MutexLock l(&mu_);
      if (idle_.empty()) break;
      c = std::move(idle_.back());
      idle_.pop_back();
    }
    // An idle connection has nothing to read; readable means the ps closed or reset it.
    pollfd p{c->fd, POLLIN, 0};
    if (::poll(&p, 1, 0) == 0) return c;
  }
  return Connect(deadline);
}

void TensorChannelClient::Release(std::unique_ptr<Connection> connection) {
  absl::MutexLock l(&mu_);
  idle_.push_back(std::move(connection));
}

absl::Status TensorChannelClient::Pull(const PullRequest& request, PullResponse* response, absl::Duration timeout) {
  const absl::Time deadline = env_->Now() + timeout;
  TensorCallRequest call;
  PullRequest* header = call.mutable_pull();
  *header->mutable_shard_names() = request.shard_names();
  header->set_min_version(request.min_version());
  std::vector<absl::string_view> payload;  // the sparse entries' ids follow the message
  for (const SparseRows& r : request.sparse()) {
    RETURN_IF_ERROR(Named(CheckRowIds(r, r.ids().size())));
    SparseRows* h = header->add_sparse();
    h->set_shard_name(r.shard_name());
    h->set_num_ids(r.num_ids());
    call.add_payload_bytes(static_cast<int64_t>(r.ids().size()));
    payload.push_back(r.ids());
  }
  absl::StatusOr<std::unique_ptr<Connection>> c = Acquire(deadline);
  if (!c.ok()) return Named(c.status());
  Call io(c->get(), deadline, env_);
  TensorCallResponse answer;
  uint64_t payload_bytes = 0;
  RETURN_IF_ERROR(Named(io.Exchange(call, payload, &answer, &payload_bytes)));
  if (answer.code() != 0) {
    if (payload_bytes != 0) return Named(ProtocolViolation("the ps sent tensor bytes with an error"));
    Release(*std::move(c));  // a refused call leaves the connection in step
    return Named(StatusOf(answer));
  }
  // Every size is checked against the request before a buffer is sized for it.
  const PullResponse& got = answer.pull();
  const int dense = got.values_size();
  if (answer.payload_bytes_size() != dense + got.sparse_size() || dense != request.shard_names_size() ||
      got.sparse_size() != request.sparse_size()) {
    return Named(ProtocolViolation(absl::StrCat(dense, " values and ", got.sparse_size(), " sparse entries with ",
                                                answer.payload_bytes_size(), " sizes for ", request.shard_names_size(),
                                                " shards and ", request.sparse_size(), " sparse entries")));
  }
  uint64_t announced = 0;
  for (int i = 0; i < dense + got.sparse_size(); ++i) {
    const int64_t bytes = answer.payload_bytes(i);
    bool fits;
    if (i < dense) {
      const ShardValue& v = got.values(i);
      fits = v.name() == request.shard_names(i) && bytes == FloatTensorBytes(v.value().shape());
    } else {
      const SparseRows& in = got.sparse(i - dense);
      const SparseRows& asked = request.sparse(i - dense);
      fits = in.shard_name() == asked.shard_name() && in.num_ids() == asked.num_ids() && bytes >= 0 &&
             bytes <= kMaxMessageBytes && (in.num_ids() == 0 ? bytes == 0 : bytes % (4 * in.num_ids()) == 0);
    }
    if (!fits) {
      return Named(ProtocolViolation(absl::StrCat("answer ", i, " of a pull announces ", bytes,
                                                  " bytes, which do not fit the shard or rows asked for")));
    }
    announced += static_cast<uint64_t>(bytes);
  }
  if (announced != payload_bytes) return Named(ProtocolViolation("a pull's sizes disagree with its frame"));
  for (int i = 0; i < dense + got.sparse_size(); ++i) {
    const size_t bytes = static_cast<size_t>(answer.payload_bytes(i));
    std::string* data;
    if (i < dense) {
      const ShardValue& in = got.values(i);
      data = PrepareValue(i, in.name(), in.version(), in.value().dtype(), in.value().shape(), bytes, response);
    } else {
      data = PrepareRows(i - dense, got.sparse(i - dense), bytes, response);
    }
    RETURN_IF_ERROR(Named(io.Read(data->data(), bytes)));
  }
  while (response->values_size() > dense) response->mutable_values()->RemoveLast();
  while (response->sparse_size() > got.sparse_size()) response->mutable_sparse()->RemoveLast();
  Release(*std::move(c));
  return absl::OkStatus();
}

absl::Status TensorChannelClient::Push(const PushRequest& request, PushResponse* response, absl::Duration timeout) {
  return PushParts(PushHeader(request), PushPayload(request), response, timeout);
}

absl::Status TensorChannelClient::PushParts(const PushRequest& header, absl::Span<const absl::string_view> payload,
                                            PushResponse* response, absl::Duration timeout) {
  const absl::Time deadline = env_->Now() + timeout;
  RETURN_IF_ERROR(Named(CheckPayloadParts(header, payload.size())));
  const size_t dense = static_cast<size_t>(header.gradients_size());
  for (int i = 0; i < header.sparse_size(); ++i) {
    RETURN_IF_ERROR(Named(CheckRowIds(header.sparse(i), payload[dense + 2 * static_cast<size_t>(i)].size())));
  }
  TensorCallRequest call;
  *call.mutable_push() = header;
  for (absl::string_view part : payload) call.add_payload_bytes(static_cast<int64_t>(part.size()));
  absl::StatusOr<std::unique_ptr<Connection>> c = Acquire(deadline);
  if (!c.ok()) return Named(c.status());
  Call io(c->get(), deadline, env_);
  TensorCallResponse answer;
  uint64_t payload_bytes = 0;
  RETURN_IF_ERROR(Named(io.Exchange(call, payload, &answer, &payload_bytes)));
  if (payload_bytes != 0) return Named(ProtocolViolation("a push answer carries tensor bytes"));
  Release(*std::move(c));
  if (answer.code() != 0) return Named(StatusOf(answer));
  *response = std::move(*answer.mutable_push());
  return absl::OkStatus();
}

}  // namespace pstrain
