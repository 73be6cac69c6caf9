// pstrain-ps: one parameter-server task. Reads TF_CONFIG (task type "ps"), serves PsService and the
// gRPC health service on its port until SIGTERM or SIGINT, then stops cleanly (exit 0). Exit 2 on
// a bad configuration, 1 when it cannot serve.
#include <signal.h>

#include <cstdlib>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "common/cluster_spec.h"
#include "common/exit_codes.h"
#include "common/stop_signals.h"
#include "ps/ps_grpc_server.h"
#include "ps/ps_server.h"
#include "ps/ps_stats_format.h"

ABSL_FLAG(std::string, tf_config, "", "read TF_CONFIG from this file instead of the environment");
ABSL_FLAG(std::string, listen, "", "address to listen on (default 0.0.0.0:<port of this task in TF_CONFIG>)");

namespace {

struct PsConfig {
  std::string task;
  std::string listen;
};

absl::StatusOr<PsConfig> LoadConfig() {
  absl::StatusOr<pstrain::TfConfig> config = pstrain::LoadTfConfig(absl::GetFlag(FLAGS_tf_config));
  if (!config.ok()) return config.status();
  absl::Status s = pstrain::ValidateTaskForRole(*config, pstrain::kPs);
  if (!s.ok()) return s;
  absl::StatusOr<std::string> address = config->cluster.Address(pstrain::kPs, config->task->index);
  if (!address.ok()) return address.status();
  PsConfig out;
  out.task = config->task->ToString();
  out.listen = absl::GetFlag(FLAGS_listen);
  if (out.listen.empty()) out.listen = absl::StrCat("0.0.0.0:", address->substr(address->rfind(':') + 1));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<PsConfig> config = LoadConfig();
  if (!config.ok()) {
    std::cerr << "pstrain-ps: bad configuration: " << config.status().message() << "\n";
    return pstrain::kExitBadConfiguration;
  }
  pstrain::BlockStopSignals();  // before gRPC starts its threads, so only WaitForStop receives them

  pstrain::PsServer::Options options;
  options.task = config->task;
  pstrain::PsServer ps(options);
  absl::StatusOr<std::unique_ptr<pstrain::PsGrpcServer>> server = pstrain::PsGrpcServer::Start(&ps, config->listen, pstrain::RequestRemoteShutdown);
  if (!server.ok()) {
    std::cerr << "pstrain-ps: " << config->task << ": " << server.status().message() << "\n";
    return pstrain::kExitRuntimeFailure;
  }
  std::cerr << "pstrain-ps: " << config->task << " serving on " << config->listen << std::endl;
  const pstrain::StopReason stop = pstrain::WaitForStop();
  std::cerr << "pstrain-ps: " << config->task << " stopping: " << stop.description << std::endl;
  (*server)->Shutdown(absl::Milliseconds(500));
  pstrain::PsStatsResponse stats;
  if (ps.GetStats(pstrain::PsStatsRequest(), &stats).ok() && stats.shards_size() > 0) {
    // What this ps served, per shard: for tables, the rows pulled and pushed.
    for (const pstrain::ShardStats& s : stats.shards()) {
      std::cerr << "pstrain-ps: " << config->task << " shard " << s.name() << ": " << pstrain::ShardStatsText(s)
                << "\n";
    }
    std::cerr << "pstrain-ps: " << config->task << " total: " << pstrain::ShardStatsText(stats.total()) << "\n";
  }
  std::cerr << "pstrain-ps: " << config->task << " stopped" << std::endl;
  // Every call has finished and the ps keeps nothing to flush (checkpoints are written by Save).
  // Skip the destructors: gRPC 1.51's library teardown can sit ~10 s in an idle poller's wait.
  std::_Exit(stop.remote ? pstrain::kExitRuntimeFailure : pstrain::kExitOk);
}
