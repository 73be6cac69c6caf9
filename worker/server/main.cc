// pstrain-worker: one worker task. Reads TF_CONFIG (task type "worker"), serves WorkerService and
// the gRPC health service on its port; the chief configures it and sends it closures of steps.
// Stops cleanly on SIGTERM or SIGINT (exit 0). Exit 2 on a bad configuration, 1 when it cannot
// serve.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "common/config/cluster_spec.h"
#include "common/config/task_bootstrap.h"
#include "common/config/task_flags.h"
#include "common/config/value_range.h"
#include "common/metrics/metrics_endpoint.h"
#include "common/metrics/process_metrics.h"
#include "common/platform/cpu_level.h"
#include "common/platform/env.h"
#include "common/platform/exit_codes.h"
#include "common/platform/malloc_tuning.h"
#include "common/platform/stop_signals.h"
#include "common/security/tls_config.h"
#include "ps/client/grpc_ps_client.h"
#include "ps/client/metered_ps_client.h"
#include "worker/server/worker_grpc_server.h"
#include "worker/step/device.h"
#include "worker/step/worker.h"

ABSL_FLAG(std::string, device, "cpu", "where gradients are computed: cpu, cuda or cuda:N (builds with CUDA)");
ABSL_FLAG(int, threads, 0, "compute threads (default: all cores)");
ABSL_FLAG(int, replicas, 1, "local replicas: each batch is split over them and their gradients summed");
ABSL_FLAG(std::string, data_dir, "", "directory of the dataset files (overrides the job's data.dir)");
ABSL_FLAG(int, overlap_push, -1,
          "async jobs: keep a step's push in flight while the next step pulls and computes (1), never (0), or "
          "only when the job keeps backups, ps_replicas > 0 (-1)");

namespace {

// The worker's own settings, from its flags, beside what every task has (TaskSetup).
struct WorkerConfig {
  pstrain::WorkerOptions options;
  pstrain::GradientComputerFactory compute;
};

absl::StatusOr<WorkerConfig> LoadConfig(const pstrain::TaskSetup& setup) {
  WorkerConfig out;
  out.options.task = setup.task;
  out.options.log = [task = out.options.task](const std::string& line) {
    std::cerr << "pstrain-worker: " << task << ": " << line << std::endl;
  };
  const int threads = absl::GetFlag(FLAGS_threads);
  absl::Status s_threads =
      pstrain::CheckInRange(threads, pstrain::IntBetween(0, pstrain::kMaxThreads, "(0: all cores)"), "--threads");
  if (!s_threads.ok()) return s_threads;
  out.options.threads = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  out.options.replicas = absl::GetFlag(FLAGS_replicas);
  absl::Status s_replicas =
      pstrain::CheckInRange(out.options.replicas, pstrain::IntBetween(1, pstrain::kMaxThreads), "--replicas");
  if (!s_replicas.ok()) return s_replicas;
  out.options.data_dir = absl::GetFlag(FLAGS_data_dir);
  out.options.overlap_push = absl::GetFlag(FLAGS_overlap_push);
  absl::Status s_overlap = pstrain::CheckInRange(
      out.options.overlap_push, pstrain::IntBetween(-1, 1, "(-1: only with backups)"), "--overlap_push");
  if (!s_overlap.ok()) return s_overlap;
  absl::StatusOr<pstrain::GradientComputerFactory> compute =
      pstrain::ComputeFactoryForDevice(absl::GetFlag(FLAGS_device), out.options.replicas);
  if (!compute.ok()) return compute.status();
  out.compute = *compute;
  return out;
}

// Clients of the ps over `transport`, whose calls are timed into `metrics`.
pstrain::PsClientFactory MeteredPsClients(pstrain::MetricsRegistry* metrics, pstrain::TransportConfig transport) {
  return [metrics, transport](const std::string& address,
                              int index) -> absl::StatusOr<std::unique_ptr<pstrain::PsClient>> {
    const std::string ps = absl::StrCat("ps:", index);
    return std::make_unique<pstrain::MeteredPsClient>(pstrain::NewGrpcPsClient(address, ps, transport), metrics, ps);
  };
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "pstrain-worker [--device=cpu|cuda[:N]] [--threads=N]   (TF_CONFIG in the environment, task type worker)");
  if (std::optional<int> exit_now = pstrain::ParseTaskCommandLine(argc, argv, "pstrain-worker")) return *exit_now;
  absl::StatusOr<pstrain::TaskSetup> setup =
      pstrain::BootstrapTask(pstrain::Env::Default(), {pstrain::kWorker}, std::getenv,
                             [](const std::string& note) { std::cerr << "pstrain-worker: " << note << "\n"; });
  if (!setup.ok()) {
    std::cerr << "pstrain-worker: " << setup.status().message() << "\n";
    return pstrain::kExitBadConfiguration;
  }
  absl::StatusOr<WorkerConfig> config = LoadConfig(*setup);
  if (!config.ok()) {
    std::cerr << "pstrain-worker: bad configuration: " << config.status().message() << "\n";
    return pstrain::kExitBadConfiguration;
  }
  pstrain::KeepFreedBuffersForReuse();  // tensor-sized buffers cycle per step: see malloc_tuning.h
  pstrain::BlockStopSignals();          // before any thread starts, so only WaitForStop receives them

