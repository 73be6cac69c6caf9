#include "ps/transport/tensor_channel_session.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/security/call_policy.h"
#include "common/wire/protocol_version.h"
#include "ps/transport/bulk_messages.h"

namespace pstrain {
namespace {

// A frame's message grows as its bytes arrive, in pieces taken from the message budget: the first
// small (a stalled peer holds little of the budget), each next one as large as what arrived, at
// most kMaxMessagePiece.
constexpr size_t kFirstMessagePiece = size_t{4} << 10;
constexpr size_t kMaxMessagePiece = size_t{1} << 20;
// Gradients are scanned for NaN/Inf in pieces of this size as they arrive.
constexpr size_t kScanPiece = size_t{1} << 20;
constexpr size_t kSkipPiece = size_t{64} << 10;

void SetStatus(const absl::Status& s, TensorCallResponse* response) {
  response->set_code(static_cast<int>(s.code()));
  response->set_message(std::string(s.message()));
}

// Internal when the announced sizes disagree with the frame (the connection is out of step);
// InvalidArgument for sizes that do not fit the entries' num_ids.
absl::Status CheckPullIds(const TensorCallRequest& call, uint64_t payload_bytes) {
  const PullRequest& request = call.pull();
  uint64_t announced = 0;
  for (int64_t b : call.payload_bytes()) {
    if (b < 0 || b > kMaxMessageBytes) return absl::InternalError("pull payload size out of range");
    announced += static_cast<uint64_t>(b);
  }
  if (announced != payload_bytes) return absl::InternalError("pull payload size disagrees with its id sizes");
  if (call.payload_bytes_size() != request.sparse_size()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor channel pull lists ", request.sparse_size(),
                                                   " sparse entries but ", call.payload_bytes_size(), " id sizes"));
  }
  for (int i = 0; i < request.sparse_size(); ++i) {
    const int64_t n = request.sparse(i).num_ids();
    if (n < 0 || n != call.payload_bytes(i) / 8 || call.payload_bytes(i) % 8 != 0) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", request.sparse(i).shard_name(), ": ", n,
                                                     " row ids arrived as ", call.payload_bytes(i), " bytes"));
    }
  }
  return absl::OkStatus();
}

// Internal when a push's sizes are negative or disagree with its frame; InvalidArgument when
// their count does not fit its gradients and sparse entries.
absl::Status CheckPushSizes(const TensorCallRequest& call, uint64_t payload_bytes) {
  const PushRequest& push = call.push();
  uint64_t announced = 0;
  for (int64_t b : call.payload_bytes()) {
    if (b < 0 || b > kMaxMessageBytes) return absl::InternalError("push payload size out of range");
    announced += static_cast<uint64_t>(b);
  }
  if (announced != payload_bytes) return absl::InternalError("push payload size disagrees with its gradient sizes");
  if (call.payload_bytes_size() != push.gradients_size() + 2 * push.sparse_size()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor channel push lists ", push.gradients_size(),
                                                   " gradients and ", push.sparse_size(), " sparse entries but ",
                                                   call.payload_bytes_size(), " sizes"));
  }
  return absl::OkStatus();
}

}  // namespace

TensorChannelSession::TensorChannelSession(TensorChannelServer* server, int fd, std::unique_ptr<ByteStream> stream,
                                           PrefaceKind kind, absl::Time preface_deadline)
    : server_(server), fd_(fd), stream_(std::move(stream)), deadline_(preface_deadline) {
  const bool tls = server_->tls() != nullptr;
  phase_ = (kind == PrefaceKind::kTls) == tls ? Phase::kEcho : Phase::kRefusePreface;
}

TensorChannelSession::~TensorChannelSession() {
  Unreserve();
  if (message_taken_ > 0) server_->messages()->Give(message_taken_);
}

bool TensorChannelSession::mid_frame() const {
  return phase_ == Phase::kHead || phase_ == Phase::kPayload || phase_ == Phase::kSkip || phase_ == Phase::kWrite;
}

