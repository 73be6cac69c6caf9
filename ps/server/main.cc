// pstrain-ps: one parameter-server task. Reads TF_CONFIG (task type "ps"), serves PsService and the
// gRPC health service on its port until SIGTERM or SIGINT, then stops cleanly (exit 0). Exit 2 on
// a bad configuration, 1 when it cannot serve.
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "common/config/cluster_spec.h"
#include "common/config/task_bootstrap.h"
#include "common/config/task_flags.h"
#include "common/metrics/metrics_endpoint.h"
#include "common/metrics/process_metrics.h"
#include "common/plan/memory_budget.h"
#include "common/platform/cpu_level.h"
#include "common/platform/exit_codes.h"
#include "common/platform/malloc_tuning.h"
#include "common/platform/stop_signals.h"
#include "common/security/tls_config.h"
#include "ps/client/grpc_ps_client.h"
#include "ps/client/ps_stats_format.h"
#include "ps/server/ps_grpc_server.h"
#include "ps/server/ps_metrics.h"
#include "ps/store/ps_server.h"
#include "ps/transport/tls_stream.h"

ABSL_FLAG(int64_t, memory_budget_bytes, 0,
          "most bytes of variable values and optimizer slots this ps holds; shards beyond it are refused "
          "(default 0: half of this host's memory)");
ABSL_FLAG(int, max_connections, 4096,
          "tensor-channel connections (and connections not yet sorted from gRPC's) the ps holds at once; more are "
          "refused with a log line");

namespace {

// The ps's own settings, from its flags, beside what every task has (TaskSetup).
struct PsConfig {
  int64_t memory_budget_bytes = 0;
  int max_connections = 0;
  int ps_index = 0;
  std::vector<std::string> ps_addresses;  // cluster.ps, by index: where backups live
};

// Raises the open-files limit to its hard maximum: every connection is a descriptor.
int RaiseOpenFilesLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
    ::getrlimit(RLIMIT_NOFILE, &r);
  }
  return r.rlim_cur > 1 << 30 ? 1 << 30 : static_cast<int>(r.rlim_cur);
}

