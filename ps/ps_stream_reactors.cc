#include "ps/ps_stream_reactors.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "ps/borrowed_bytes_codec.h"
#include "ps/grpc_tuning.h"

namespace pstrain {
namespace {

constexpr int kTensorChunkDataField = 3;
constexpr int kPushChunkDataField = 4;

// The streams carry dense tensors only: a table's rows are small and go over Pull / Push (unary)
// or the tensor channel, which is what GrpcPsClient does.
absl::Status StreamCarriesNoRows() {
  return absl::InvalidArgumentError("the PullStream / PushStream RPCs carry no table rows; use Pull / Push");
}

}  // namespace

PullStreamReactor::PullStreamReactor(PsServer* ps, const grpc::ByteBuffer* raw_request) {
  DecodedMessage m;
  absl::Status s = DecodeWithBorrowedBytes(*raw_request, 0, &m);
  if (!s.ok() || !request_.ParseFromString(m.small_fields)) {
    Finish(ToGrpcStatus(absl::InvalidArgumentError("PullStream: the request does not parse")));
    return;
  }
  if (request_.sparse_size() > 0) {
    Finish(ToGrpcStatus(StreamCarriesNoRows()));
    return;
  }
  ps->PullSnapshots(&request_, [this](absl::Status s, std::vector<PulledTensor> t) { OnPulled(s, std::move(t)); });
}

void PullStreamReactor::OnPulled(absl::Status status, std::vector<PulledTensor> tensors) {
  if (!status.ok()) return Finish(ToGrpcStatus(status));
  tensors_ = std::move(tensors);
  if (tensors_.empty()) return Finish(grpc::Status::OK);
  WriteNext();
}

void PullStreamReactor::WriteNext() {
  const PulledTensor& t = tensors_[tensor_];
  const int64_t total = static_cast<int64_t>(t.values->num_bytes());
  const int64_t size = std::min(StreamChunkBytes(), total - offset_);
  fields_.Clear();
  fields_.set_index(static_cast<int>(tensor_));
  fields_.set_offset(offset_);
  if (offset_ == 0) {
    fields_.set_name(t.name);
    fields_.set_version(t.version);
    fields_.set_dtype(DT_FLOAT);
    for (int64_t d : t.shape) fields_.add_shape(d);
    fields_.set_total_bytes(total);
  }
  out_ = EncodeWithBorrowedBytes(fields_.SerializeAsString(), kTensorChunkDataField,
                                 reinterpret_cast<const char*>(t.values->raw()) + offset_, static_cast<size_t>(size));
  offset_ += size;
  if (offset_ >= total) {
    ++tensor_;
    offset_ = 0;
  }
  if (tensor_ >= tensors_.size()) {
    StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
  } else {
    StartWrite(&out_);
  }
}

void PullStreamReactor::OnWriteDone(bool ok) {
  if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED, "pull stream write failed"));
  WriteNext();
}

PushStreamReactor::PushStreamReactor(PsServer* ps, grpc::ByteBuffer* raw_response)
    : ps_(ps), raw_response_(raw_response) {
  StartRead(&in_);
}

absl::Status PushStreamReactor::Accept() {
  DecodedMessage m;
  absl::Status s = DecodeWithBorrowedBytes(in_, kPushChunkDataField, &m);
  PushChunk fields;
  if (!s.ok() || !fields.ParseFromString(m.small_fields)) {
    return absl::InvalidArgumentError("push stream: a chunk does not parse");
  }
  if (!have_header_) {
    if (!fields.has_header()) return absl::InvalidArgumentError("push stream: the first message carries no header");
    header_ = std::move(*fields.mutable_header());
    have_header_ = true;
    if (header_.sparse_size() > 0) return StreamCarriesNoRows();
    absl::StatusOr<std::vector<std::shared_ptr<Tensor>>> buffers = ps_->GradientBuffers(header_);
    if (!buffers.ok()) return buffers.status();
    buffers_ = std::move(*buffers);
    received_.assign(buffers_.size(), 0);
  }
  if (!m.has_bytes) return absl::OkStatus();
  if (fields.index() < 0 || fields.index() >= static_cast<int>(buffers_.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("push stream: chunk for gradient ", fields.index(), " of ", buffers_.size()));
  }
  Tensor& dst = *buffers_[static_cast<size_t>(fields.index())];
  const int64_t end = fields.offset() + static_cast<int64_t>(m.bytes_size);
  if (fields.offset() < 0 || end > static_cast<int64_t>(dst.num_bytes())) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", header_.gradients(fields.index()).name(),
                                                   ": streamed gradient bytes [", fields.offset(), ", ", end,
                                                   ") fall outside its ", dst.num_bytes(), " bytes"));
  }
  m.CopyBytesTo(reinterpret_cast<char*>(dst.raw()) + fields.offset());
  received_[static_cast<size_t>(fields.index())] += static_cast<int64_t>(m.bytes_size);
  return absl::OkStatus();
}

void PushStreamReactor::OnReadDone(bool ok) {
  if (!ok) return Apply();  // the client finished writing
  absl::Status s = Accept();
  if (!s.ok()) return Finish(ToGrpcStatus(s));
  StartRead(&in_);
}

void PushStreamReactor::Apply() {
  if (!have_header_) return Finish(ToGrpcStatus(absl::InvalidArgumentError("push stream: no header arrived")));
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (received_[i] != static_cast<int64_t>(buffers_[i]->num_bytes())) {
      return Finish(ToGrpcStatus(absl::InvalidArgumentError(
          absl::StrCat("shard ", header_.gradients(static_cast<int>(i)).name(), ": push stream ended after ",
                       received_[i], " of ", buffers_[i]->num_bytes(), " gradient bytes"))));
    }
  }
  const std::vector<GradientView> views = GradientViews(header_, buffers_);
  // The views are read only inside PushGradients, but `this` may be deleted as soon as `done`
  // runs, so the buffers live in a local and nothing below touches members.
  std::vector<std::shared_ptr<Tensor>> keep = std::move(buffers_);
  ps_->PushGradients(header_.worker_index(), header_.step(), views, {}, &response_, [this](absl::Status s) {
    if (s.ok()) {
      const std::string bytes = response_.SerializeAsString();
      grpc::Slice slice(bytes.data(), bytes.size());
      *raw_response_ = grpc::ByteBuffer(&slice, 1);
    }
    Finish(ToGrpcStatus(s));
  });
}

}  // namespace pstrain