TensorChannelSession::Wait TensorChannelSession::Advance() {
  for (;;) {
    Step step;
    switch (phase_) {
      case Phase::kRefusePreface:
        step = RefuseAndClose(
            server_->tls() != nullptr
                ? absl::UnauthenticatedError(absl::StrCat(
                      server_->ps()->task(), " serves the tensor channel over TLS only; start this task with the ",
                      "cluster's certificates (--tls_dir, made by pstrain certs)"))
                : absl::FailedPreconditionError(absl::StrCat(
                      server_->ps()->task(), " serves the tensor channel in plaintext (it was started without TLS); ",
                      "give every task the same TLS settings")));
        break;
      case Phase::kEcho:
        step = Echo();
        break;
      case Phase::kHandshake:
        step = Handshake();
        break;
      case Phase::kHello:
      case Phase::kIdle:
      case Phase::kHead:
        step = ReadHead();
        break;
      case Phase::kPayload:
        step = ReadPayload();
        break;
      case Phase::kSkip:
        step = Skip();
        break;
      case Phase::kCall:
        step = AwaitCall();
        break;
      case Phase::kWrite:
        step = Write();
        break;
      case Phase::kDone:
        return Wait::kClose;
    }
    if (step.has_value()) return *step;
  }
}

TensorChannelSession::Step TensorChannelSession::Fail(const absl::Status& why) {
  if (why.code() == absl::StatusCode::kInternal) {
    server_->Log(
        absl::StrCat("closed the tensor channel of ", peer_.empty() ? "a client" : peer_, ": ", why.message()));
  }
  phase_ = Phase::kDone;
  return Wait::kClose;
}

TensorChannelSession::Step TensorChannelSession::Echo() {
  // The preface's echo goes out as the rest of an answer would.
  const absl::string_view echo = server_->tls() != nullptr ? kPrefaceTls : kPrefacePlain;
  out_head_.assign(echo.data(), echo.size());
  out_payload_.clear();
  out_part_ = out_offset_ = 0;
  after_write_ = server_->tls() != nullptr ? Phase::kHandshake : Phase::kHello;
  phase_ = Phase::kWrite;
  return std::nullopt;
}

TensorChannelSession::Step TensorChannelSession::Handshake() {
  if (tls_ == nullptr) {
    absl::StatusOr<std::unique_ptr<TlsStream>> tls = TlsStream::Create(server_->tls(), fd_);
    if (!tls.ok()) return Fail(tls.status());
    tls_ = tls->get();
    stream_ = *std::move(tls);
  }
  Want want;
  if (absl::Status s = tls_->Handshake(&want); !s.ok()) {
    server_->Log(absl::StrCat("refused a tensor channel connection: ", s.message()));
    return Fail(s);
  }
  if (want != Want::kNothing) return want == Want::kRead ? Wait::kRead : Wait::kWrite;
  peer_ = tls_->PeerIdentity();
  phase_ = Phase::kHello;
  return std::nullopt;
}

TensorChannelSession::Step TensorChannelSession::ReadHead() {
  while (header_got_ < kFrameHeaderBytes) {
    IoResult r = stream_->Read(header_ + header_got_, kFrameHeaderBytes - header_got_);
    if (!r.ok()) return Fail(r.error);  // between frames a close is the client's goodbye
    if (r.bytes == 0) return r.want == Want::kWrite ? Wait::kWrite : Wait::kRead;
    if (phase_ == Phase::kIdle) {  // a frame's first byte: its deadline starts
      phase_ = Phase::kHead;
      deadline_ = server_->env()->Now() + server_->options().frame_timeout;
    }
    header_got_ += r.bytes;
    if (header_got_ == kFrameHeaderBytes) {
      absl::StatusOr<FrameHeader> h = DecodeFrameHeader(header_);
      if (!h.ok()) return Fail(h.status());
      frame_ = *h;
      message_.clear();
      message_got_ = 0;
    }
  }
  while (message_got_ < frame_.message_bytes) {
    if (message_got_ == message_.size()) {  // grows as the bytes arrive, within the shared budget
      const size_t piece = std::min<size_t>(
          {std::max(kFirstMessagePiece, message_.size()), kMaxMessagePiece, frame_.message_bytes - message_got_});
      if (absl::Status s = server_->messages()->TryTake(static_cast<int64_t>(piece)); !s.ok()) {
        server_->Log(
            absl::StrCat("closed the tensor channel of ", peer_.empty() ? "a client" : peer_, ": ", s.message()));
        return Fail(s);
      }
      message_taken_ += static_cast<int64_t>(piece);
      message_.resize(message_.size() + piece);
    }
    IoResult r = stream_->Read(message_.data() + message_got_, message_.size() - message_got_);
    if (!r.ok()) return Fail(r.error);
    if (r.bytes == 0) return r.want == Want::kWrite ? Wait::kWrite : Wait::kRead;
    message_got_ += r.bytes;
  }
  const bool parsed = request_.ParseFromString(message_);
  server_->messages()->Give(message_taken_);
  message_taken_ = 0;
  message_.clear();
  message_.shrink_to_fit();
  header_got_ = 0;
  if (!parsed) return Fail(absl::InternalError("tensor channel out of step: a frame's message does not parse"));
  return phase_ == Phase::kHello ? OnHello() : OnCall();
}