absl::StatusOr<PsConfig> LoadConfig(const pstrain::TaskSetup& setup) {
  PsConfig out;
  out.ps_index = setup.tf_config.task->index;
  out.ps_addresses = setup.tf_config.cluster.Addresses(pstrain::kPs);
  out.max_connections = absl::GetFlag(FLAGS_max_connections);
  if (out.max_connections < 1) return absl::InvalidArgumentError("--max_connections must be at least 1");
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
  absl::StatusOr<pstrain::TaskSetup> setup =
      pstrain::BootstrapTask(pstrain::Env::Default(), {pstrain::kPs}, std::getenv,
                             [](const std::string& note) { std::cerr << "pstrain-ps: " << note << "\n"; });
  if (!setup.ok()) {
    std::cerr << "pstrain-ps: " << setup.status().message() << "\n";
    return pstrain::kExitBadConfiguration;
  }
  absl::StatusOr<PsConfig> config = LoadConfig(*setup);
  if (!config.ok()) {
    std::cerr << "pstrain-ps: bad configuration: " << config.status().message() << "\n";
    return pstrain::kExitBadConfiguration;
  }
  const std::string& task = setup->task;
  pstrain::KeepFreedBuffersForReuse();  // tensor-sized buffers cycle per step: see malloc_tuning.h
  pstrain::BlockStopSignals();          // before gRPC starts its threads, so only WaitForStop receives them

  pstrain::MetricsRegistry metrics;
  pstrain::AddProcessMetrics(&metrics, task, pstrain::kPs);
  pstrain::PsServer::Options options;
  options.env = pstrain::Env::Default();
  options.task = task;
  options.memory_budget_bytes = config->memory_budget_bytes;
  options.update_latency = pstrain::PsUpdateLatency(&metrics);
  options.ps_index = config->ps_index;
  // ps_replicas: a primary forwards its updates to the ps holding their backups, over the same
  // transport as the workers' pushes, as a ps: with its own certificate.
  options.connect_ps = [addresses = config->ps_addresses, transport = setup->transport](int ps) {
    pstrain::ReplicaPeer peer;
    if (ps < 0 || static_cast<size_t>(ps) >= addresses.size()) {
      peer.push = [ps, n = addresses.size()](const pstrain::PushRequest&, absl::Span<const absl::string_view>,
                                             pstrain::PushResponse*) {
        return absl::FailedPreconditionError(absl::StrCat("ps:", ps, " is not in this ps's TF_CONFIG (", n, " ps)"));
      };
      return peer;
    }
    // Each try of a forward gives up after 30 s, about when the chief takes a silent backup for lost
    // (--ps_health_deadline_secs), so the pushes waiting on it are answered after the Detach that
    // follows, not at a 5-minute deadline.
    auto forwards = std::make_shared<pstrain::GrpcPsClient>(addresses[static_cast<size_t>(ps)], absl::StrCat("ps:", ps),
                                                            absl::Seconds(30), transport);
    peer.push = [forwards](const pstrain::PushRequest& header, absl::Span<const absl::string_view> payload,
                           pstrain::PushResponse* response) { return forwards->PushParts(header, payload, response); };
    std::shared_ptr<pstrain::PsClient> client =
        pstrain::NewGrpcPsClient(addresses[static_cast<size_t>(ps)], absl::StrCat("ps:", ps), transport);
    peer.install = [client](const pstrain::ReplicaStateRequest& request) {
      pstrain::ReplicaStateResponse response;
      return client->InstallReplica(request, &response);
    };
    return peer;
  };
  const std::string log_prefix = "pstrain-ps: " + task + ": ";
  options.log = [log_prefix](const std::string& line) { std::cerr << log_prefix << line << std::endl; };
  pstrain::PsServer ps(options);
  pstrain::AddPsMetrics(&metrics, &ps);
  absl::StatusOr<std::unique_ptr<pstrain::HttpMetricsServer>> metrics_server =
      pstrain::ServeMetrics(&metrics, setup->metrics_host, setup->metrics_port, "pstrain-ps: " + task);
  if (!metrics_server.ok()) {
    std::cerr << "pstrain-ps: " << task << ": " << metrics_server.status().message() << "\n";
    return pstrain::ExitCodeFor(metrics_server.status());
  }
  const std::string who = "pstrain-ps: " + task + ": ";
  pstrain::PsGrpcServer::Options serving;
  serving.env = pstrain::Env::Default();
  serving.tls = setup->transport.tls;
  serving.on_shutdown = pstrain::RequestRemoteShutdown;
  serving.metrics = &metrics;
  serving.log = [who](const std::string& line) { std::cerr << who << line << std::endl; };
  // The cap stays below the open-files limit, with room for checkpoint files and gRPC's sockets.
  const int open_files = RaiseOpenFilesLimit();
  serving.listener.max_connections = std::max(1, std::min(config->max_connections, open_files - 256));
  std::cerr << who << pstrain::DescribeTls(setup->transport.tls) << std::endl;
  if (setup->transport.tls.enabled)
    std::cerr << who << "tensor channel TLS: " << pstrain::KernelTlsStatus() << std::endl;
  absl::StatusOr<std::unique_ptr<pstrain::PsGrpcServer>> server =
      pstrain::PsGrpcServer::Start(&ps, setup->listen, serving);
  if (!server.ok()) {
    std::cerr << "pstrain-ps: " << task << ": " << server.status().message() << "\n";
    return pstrain::kExitRuntimeFailure;
  }
  std::cerr << "pstrain-ps: " << task << " serving on " << setup->listen << " (cpu kernels "
            << pstrain::DescribeCpuLevel() << "; tensor channel: up to " << serving.listener.max_connections
            << " connections, " << (*server)->listener().threads() << " threads)" << std::endl;
  const pstrain::StopReason stop = pstrain::WaitForStop();
  std::cerr << "pstrain-ps: " << task << " stopping: " << stop.description << std::endl;
  (*server)->Shutdown(absl::Milliseconds(500));
  pstrain::PsStatsResponse stats;
  if (ps.GetStats(pstrain::PsStatsRequest(), &stats).ok() && stats.shards_size() > 0) {
    // What this ps served, per shard: for tables, the rows pulled and pushed.
    for (const pstrain::ShardStats& s : stats.shards()) {
      std::cerr << "pstrain-ps: " << task << " shard " << s.name() << ": " << pstrain::ShardStatsText(s) << "\n";
    }
    std::cerr << "pstrain-ps: " << task << " total: " << pstrain::ShardStatsText(stats.total()) << "\n";
  }
  std::cerr << "pstrain-ps: " << task << " stopped" << std::endl;
  // Every call has finished and the ps keeps nothing to flush (checkpoints are written by Save).
  // Skip the destructors: gRPC 1.51's library teardown can sit ~10 s in an idle poller's wait.
  // A signal is an orchestrator's stop (exit 143, as every binary); the chief's Shutdown a failed job.
  std::_Exit(stop.remote ? pstrain::kExitRuntimeFailure : pstrain::kExitStoppedBySignal);
}
