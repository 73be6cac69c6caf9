#include "ps/tensor_channel_server.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/checked_math.h"

namespace pstrain {
namespace {

// The outcome of a PsServer call, handed from whichever thread finishes it to the waiting one.
template <typename T>
class Outcome {
 public:
  void Set(absl::Status status, T value) {
    absl::MutexLock l(&mu_);
    status_ = std::move(status);
    value_ = std::move(value);
    done_ = true;
  }
  absl::Status Wait(T* value) {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(&done_));
    *value = std::move(value_);
    return status_;
  }

 private:
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  T value_ ABSL_GUARDED_BY(mu_);
};

// Gradients are read in pieces of this size, each scanned while the next arrives.
constexpr size_t kScanPieceBytes = size_t{1} << 20;

void SetStatus(const absl::Status& s, TensorCallResponse* response) {
  response->set_code(static_cast<int>(s.code()));
  response->set_message(std::string(s.message()));
}

}  // namespace

void TensorChannelServer::Serve(int fd) {
  FrameIo io(fd, absl::InfiniteFuture(), "the client closed the connection");
  for (;;) {
    TensorCallRequest request;
    uint64_t payload_bytes = 0;
    if (!io.ReadFrameStart(&request, &payload_bytes, &messages_).ok()) return;
    absl::Status s;
    switch (request.call_case()) {
      case TensorCallRequest::kPull:
        s = ServePull(&io, request.pull(), payload_bytes);
        break;
      case TensorCallRequest::kPush:
        s = ServePush(&io, request, payload_bytes);
        break;
      default:
        return;  // a client of another protocol version: it sees the connection close
    }
    if (!s.ok()) return;
  }
}

absl::Status TensorChannelServer::ServePull(FrameIo* io, const PullRequest& request, uint64_t payload_bytes) {
  if (payload_bytes != 0) return absl::InternalError("a pull carries no payload");
  // Shared with the callback, which may run (on a push's thread) after a parked wait.
  auto outcome = std::make_shared<Outcome<std::vector<PulledTensor>>>();
  ps_->PullSnapshots(
      &request, [outcome](absl::Status s, std::vector<PulledTensor> t) { outcome->Set(std::move(s), std::move(t)); });
  std::vector<PulledTensor> tensors;
  const absl::Status status = outcome->Wait(&tensors);
  TensorCallResponse response;
  SetStatus(status, &response);
  std::vector<absl::string_view> payload;
  if (status.ok()) {
    for (const PulledTensor& t : tensors) {
      ShardValue* v = response.mutable_pull()->add_values();
      v->set_name(t.name);
      v->set_version(t.version);
      v->mutable_value()->set_dtype(DT_FLOAT);
      for (int64_t d : t.shape) v->mutable_value()->add_shape(d);
      response.add_payload_bytes(static_cast<int64_t>(t.values->num_bytes()));
      payload.emplace_back(reinterpret_cast<const char*>(t.values->raw()), t.values->num_bytes());
    }
  }
  return io->WriteFrame(response, payload);
}

absl::Status TensorChannelServer::ServePush(FrameIo* io, const TensorCallRequest& request, uint64_t payload_bytes) {
  const PushRequest& push = request.push();
  absl::Status status;
  if (request.payload_bytes_size() != push.gradients_size()) {
    status = absl::InvalidArgumentError(absl::StrCat("tensor channel push lists ", push.gradients_size(),
                                                     " gradients but ", request.payload_bytes_size(), " sizes"));
  }
  uint64_t announced = 0;
  for (int64_t b : request.payload_bytes()) {
    if (b < 0 || static_cast<uint64_t>(b) > kMaxCheckedBytes - announced) {
      return absl::InternalError("a push announces a negative or overflowing gradient size");
    }
    announced += static_cast<uint64_t>(b);
  }
  if (status.ok() && announced != payload_bytes) {
    return absl::InternalError("push payload size disagrees with its gradient sizes");
  }
  // Gradients land in the ps's pooled buffers; a push the ps would reject still has its bytes read
  // (and dropped) so the connection stays in step.
  std::vector<std::shared_ptr<Tensor>> buffers;
  std::vector<int64_t> counted;  // NaN/Inf values per gradient
  // Room for the payload before its buffers exist, given back once it arrived (below).
  struct Reservation {
    ByteBudget* budget = nullptr;
    int64_t bytes = 0;
    ~Reservation() {
      if (budget != nullptr) budget->Give(bytes);
    }
  } reservation;
  if (status.ok()) {
    payloads_.Take(static_cast<int64_t>(payload_bytes));
    reservation.bytes = static_cast<int64_t>(payload_bytes);
    reservation.budget = &payloads_;
    absl::StatusOr<std::vector<std::shared_ptr<Tensor>>> b = ps_->GradientBuffers(push);
    if (b.ok()) {
      buffers = std::move(*b);
    } else {
      status = b.status();
    }
  }
  for (int i = 0; status.ok() && i < push.gradients_size(); ++i) {
    if (static_cast<int64_t>(buffers[i]->num_bytes()) != request.payload_bytes(i)) {
      status = absl::InvalidArgumentError(absl::StrCat("shard ", push.gradients(i).name(), ": gradient of ",
                                                       request.payload_bytes(i), " bytes for a shard of ",
                                                       buffers[i]->num_bytes(), " bytes"));
    }
  }
  if (!status.ok()) {
    if (absl::Status s = io->Skip(payload_bytes); !s.ok()) return s;
  } else {
    for (const std::shared_ptr<Tensor>& b : buffers) {
      // Counting NaN/Inf piece by piece, while the rest is still arriving, takes that scan off the
      // push's critical path.
      char* dst = reinterpret_cast<char*>(b->raw());
      int64_t non_finite = 0;
      for (size_t off = 0; off < b->num_bytes(); off += kScanPieceBytes) {
        const size_t k = std::min(kScanPieceBytes, b->num_bytes() - off);
        if (absl::Status s = io->Read(dst + off, k); !s.ok()) return s;
        non_finite += Shard::CountNonFinite(absl::string_view(dst + off, k));
      }
      counted.push_back(non_finite);
    }
  }
  if (reservation.budget != nullptr) {  // delivered: the room goes to other connections
    payloads_.Give(reservation.bytes);
    reservation.budget = nullptr;
  }
  TensorCallResponse response;
  if (status.ok()) {
    const std::vector<GradientView> views = GradientViews(push, buffers, counted);
    auto outcome = std::make_shared<Outcome<bool>>();
    // PushGradients reads the views before returning; the response is written before `done` runs.
    ps_->PushGradients(push.worker_index(), push.step(), views, response.mutable_push(),
                       [outcome](absl::Status s) { outcome->Set(std::move(s), true); });
    bool unused;
    status = outcome->Wait(&unused);
  }
  SetStatus(status, &response);
  if (!status.ok()) response.clear_push();
  return io->WriteFrame(response, {});
}

}  // namespace pstrain