TensorChannelSession::Step TensorChannelSession::OnHello() {
  if (request_.call_case() != TensorCallRequest::kHello || frame_.payload_bytes != 0) {
    return RefuseAndClose(absl::FailedPreconditionError(
        "the tensor channel's first call must be the hello (a client of protocol version 2 or older?)"));
  }
  const HandshakeRequest& hello = request_.hello();
  const std::string caller = hello.caller().empty() ? "the caller" : hello.caller();
  if (absl::Status s = CheckProtocolVersion(hello.protocol_version(), caller); !s.ok()) return RefuseAndClose(s);
  if (tls_ == nullptr) {
    peer_ = hello.caller();  // its own word: plaintext has no proof
  } else if (!hello.caller().empty() && hello.caller() != peer_) {
    return RefuseAndClose(absl::PermissionDeniedError(
        absl::StrCat("the tensor channel's hello names ", hello.caller(), " but the certificate is ", peer_)));
  }
  TensorCallResponse answer;
  answer.mutable_hello()->set_protocol_version(kProtocolVersion);
  answer.mutable_hello()->set_task(server_->ps()->task());
  answer.mutable_hello()->set_build(absl::StrCat("pstrain-ps protocol ", kProtocolVersion));
  Answer(answer, {}, Phase::kIdle);
  return std::nullopt;
}

TensorChannelSession::Step TensorChannelSession::OnCall() {
  const char* method = request_.call_case() == TensorCallRequest::kPull   ? kPsPullMethod
                       : request_.call_case() == TensorCallRequest::kPush ? kPsPushMethod
                                                                          : nullptr;
  if (method == nullptr) {
    return RefuseAndClose(absl::InvalidArgumentError("a tensor channel call is neither a pull nor a push"));
  }
  if (tls_ != nullptr) {
    if (absl::Status s = AuthorizeCall(peer_, method); !s.ok()) {
      server_->Log(absl::StrCat("refused ", MethodName(method), " (tensor channel) from ", peer_, ": ", s.message()));
      return Refuse(s);
    }
  }
  return request_.call_case() == TensorCallRequest::kPull ? PlanPull() : PlanPush();
}

bool TensorChannelSession::Reserve() {
  if (reserved_ > 0 || frame_.payload_bytes == 0) return true;
  room_generation_ = server_->payloads()->generation();
  if (!server_->payloads()->TryReserve(static_cast<int64_t>(frame_.payload_bytes))) return false;
  reserved_ = static_cast<int64_t>(frame_.payload_bytes);
  return true;
}

void TensorChannelSession::Unreserve() {
  if (reserved_ == 0) return;
  const int64_t bytes = reserved_;
  reserved_ = 0;
  server_->payloads()->Give(bytes);
}

