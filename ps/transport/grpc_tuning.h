// gRPC transport settings shared by the ps server and its clients: message limits at the protobuf
// maximum, HTTP/2 windows and frames sized for multi-megabyte tensors, keepalive that the server
// accepts. PSTRAIN_GRPC_ARGS="name=int,..." overrides integer channel arguments on both sides (for
// tuning experiments with the throughput benchmark).
// Thread-safety: pure functions.
#ifndef PSTRAIN_PS_TRANSPORT_GRPC_TUNING_H_
#define PSTRAIN_PS_TRANSPORT_GRPC_TUNING_H_

#include <cstdint>

#include "grpcpp/server_builder.h"
#include "grpcpp/support/channel_arguments.h"

namespace pstrain {

// Streaming Pull/Push send tensors in chunks of this many bytes: small enough that no message
// needs a fresh large allocation, large enough to keep per-message costs low.
inline constexpr int64_t kStreamChunkBytes = int64_t{4} << 20;
// kStreamChunkBytes, or PSTRAIN_STREAM_CHUNK_KIB when set (tuning experiments).
int64_t StreamChunkBytes();
// With BulkTransport::kGrpcStream, GrpcPsClient streams a pull or push whose tensors total at least
// this many bytes (from 64 KiB up the stream costs less CPU per byte than a unary call in
// ps_throughput_benchmark).
inline constexpr int64_t kDefaultStreamThresholdBytes = int64_t{64} << 10;

// Arguments for a channel from a worker or the chief to a ps.
grpc::ChannelArguments PsChannelArguments();

// Applies the server side of the same settings.
void ConfigurePsServerBuilder(grpc::ServerBuilder* builder);

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_GRPC_TUNING_H_
