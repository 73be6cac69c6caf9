#include "ps/transport/grpc_stream_client.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/sync_stream.h"
#include "ps/transport/borrowed_bytes_codec.h"
#include "ps/transport/bulk_messages.h"
#include "ps/transport/grpc_tuning.h"

namespace pstrain {
namespace {

constexpr int kTensorChunkDataField = 3;
constexpr int kPushChunkDataField = 4;

grpc::Status Violation(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INTERNAL, "pull stream protocol violation: " + what);
}

}  // namespace

PsStreamClient::PsStreamClient(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)),
      pull_method_("/pstrain.PsService/PullStream", grpc::internal::RpcMethod::SERVER_STREAMING, channel_),
      push_method_("/pstrain.PsService/PushStream", grpc::internal::RpcMethod::CLIENT_STREAMING, channel_) {}

grpc::Status PsStreamClient::Pull(grpc::ClientContext* context, const PullRequest& request, PullResponse* response) {
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel_.get(), pull_method_, context, request));
  grpc::ByteBuffer in;
  DecodedMessage m;
  TensorChunk fields;
  int started = 0;
  std::string* data = nullptr;
  grpc::Status violation;
  while (reader->Read(&in)) {
    if (!DecodeWithBorrowedBytes(in, kTensorChunkDataField, &m).ok() || !fields.ParseFromString(m.small_fields)) {
      violation = Violation("a chunk does not parse");
    } else if (fields.offset() == 0 && fields.index() == started && fields.total_bytes() >= 0) {
      data = PrepareValue(fields.index(), fields.name(), fields.version(), fields.dtype(), fields.shape(),
                          static_cast<size_t>(fields.total_bytes()), response);
      ++started;
    } else if (fields.index() != started - 1 || data == nullptr) {
      violation = Violation(absl::StrCat("chunk for tensor ", fields.index(), " out of order"));
    }
    if (violation.ok() && fields.offset() + m.bytes_size > data->size()) {
      violation = Violation(absl::StrCat("chunk beyond the end of tensor ", fields.index()));
    }
    if (!violation.ok()) {
      context->TryCancel();
      break;
    }
    if (m.bytes_size > 0) m.CopyBytesTo(&(*data)[fields.offset()]);
  }
  grpc::Status s = reader->Finish();
  if (!violation.ok()) return violation;
  if (!s.ok()) return s;
  if (started != request.shard_names_size()) {
    return Violation(absl::StrCat(started, " tensors arrived for ", request.shard_names_size(), " shards"));
  }
  while (response->values_size() > started) response->mutable_values()->RemoveLast();
  return s;
}

grpc::Status PsStreamClient::Push(grpc::ClientContext* context, const PushRequest& request, PushResponse* response) {
  grpc::ByteBuffer raw_response;
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer(
      grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(channel_.get(), push_method_, context,
                                                                    &raw_response));
  PushChunk fields;
  *fields.mutable_header() = PushHeader(request);
  bool ok = true;
  if (request.gradients_size() == 0)
    ok = writer->Write(EncodeWithBorrowedBytes(fields.SerializeAsString(), kPushChunkDataField, nullptr, 0));
  for (int i = 0; ok && i < request.gradients_size(); ++i) {
    const std::string& bytes = request.gradients(i).gradient().data();
    size_t offset = 0;
    do {  // at least one chunk per tensor
      const size_t size = std::min(static_cast<size_t>(StreamChunkBytes()), bytes.size() - offset);
      fields.set_index(i);
      fields.set_offset(static_cast<int64_t>(offset));
      ok = writer->Write(
          EncodeWithBorrowedBytes(fields.SerializeAsString(), kPushChunkDataField, bytes.data() + offset, size));
      fields.clear_header();  // only the first message carries it
      offset += size;
    } while (ok && offset < bytes.size());
  }
  if (ok) writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (!s.ok()) return s;
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (raw_response.Dump(&slices).ok()) {
    for (const grpc::Slice& slice : slices) bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  if (!response->ParseFromString(bytes))
    return grpc::Status(grpc::StatusCode::INTERNAL, "push response does not parse");
  return s;
}

}  // namespace pstrain