TensorChannelSession::Step TensorChannelSession::PlanPull() {
  absl::Status s = CheckPullIds(request_, frame_.payload_bytes);
  if (s.code() == absl::StatusCode::kInternal) return Fail(s);
  if (!s.ok()) return Refuse(s);
  if (!Reserve()) return Wait::kRoom;
  PullRequest& pull = *request_.mutable_pull();
  destinations_.clear();
  for (int i = 0; i < pull.sparse_size(); ++i) {
    std::string* ids = pull.mutable_sparse(i)->mutable_ids();
    ids->resize(static_cast<size_t>(request_.payload_bytes(i)));
    destinations_.push_back({ids->data(), ids->size()});
  }
  destination_ = 0;
  phase_ = Phase::kPayload;
  return std::nullopt;
}

TensorChannelSession::Step TensorChannelSession::PlanPush() {
  absl::Status s = CheckPushSizes(request_, frame_.payload_bytes);
  if (s.code() == absl::StatusCode::kInternal) return Fail(s);
  if (!s.ok()) return Refuse(s);
  const PushRequest& push = request_.push();
  const int dense = push.gradients_size();
  // The rows' sizes are checked against their shards before anything is allocated for them.
  std::vector<int64_t> ids_bytes, values_bytes;
  for (int i = 0; i < push.sparse_size(); ++i) {
    ids_bytes.push_back(request_.payload_bytes(dense + 2 * i));
    values_bytes.push_back(request_.payload_bytes(dense + 2 * i + 1));
  }
  if (s = server_->ps()->CheckSparseSizes(push, ids_bytes, values_bytes); !s.ok()) return Refuse(s);
  for (int i = 0; i < dense; ++i) {  // the announced sizes must be those of the announced shapes
    const int64_t shaped = FloatTensorBytes(push.gradients(i).gradient().shape());
    if (shaped != request_.payload_bytes(i)) {
      return Refuse(absl::InvalidArgumentError(absl::StrCat("shard ", push.gradients(i).name(), ": gradient of ",
                                                            request_.payload_bytes(i), " bytes for a gradient of ",
                                                            shaped, " bytes")));
    }
  }
  if (!Reserve()) return Wait::kRoom;
  // Gradients land in the ps's pooled buffers, sized by their shards, not by the peer.
  absl::StatusOr<std::vector<std::shared_ptr<Tensor>>> buffers = server_->ps()->GradientBuffers(push);
  if (!buffers.ok()) return Refuse(buffers.status());
  gradients_ = *std::move(buffers);
  for (int i = 0; i < dense; ++i) {
    if (static_cast<int64_t>(gradients_[i]->num_bytes()) != request_.payload_bytes(i)) {
      return Refuse(absl::InvalidArgumentError(absl::StrCat("shard ", push.gradients(i).name(), ": gradient of ",
                                                            request_.payload_bytes(i), " bytes for a shard of ",
                                                            gradients_[i]->num_bytes(), " bytes")));
    }
  }
  destinations_.clear();
  counted_.assign(static_cast<size_t>(dense + push.sparse_size()), 0);
  for (int i = 0; i < dense; ++i) {
    destinations_.push_back({reinterpret_cast<char*>(gradients_[i]->raw()), gradients_[i]->num_bytes(), 0, 0, i});
  }
  sparse_bytes_.assign(static_cast<size_t>(2 * push.sparse_size()), std::string());
  for (int i = 0; i < push.sparse_size(); ++i) {
    std::string& ids = sparse_bytes_[2 * i];
    std::string& values = sparse_bytes_[2 * i + 1];
    ids.resize(static_cast<size_t>(ids_bytes[i]));
    values.resize(static_cast<size_t>(values_bytes[i]));
    destinations_.push_back({ids.data(), ids.size()});
    destinations_.push_back({values.data(), values.size(), 0, 0, dense + i});
  }
  destination_ = 0;
  phase_ = Phase::kPayload;
  return std::nullopt;
}

