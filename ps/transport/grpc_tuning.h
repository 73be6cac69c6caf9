// gRPC settings shared by the ps server and its clients: message limits at the protobuf maximum,
// keepalive pings the server accepts, one connection per client.
// Thread-safety: pure functions.
#ifndef PSTRAIN_PS_TRANSPORT_GRPC_TUNING_H_
#define PSTRAIN_PS_TRANSPORT_GRPC_TUNING_H_

#include "grpcpp/server_builder.h"
#include "grpcpp/support/channel_arguments.h"

namespace pstrain {

// Arguments for a channel from a worker or the chief to a ps.
grpc::ChannelArguments PsChannelArguments();

// Applies the server side of the same settings.
void ConfigurePsServerBuilder(grpc::ServerBuilder* builder);

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_GRPC_TUNING_H_
