#include "ps/grpc_stream_client.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "grpcpp/support/sync_stream.h"
#include "ps/grpc_tuning.h"

namespace pstrain {
namespace {

grpc::Status Violation(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INTERNAL, "pull stream protocol violation: " + what);
}

// Starts tensor `index` of the response from its first chunk, reusing an existing entry.
grpc::Status StartTensor(const TensorChunk& c, PullResponse* response, std::string** data) {
  if (c.index() != response->values_size() && c.index() >= response->values_size()) {
    return Violation(absl::StrCat("tensor ", c.index(), " started out of order"));
  }
  ShardValue* v = c.index() < response->values_size() ? response->mutable_values(c.index()) : response->add_values();
  v->set_name(c.name());
  v->set_version(c.version());
  TensorProto* t = v->mutable_value();
  t->set_dtype(c.dtype());
  t->clear_shape();
  for (int64_t d : c.shape()) t->add_shape(d);
  *data = t->mutable_data();
  if (c.total_bytes() < 0) return Violation("negative size");
  if ((*data)->size() != static_cast<size_t>(c.total_bytes())) (*data)->resize(static_cast<size_t>(c.total_bytes()));
  return grpc::Status::OK;
}

}  // namespace

grpc::Status PullOverStream(PsService::StubInterface* stub, grpc::ClientContext* context, const PullRequest& request,
                            PullResponse* response) {
  std::unique_ptr<grpc::ClientReaderInterface<TensorChunk>> reader = stub->PullStream(context, request);
  TensorChunk chunk;  // reused: its buffer is recycled by every Read
  int started = 0;
  std::string* data = nullptr;
  grpc::Status violation;
  while (reader->Read(&chunk)) {
    if (chunk.offset() == 0 && chunk.index() == started) {
      violation = StartTensor(chunk, response, &data);
      ++started;
    } else if (chunk.index() != started - 1 || data == nullptr) {
      violation = Violation(absl::StrCat("chunk for tensor ", chunk.index(), " out of order"));
    }
    if (violation.ok() && chunk.offset() + chunk.data().size() > data->size()) {
      violation = Violation(absl::StrCat("chunk beyond the end of tensor ", chunk.index()));
    }
    if (!violation.ok()) {
      context->TryCancel();
      break;
    }
    if (!chunk.data().empty()) std::memcpy(&(*data)[chunk.offset()], chunk.data().data(), chunk.data().size());
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

grpc::Status PushOverStream(PsService::StubInterface* stub, grpc::ClientContext* context, const PushRequest& request,
                            PushResponse* response) {
  std::unique_ptr<grpc::ClientWriterInterface<PushChunk>> writer = stub->PushStream(context, response);
  PushChunk message;
  PushRequest* header = message.mutable_header();
  header->set_worker_index(request.worker_index());
  header->set_step(request.step());
  for (const ShardGradient& g : request.gradients()) {
    ShardGradient* h = header->add_gradients();
    h->set_name(g.name());
    h->mutable_gradient()->set_dtype(g.gradient().dtype());
    *h->mutable_gradient()->mutable_shape() = g.gradient().shape();
  }
  bool ok = true;
  for (int i = 0; ok && i < request.gradients_size(); ++i) {
    const std::string& bytes = request.gradients(i).gradient().data();
    size_t offset = 0;
    do {  // at least one chunk per tensor, so empty tensors are announced too
      const size_t size = std::min(static_cast<size_t>(kStreamChunkBytes), bytes.size() - offset);
      TensorChunk* c = message.mutable_chunk();
      c->set_index(i);
      c->set_offset(static_cast<int64_t>(offset));
      c->set_data(bytes.data() + offset, size);
      ok = writer->Write(message);
      message.clear_header();  // only the first message carries it
      offset += size;
    } while (ok && offset < bytes.size());
  }
  if (request.gradients_size() == 0) ok = writer->Write(message);
  if (ok) writer->WritesDone();
  return writer->Finish();
}

}  // namespace pstrain
