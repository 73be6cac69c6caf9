#include "ps/transport/grpc_tuning.h"

#include <climits>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace pstrain {
namespace {

// Integer arguments both sides set.
std::vector<std::pair<std::string, int>> CommonArgs() {
  std::vector<std::pair<std::string, int>> args = {
      {GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, -1},
      {GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, -1},
  };
  if (const char* env = std::getenv("PSTRAIN_GRPC_ARGS")) {
    for (absl::string_view kv : absl::StrSplit(env, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
      int value = 0;
      if (absl::SimpleAtoi(p.second, &value)) args.emplace_back(p.first, value);
    }
  }
  return args;
}

}  // namespace

int64_t StreamChunkBytes() {
  static const int64_t bytes = [] {
    int64_t kib = 0;
    const char* env = std::getenv("PSTRAIN_STREAM_CHUNK_KIB");
    return env != nullptr && absl::SimpleAtoi(env, &kib) && kib > 0 ? kib << 10 : kStreamChunkBytes;
  }();
  return bytes;
}

grpc::ChannelArguments PsChannelArguments() {
  grpc::ChannelArguments args;
  // Pings keep a parked sync push alive through idle NAT/proxies; the server permits them.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 60000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  // Each client gets its own connection, so parallel clients get parallel TCP streams.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  for (const auto& [name, value] : CommonArgs()) args.SetInt(name, value);
  return args;
}

void ConfigurePsServerBuilder(grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(INT_MAX);
  builder->SetMaxSendMessageSize(INT_MAX);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 30000);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  for (const auto& [name, value] : CommonArgs()) {
    if (name != GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH && name != GRPC_ARG_MAX_SEND_MESSAGE_LENGTH) {
      builder->AddChannelArgument(name, value);
    }
  }
}

}  // namespace pstrain