TensorChannelSession::Step TensorChannelSession::ReadPayload() {
  while (destination_ < destinations_.size()) {
    Destination& d = destinations_[destination_];
    if (d.done < d.size) {
      IoResult r = stream_->Read(d.data + d.done, d.size - d.done);
      if (!r.ok()) return Fail(r.error.ok() ? absl::UnavailableError("the client closed mid-frame") : r.error);
      if (r.bytes == 0) return r.want == Want::kWrite ? Wait::kWrite : Wait::kRead;
      d.done += r.bytes;
    }
    // NaN/Inf are counted piece by piece while the rest still arrives, off the call's critical path.
    while (d.count >= 0 && (d.done - d.scanned >= kScanPiece || (d.done == d.size && d.scanned < d.size))) {
      const size_t k = std::min(kScanPiece, d.done - d.scanned);
      counted_[static_cast<size_t>(d.count)] += Shard::CountNonFinite(absl::string_view(d.data + d.scanned, k));
      d.scanned += k;
    }
    if (d.done == d.size) ++destination_;
  }
  Unreserve();  // delivered: the room goes to other connections
  return StartCall();
}

TensorChannelSession::Step TensorChannelSession::Refuse(const absl::Status& status) {
  Unreserve();
  gradients_.clear();
  refusal_ = status;
  skip_left_ = frame_.payload_bytes;
  phase_ = Phase::kSkip;
  return std::nullopt;
}

TensorChannelSession::Step TensorChannelSession::Skip() {
  // Bounded: the frame header allowed at most one message's bytes, and the frame's deadline runs.
  if (skip_left_ > 0 && skip_buffer_.empty()) skip_buffer_.resize(kSkipPiece);
  while (skip_left_ > 0) {
    IoResult r = stream_->Read(skip_buffer_.data(), static_cast<size_t>(std::min<uint64_t>(skip_left_, kSkipPiece)));
    if (!r.ok()) return Fail(r.error.ok() ? absl::UnavailableError("the client closed mid-frame") : r.error);
    if (r.bytes == 0) return r.want == Want::kWrite ? Wait::kWrite : Wait::kRead;
    skip_left_ -= r.bytes;
  }
  skip_buffer_.clear();
  skip_buffer_.shrink_to_fit();
  TensorCallResponse response;
  SetStatus(refusal_, &response);
  Answer(response, {}, Phase::kIdle);
  return std::nullopt;
}

TensorChannelSession::Step TensorChannelSession::RefuseAndClose(const absl::Status& status) {
  TensorCallResponse response;
  SetStatus(status, &response);
  Answer(response, {}, Phase::kDone);
  return std::nullopt;
}

TensorChannelSession::Step TensorChannelSession::StartCall() {
  {
    absl::MutexLock l(&call_mu_);
    call_done_ = false;
    parked_ = false;
  }
  phase_ = Phase::kCall;
  deadline_ = absl::InfiniteFuture();  // the ps bounds its own waits
  std::shared_ptr<TensorChannelSession> self = shared_from_this();
  if (request_.call_case() == TensorCallRequest::kPull) {
    server_->ps()->PullSnapshots(&request_.pull(), [self](absl::Status s, std::vector<PulledTensor> t) {
      self->PullDone(std::move(s), std::move(t));
    });
  } else {
    const PushRequest& push = request_.push();
    const std::vector<GradientView> views = GradientViews(push, gradients_, counted_);
    std::vector<SparseRowsView> rows;
    for (int i = 0; i < push.sparse_size(); ++i) {
      rows.push_back({push.sparse(i).shard_name(), push.sparse(i).num_ids(), sparse_bytes_[2 * i],
                      sparse_bytes_[2 * i + 1], counted_[push.gradients_size() + i]});
    }
    pushed_.Clear();
    // The bytes stay until `done` (a primary forwards them from here; AwaitCall frees them); the
    // response is filled before `done` runs.
    server_->ps()->PushGradients(
        push.worker_index(), push.step(), views, rows, &pushed_,
        [self](absl::Status s) { self->PushDone(std::move(s)); }, push.replica_versions());
  }
  return AwaitCall();
}

void TensorChannelSession::PullDone(absl::Status status, std::vector<PulledTensor> tensors) {
  pulled_ = std::move(tensors);  // read by Advance only after call_done_ is seen under the lock
  PushDone(std::move(status));
}