  const std::string& task = setup->task;
  pstrain::MetricsRegistry metrics;
  pstrain::AddProcessMetrics(&metrics, task, pstrain::kWorker);
  auto metrics_server =
      pstrain::ServeMetrics(&metrics, setup->metrics_host, setup->metrics_port, "pstrain-worker: " + task);
  if (!metrics_server.ok()) {
    std::cerr << "pstrain-worker: " << task << ": " << metrics_server.status().message() << "\n";
    return pstrain::ExitCodeFor(metrics_server.status());
  }
  std::cerr << "pstrain-worker: " << task << ": " << pstrain::DescribeTls(setup->transport.tls) << std::endl;
  pstrain::Worker worker(pstrain::Env::Default(), config->options, MeteredPsClients(&metrics, setup->transport),
                         config->compute);
  auto server = pstrain::WorkerGrpcServer::Start(
      &worker, setup->listen, pstrain::RequestRemoteShutdown, &metrics, setup->transport.tls,
      [task](const std::string& line) { std::cerr << "pstrain-worker: " << task << ": " << line << std::endl; });
  if (!server.ok()) {
    std::cerr << "pstrain-worker: " << task << ": " << server.status().message() << "\n";
    return pstrain::kExitRuntimeFailure;
  }
  std::cerr << "pstrain-worker: " << task << " serving on " << setup->listen << " (device "
            << absl::GetFlag(FLAGS_device) << ", " << config->options.threads << " threads, "
            << config->options.replicas << " replicas; tensors to the ps over "
            << (setup->transport.kind == pstrain::TransportKind::kGrpc ? "unary gRPC" : "the tensor channel")
            << "; cpu kernels " << pstrain::DescribeCpuLevel() << ")" << std::endl;
  const pstrain::StopReason stop = pstrain::WaitForStop();
  std::cerr << "pstrain-worker: " << task << " stopping: " << stop.description << std::endl;
  // A signal is an orchestrator's stop (exit 143, as every binary); the chief's Shutdown a failed job.
  const int exit_code = stop.remote ? pstrain::kExitRuntimeFailure : pstrain::kExitStoppedBySignal;
  worker.Shutdown();
  // A step blocked on a ps (a sync pull waiting for other workers) cannot be interrupted; do not
  // let it hold the exit longer than a few seconds.
  std::thread stopper([&server] { (*server)->Shutdown(absl::Seconds(1)); });
  for (int i = 0; i < 50 && !(*server)->stopped(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (!(*server)->stopped()) {
    std::cerr << "pstrain-worker: " << task << " exiting with a call still waiting on a ps" << std::endl;
    std::_Exit(exit_code);
  }
  stopper.join();
  // Every push a ps acknowledged, per shard: what a lost ps must not have lost (ps_replicas).
  std::string acked;
  int64_t total = 0;
  for (const auto& [shard, n] : worker.AcknowledgedPushes()) {
    absl::StrAppend(&acked, acked.empty() ? "" : " ", shard, "=", n);
    total += n;
  }
  std::cerr << "pstrain-worker: " << task << " acknowledged pushes: " << total << " (" << acked << ")" << std::endl;
  return exit_code;
}
