// Server reactors for the streaming PullStream / PushStream RPCs (raw ByteBuffer methods): pulled
// values go out in kStreamChunkBytes chunks sent straight from pooled snapshots, pushed chunks are
// copied once from the received slices into pooled gradient buffers. Part of the gRPC edge.
// Thread-safety: each reactor serves one call; gRPC serialises its reactions.
#ifndef PSTRAIN_PS_SERVER_PS_STREAM_REACTORS_H_
#define PSTRAIN_PS_SERVER_PS_STREAM_REACTORS_H_

#include <memory>
#include <vector>

#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/server_callback.h"
#include "proto/ps.pb.h"
#include "ps/store/ps_server.h"

namespace pstrain {

// Deletes itself when the call is done. `ps` must outlive the call.
class PullStreamReactor : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  PullStreamReactor(PsServer* ps, const grpc::ByteBuffer* raw_request);
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void OnPulled(absl::Status status, std::vector<PulledTensor> tensors);
  void WriteNext();

  PullRequest request_;
  std::vector<PulledTensor> tensors_;  // kept until the call ends: writes borrow their bytes
  size_t tensor_ = 0;                  // tensor of the next chunk
  int64_t offset_ = 0;                 // byte offset of the next chunk
  TensorChunk fields_;                 // the chunk's small fields, reused
  grpc::ByteBuffer out_;               // the chunk being written
};

// Deletes itself when the call is done. `ps` must outlive the call.
class PushStreamReactor : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  PushStreamReactor(PsServer* ps, grpc::ByteBuffer* raw_response);
  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  absl::Status Accept();
  void Apply();

  PsServer* const ps_;
  grpc::ByteBuffer* const raw_response_;
  PushResponse response_;
  bool have_header_ = false;
  PushRequest header_;
  std::vector<std::shared_ptr<Tensor>> buffers_;
  std::vector<int64_t> received_;
  grpc::ByteBuffer in_;  // reused for every read
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_SERVER_PS_STREAM_REACTORS_H_
