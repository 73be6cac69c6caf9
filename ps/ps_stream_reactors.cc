#include "ps/ps_stream_reactors.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "ps/grpc_tuning.h"

namespace pstrain {

PullStreamReactor::PullStreamReactor(PsServer* ps, const PullRequest* request) {
  ps->PullSnapshots(request, [this](absl::Status s, std::vector<PulledTensor> t) { OnPulled(s, std::move(t)); });
}

void PullStreamReactor::OnPulled(absl::Status status, std::vector<PulledTensor> tensors) {
  if (!status.ok()) return Finish(ToGrpcStatus(status));
  tensors_ = std::move(tensors);
  WriteNext();
}

void PullStreamReactor::WriteNext() {
  if (tensor_ >= tensors_.size()) return Finish(grpc::Status::OK);
  const PulledTensor& t = tensors_[tensor_];
  const int64_t total = static_cast<int64_t>(t.values->num_bytes());
  const int64_t size = std::min(kStreamChunkBytes, total - offset_);
  chunk_.Clear();
  chunk_.set_index(static_cast<int>(tensor_));
  chunk_.set_offset(offset_);
  if (offset_ == 0) {
    chunk_.set_name(t.name);
    chunk_.set_version(t.version);
    chunk_.set_dtype(DT_FLOAT);
    for (int64_t d : t.shape) chunk_.add_shape(d);
    chunk_.set_total_bytes(total);
  }
  chunk_.set_data(reinterpret_cast<const char*>(t.values->raw()) + offset_, static_cast<size_t>(size));
  offset_ += size;
  if (offset_ >= total) {
    tensors_[tensor_].values.reset();  // back to the pool as soon as it is sent
    ++tensor_;
    offset_ = 0;
  }
  if (tensor_ >= tensors_.size()) {
    StartWriteAndFinish(&chunk_, grpc::WriteOptions(), grpc::Status::OK);
  } else {
    StartWrite(&chunk_);
  }
}

void PullStreamReactor::OnWriteDone(bool ok) {
  if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED, "pull stream write failed"));
  WriteNext();
}

PushStreamReactor::PushStreamReactor(PsServer* ps, PushResponse* response) : ps_(ps), response_(response) {
  StartRead(&message_);
}

absl::Status PushStreamReactor::Accept(const PushChunk& message) {
  if (!have_header_) {
    if (!message.has_header()) return absl::InvalidArgumentError("push stream: the first message carries no header");
    header_ = message.header();
    have_header_ = true;
    for (const ShardGradient& g : header_.gradients()) {
      const TensorProto& t = g.gradient();
      const std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
      absl::StatusOr<std::shared_ptr<Tensor>> buffer = ps_->GradientBuffer(g.name(), t.dtype(), shape);
      if (!buffer.ok()) return buffer.status();
      buffers_.push_back(std::move(*buffer));
    }
    received_.assign(buffers_.size(), 0);
  }
  if (!message.has_chunk()) return absl::OkStatus();
  const TensorChunk& c = message.chunk();
  if (c.index() < 0 || c.index() >= static_cast<int>(buffers_.size())) {
    return absl::InvalidArgumentError(absl::StrCat("push stream: chunk for gradient ", c.index(), " of ", buffers_.size()));
  }
  Tensor& dst = *buffers_[static_cast<size_t>(c.index())];
  const std::string& name = header_.gradients(c.index()).name();
  if (c.offset() < 0 || c.offset() + static_cast<int64_t>(c.data().size()) > static_cast<int64_t>(dst.num_bytes())) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", name, ": streamed gradient bytes [", c.offset(), ", ",
                                                   c.offset() + static_cast<int64_t>(c.data().size()),
                                                   ") fall outside its ", dst.num_bytes(), " bytes"));
  }
  std::memcpy(dst.raw() + c.offset(), c.data().data(), c.data().size());
  received_[static_cast<size_t>(c.index())] += static_cast<int64_t>(c.data().size());
  return absl::OkStatus();
}

void PushStreamReactor::OnReadDone(bool ok) {
  if (!ok) return Apply();  // the client finished writing
  absl::Status s = Accept(message_);
  if (!s.ok()) return Finish(ToGrpcStatus(s));
  StartRead(&message_);
}

void PushStreamReactor::Apply() {
  if (!have_header_) return Finish(ToGrpcStatus(absl::InvalidArgumentError("push stream: no header arrived")));
  std::vector<GradientView> views;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const ShardGradient& g = header_.gradients(static_cast<int>(i));
    if (received_[i] != static_cast<int64_t>(buffers_[i]->num_bytes())) {
      return Finish(ToGrpcStatus(absl::InvalidArgumentError(
          absl::StrCat("shard ", g.name(), ": push stream ended after ", received_[i], " of ",
                       buffers_[i]->num_bytes(), " gradient bytes"))));
    }
    views.push_back({g.name(), g.gradient().dtype(), {g.gradient().shape().begin(), g.gradient().shape().end()},
                     absl::string_view(reinterpret_cast<const char*>(buffers_[i]->raw()), buffers_[i]->num_bytes())});
  }
  // The views are read only inside PushGradients; `this` may be deleted once done runs, so the
  // buffers are kept alive by a local and nothing touches members afterwards.
  std::vector<std::shared_ptr<Tensor>> keep = std::move(buffers_);
  ps_->PushGradients(header_.worker_index(), header_.step(), views, response_,
                     [this](absl::Status s) { Finish(ToGrpcStatus(s)); });
}

}  // namespace pstrain
