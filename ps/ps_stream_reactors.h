// Server reactors for the streaming PullStream / PushStream RPCs: tensors travel in chunks
// (kStreamChunkBytes), pulled values come from pooled snapshots and pushed gradients are assembled
// in pooled buffers, so large shards move without fresh large allocations. Part of the gRPC edge.
// Thread-safety: each reactor serves one call; gRPC serialises its reactions.
#ifndef PSTRAIN_PS_PS_STREAM_REACTORS_H_
#define PSTRAIN_PS_PS_STREAM_REACTORS_H_

#include <memory>
#include <vector>

#include "grpcpp/support/server_callback.h"
#include "proto/ps.pb.h"
#include "ps/ps_server.h"

namespace pstrain {

// Deletes itself when the call is done. `ps` and `request` must outlive the call (gRPC owns request).
class PullStreamReactor : public grpc::ServerWriteReactor<TensorChunk> {
 public:
  PullStreamReactor(PsServer* ps, const PullRequest* request);
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void OnPulled(absl::Status status, std::vector<PulledTensor> tensors);
  void WriteNext();

  std::vector<PulledTensor> tensors_;
  size_t tensor_ = 0;   // tensor of the next chunk
  int64_t offset_ = 0;  // byte offset of the next chunk
  TensorChunk chunk_;   // reused for every write
};

// Deletes itself when the call is done. `ps` and `response` must outlive the call.
class PushStreamReactor : public grpc::ServerReadReactor<PushChunk> {
 public:
  PushStreamReactor(PsServer* ps, PushResponse* response);
  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  absl::Status Accept(const PushChunk& message);
  void Apply();

  PsServer* const ps_;
  PushResponse* const response_;
  bool have_header_ = false;
  PushRequest header_;
  std::vector<std::shared_ptr<Tensor>> buffers_;
  std::vector<int64_t> received_;
  PushChunk message_;  // reused for every read
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_PS_STREAM_REACTORS_H_
