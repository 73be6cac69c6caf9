#include "ps/transport/grpc_tuning.h"

#include <climits>

namespace pstrain {

grpc::ChannelArguments PsChannelArguments() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // Pings keep a parked sync push alive through idle NAT/proxies; the server permits them.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 60000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  // Each client gets its own connection, so parallel clients get parallel TCP streams.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // A ps restarted at the same address is reached again within a second or two, not after
  // gRPC's default reconnect backoff of up to two minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  return args;
}

void ConfigurePsServerBuilder(grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(INT_MAX);
  builder->SetMaxSendMessageSize(INT_MAX);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 30000);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
}

}  // namespace pstrain
