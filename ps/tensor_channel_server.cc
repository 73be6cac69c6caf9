#include "ps/tensor_channel_server.h"

#include <algorithm>
#include <memory>
#include <optional>
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

// Internal when the announced sizes disagree with the frame (the connection is out of step);
// InvalidArgument for sizes that do not fit the entries' num_ids.
absl::Status CheckPullIds(const TensorCallRequest& call, uint64_t payload_bytes) {
  const PullRequest& request = call.pull();
  if (call.payload_bytes_size() != request.sparse_size()) {
    return payload_bytes == 0 ? absl::InvalidArgumentError(absl::StrCat("tensor channel pull lists ",
                                                                        request.sparse_size(), " sparse entries but ",
                                                                        call.payload_bytes_size(), " id sizes"))
                              : absl::InternalError("pull payload without its sizes");
  }
  uint64_t announced = 0;
  for (int64_t b : call.payload_bytes()) {
    if (b < 0 || b > kMaxMessageBytes) return absl::InternalError("pull payload size out of range");
    announced += static_cast<uint64_t>(b);
  }
  if (announced != payload_bytes) return absl::InternalError("pull payload size disagrees with its id sizes");
  if (announced > static_cast<uint64_t>(kMaxMessageBytes)) {
    return absl::InvalidArgumentError("a pull of more than 2 GiB of row ids; pull fewer rows per call");
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

// Reads `n` bytes into `dst`, counting NaN/Inf floats piece by piece while the rest is still
// arriving, which takes that scan off the push's critical path.
absl::Status ReadCounting(FrameIo* io, char* dst, size_t n, int64_t* non_finite) {
  for (size_t off = 0; off < n; off += kScanPieceBytes) {
    const size_t k = std::min(kScanPieceBytes, n - off);
    if (absl::Status s = io->Read(dst + off, k); !s.ok()) return s;
    *non_finite += Shard::CountNonFinite(absl::string_view(dst + off, k));
  }
  return absl::OkStatus();
}

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
        s = ServePull(&io, &request, payload_bytes);
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

absl::Status TensorChannelServer::ServePull(FrameIo* io, TensorCallRequest* call, uint64_t payload_bytes) {
  PullRequest& request = *call->mutable_pull();
  // The sparse entries' ids follow the message; their sizes are checked before anything is read.
  absl::Status status = CheckPullIds(*call, payload_bytes);
  if (!status.ok() && status.code() == absl::StatusCode::kInternal) return status;
  if (!status.ok()) {
    if (absl::Status s = io->Skip(payload_bytes); !s.ok()) return s;
  } else {
    // Room for the ids before their buffers exist, given back once they arrived.
    ByteReservation room(&payloads_, static_cast<int64_t>(payload_bytes));
    for (int i = 0; i < request.sparse_size(); ++i) {
      std::string* ids = request.mutable_sparse(i)->mutable_ids();
      ids->resize(static_cast<size_t>(call->payload_bytes(i)));
      if (absl::Status s = io->Read(ids->data(), ids->size()); !s.ok()) return s;
    }
  }
  std::vector<PulledTensor> tensors;
  if (status.ok()) {
    // Shared with the callback, which may run (on a push's thread) after a parked wait.
    auto outcome = std::make_shared<Outcome<std::vector<PulledTensor>>>();
    ps_->PullSnapshots(
        &request, [outcome](absl::Status s, std::vector<PulledTensor> t) { outcome->Set(std::move(s), std::move(t)); });
    status = outcome->Wait(&tensors);
  }
  TensorCallResponse response;
  SetStatus(status, &response);
  std::vector<absl::string_view> payload;
  if (status.ok()) {
    for (const PulledTensor& t : tensors) {
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
  }
  return io->WriteFrame(response, payload);
}

absl::Status TensorChannelServer::ServePush(FrameIo* io, const TensorCallRequest& request, uint64_t payload_bytes) {
  const PushRequest& push = request.push();
  const int dense = push.gradients_size();
  absl::Status status;
  if (request.payload_bytes_size() != dense + 2 * push.sparse_size()) {
    status = absl::InvalidArgumentError(absl::StrCat("tensor channel push lists ", dense, " gradients and ",
                                                     push.sparse_size(), " sparse entries but ",
                                                     request.payload_bytes_size(), " sizes"));
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
  std::optional<ByteReservation> room;
  if (status.ok()) {
    room.emplace(&payloads_, static_cast<int64_t>(payload_bytes));
    absl::StatusOr<std::vector<std::shared_ptr<Tensor>>> b = ps_->GradientBuffers(push);
    if (b.ok()) {
      buffers = std::move(*b);
    } else {
      status = b.status();
    }
  }
  for (int i = 0; status.ok() && i < dense; ++i) {
    if (static_cast<int64_t>(buffers[i]->num_bytes()) != request.payload_bytes(i)) {
      status = absl::InvalidArgumentError(absl::StrCat("shard ", push.gradients(i).name(), ": gradient of ",
                                                       request.payload_bytes(i), " bytes for a shard of ",
                                                       buffers[i]->num_bytes(), " bytes"));
    }
  }
  // The rows' sizes are checked against their shards before anything is allocated for them.
  std::vector<int64_t> ids_bytes, values_bytes;
  for (int i = 0; status.ok() && i < push.sparse_size(); ++i) {
    ids_bytes.push_back(request.payload_bytes(dense + 2 * i));
    values_bytes.push_back(request.payload_bytes(dense + 2 * i + 1));
  }
  if (status.ok()) status = ps_->CheckSparseSizes(push, ids_bytes, values_bytes);
  std::vector<std::string> sparse_bytes;  // per entry: ids, then values
  if (!status.ok()) {
    if (absl::Status s = io->Skip(payload_bytes); !s.ok()) return s;
  } else {
    for (const std::shared_ptr<Tensor>& b : buffers) {
      int64_t non_finite = 0;
      if (absl::Status s = ReadCounting(io, reinterpret_cast<char*>(b->raw()), b->num_bytes(), &non_finite); !s.ok()) {
        return s;
      }
      counted.push_back(non_finite);
    }
    for (int i = 0; i < push.sparse_size(); ++i) {
      sparse_bytes.emplace_back(static_cast<size_t>(ids_bytes[i]), '\0');
      if (absl::Status s = io->Read(sparse_bytes.back().data(), sparse_bytes.back().size()); !s.ok()) return s;
      sparse_bytes.emplace_back(static_cast<size_t>(values_bytes[i]), '\0');
      int64_t non_finite = 0;
      std::string& values = sparse_bytes.back();
      if (absl::Status s = ReadCounting(io, values.data(), values.size(), &non_finite); !s.ok()) return s;
      counted.push_back(non_finite);
    }
  }
  if (room) room->Release();  // delivered: the room goes to other connections
  TensorCallResponse response;
  if (status.ok()) {
    const std::vector<GradientView> views = GradientViews(push, buffers, counted);
    std::vector<SparseRowsView> rows;
    for (int i = 0; i < push.sparse_size(); ++i) {
      rows.push_back({push.sparse(i).shard_name(), push.sparse(i).num_ids(), sparse_bytes[2 * i],
                      sparse_bytes[2 * i + 1], counted[dense + i]});
    }
    auto outcome = std::make_shared<Outcome<bool>>();
    // PushGradients reads the views before returning; the response is written before `done` runs.
    ps_->PushGradients(push.worker_index(), push.step(), views, rows, response.mutable_push(),
                       [outcome](absl::Status s) { outcome->Set(std::move(s), true); });
    bool unused;
    status = outcome->Wait(&unused);
  }
  SetStatus(status, &response);
  if (!status.ok()) response.clear_push();
  return io->WriteFrame(response, {});
}

}  // namespace pstrain