void TensorChannelSession::PushDone(absl::Status status) {
  bool wake;
  {
    absl::MutexLock l(&call_mu_);
    call_status_ = std::move(status);
    call_done_ = true;
    wake = parked_;
    parked_ = false;
  }
  if (wake && wake_) wake_();
}

TensorChannelSession::Step TensorChannelSession::AwaitCall() {
  absl::Status status;
  {
    absl::MutexLock l(&call_mu_);
    if (!call_done_) {
      parked_ = true;
      return Wait::kCall;
    }
    status = call_status_;
  }
  gradients_.clear();  // the push's bytes: done with (back to their pool)
  sparse_bytes_.clear();
  TensorCallResponse response;
  SetStatus(status, &response);
  std::vector<absl::string_view> payload;
  if (status.ok() && request_.call_case() == TensorCallRequest::kPull) {
    for (const PulledTensor& t : pulled_) {
      if (t.num_ids >= 0) {
        SparseRows* rows = response.mutable_pull()->add_sparse();
        rows->set_shard_name(t.name);
        rows->set_num_ids(t.num_ids);
        rows->set_version(t.version);
      } else {
        ShardValue* v = response.mutable_pull()->add_values();
        v->set_name(t.name);
        v->set_version(t.version);
        v->mutable_value()->set_dtype(DT_FLOAT);
        for (int64_t d : t.shape) v->mutable_value()->add_shape(d);
      }
      response.add_payload_bytes(static_cast<int64_t>(t.values->num_bytes()));
      payload.emplace_back(reinterpret_cast<const char*>(t.values->raw()), t.values->num_bytes());
    }
  } else if (status.ok()) {
    *response.mutable_push() = std::move(pushed_);
  }
  request_.Clear();
  Answer(response, std::move(payload), Phase::kIdle);
  return std::nullopt;
}

void TensorChannelSession::Answer(const TensorCallResponse& response, std::vector<absl::string_view> payload,
                                  Phase next) {
  uint64_t bytes = 0;
  for (absl::string_view p : payload) bytes += p.size();
  out_head_ = FrameHead(response, bytes);
  out_payload_ = std::move(payload);
  out_part_ = out_offset_ = 0;
  after_write_ = next;
  if (phase_ != Phase::kHello && phase_ != Phase::kEcho && phase_ != Phase::kRefusePreface) {
    deadline_ = server_->env()->Now() + server_->options().frame_timeout;  // an answer must be taken in time
  }
  phase_ = Phase::kWrite;
}

TensorChannelSession::Step TensorChannelSession::Write() {
  const size_t parts = 1 + out_payload_.size();
  while (out_part_ < parts) {
    std::vector<iovec> iov;
    iov.reserve(parts - out_part_);
    for (size_t i = out_part_; i < parts; ++i) {
      absl::string_view p = i == 0 ? absl::string_view(out_head_) : out_payload_[i - 1];
      if (i == out_part_) p.remove_prefix(out_offset_);
      if (!p.empty()) iov.push_back({const_cast<char*>(p.data()), p.size()});
    }
    if (iov.empty()) break;
    IoResult r = stream_->Write(iov.data(), iov.size());
    if (!r.error.ok()) return Fail(r.error);
    if (r.bytes == 0) return r.want == Want::kRead ? Wait::kRead : Wait::kWrite;
    for (size_t left = r.bytes; left > 0 && out_part_ < parts;) {
      const size_t size = out_part_ == 0 ? out_head_.size() : out_payload_[out_part_ - 1].size();
      const size_t k = std::min(left, size - out_offset_);
      out_offset_ += k;
      left -= k;
      if (out_offset_ == size) {
        ++out_part_;
        out_offset_ = 0;
      }
    }
    while (out_part_ < parts && out_part_ > 0 && out_payload_[out_part_ - 1].empty()) ++out_part_;
  }
  out_payload_.clear();
  pulled_.clear();  // the snapshots go back to their pools
  phase_ = after_write_;
  if (phase_ == Phase::kIdle) deadline_ = absl::InfiniteFuture();
  return std::nullopt;
}

}  // namespace pstrain
