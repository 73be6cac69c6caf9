// pstrain-ps: one parameter-server task. Reads TF_CONFIG (task type "ps"), serves PsService and the
// gRPC health service on its port until SIGTERM or SIGINT, then stops cleanly (exit 0). Exit 2 on
// a bad configuration, 1 when it cannot serve.
#include <signal.h>

#include <cstdlib>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "common/cluster_spec.h"
#include "common/cpu_level.h"
#include "common/exit_codes.h"
#include "common/memory_budget.h"
#include "common/task_flags.h"
#include "common/metrics_endpoint.h"
#include "common/process_metrics.h"
#include "common/stop_signals.h"
#include "ps/ps_grpc_server.h"
#include "ps/ps_metrics.h"
#include "ps/ps_server.h"
#include "ps/ps_stats_format.h"

ABSL_FLAG(std::string, tf_config, "", "read TF_CONFIG from this file instead of the environment");
ABSL_FLAG(std::string, listen, "", "address to listen on (default 0.0.0.0:<port of this task in TF_CONFIG>)");
ABSL_FLAG(int64_t, memory_budget_bytes, 0,
          "most bytes of variable values and optimizer slots this ps holds; shards beyond it are refused "
          "(default 0: half of this host's memory)");
ABSL_FLAG(int, metrics_port, 0, "serve Prometheus metrics at http://<host of --listen>:PORT/metrics (0 = off)");

namespace {

struct PsConfig {
  std::string task;
  std::string listen;
  int64_t memory_budget_bytes = 0;
};

absl::StatusOr<PsConfig> LoadConfig() {
  absl::StatusOr<pstrain::TfConfig> config = pstrain::LoadTfConfig(absl::GetFlag(FLAGS_tf_config));
  if (!config.ok()) return config.status();
  for (const std::string& note : config->notes) std::cerr << "pstrain-ps: " << note << "\n";
  absl::Status s = pstrain::ValidateTaskForRole(*config, pstrain::kPs);
  if (!s.ok()) return s;
  absl::StatusOr<std::string> address = config->cluster.Address(pstrain::kPs, config->task->index);
  if (!address.ok()) return address.status();
  absl::StatusOr<pstrain::CpuLevel> level = pstrain::ConfigureCpuLevel(std::getenv(pstrain::kCpuLevelEnv));
  if (!level.ok()) return level.status();
  PsConfig out;
  out.task = config->task->ToString();
  out.listen = absl::GetFlag(FLAGS_listen);
  if (out.listen.empty()) out.listen = absl::StrCat("0.0.0.0:", address->substr(address->rfind(':') + 1));
  absl::StatusOr<int64_t> budget =
      pstrain::MemoryBudgetBytes(pstrain::Env::Default(), absl::GetFlag(FLAGS_memory_budget_bytes));
  if (!budget.ok()) return budget.status();
  out.memory_budget_bytes = *budget;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("pstrain-ps   (TF_CONFIG in the environment, task type ps)");
  if (std::optional<int> exit_now = pstrain::ParseTaskCommandLine(argc, argv, "pstrain-ps")) return *exit_now;
  absl::StatusOr<PsConfig> config = LoadConfig();
  if (!config.ok()) {
    std::cerr << "pstrain-ps: bad configuration: " << config.status().message() << "\n";
    return pstrain::kExitBadConfiguration;
  }
  pstrain::BlockStopSignals();  // before gRPC starts its threads, so only WaitForStop receives them

  pstrain::MetricsRegistry metrics;
  pstrain::AddProcessMetrics(&metrics, config->task, pstrain::kPs);
  pstrain::PsServer::Options options;
  options.task = config->task;
  options.memory_budget_bytes = config->memory_budget_bytes;
  options.update_latency = pstrain::PsUpdateLatency(&metrics);
  pstrain::PsServer ps(options);
  pstrain::AddPsMetrics(&metrics, &ps);
  absl::StatusOr<std::unique_ptr<pstrain::HttpMetricsServer>> metrics_server = pstrain::ServeMetrics(
      &metrics, pstrain::ListenHost(config->listen), absl::GetFlag(FLAGS_metrics_port), "pstrain-ps: " + config->task);
  if (!metrics_server.ok()) {
    std::cerr << "pstrain-ps: " << config->task << ": " << metrics_server.status().message() << "\n";
    return pstrain::ExitCodeFor(metrics_server.status());
  }
  absl::StatusOr<std::unique_ptr<pstrain::PsGrpcServer>> server =
      pstrain::PsGrpcServer::Start(&ps, config->listen, pstrain::RequestRemoteShutdown, &metrics);
  if (!server.ok()) {
    std::cerr << "pstrain-ps: " << config->task << ": " << server.status().message() << "\n";
    return pstrain::kExitRuntimeFailure;
  }
  std::cerr << "pstrain-ps: " << config->task << " serving on " << config->listen << " (cpu kernels "
            << pstrain::DescribeCpuLevel() << ")" << std::endl;
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
