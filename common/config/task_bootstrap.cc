#include "common/config/task_bootstrap.h"

#include <algorithm>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/metrics/metrics_endpoint.h"
#include "common/platform/status_macros.h"

ABSL_FLAG(std::string, tf_config, "", "read TF_CONFIG from this file instead of the environment");
ABSL_FLAG(std::string, slurm_tasks, "",
          "under srun without a TF_CONFIG: the cluster from the Slurm step, its ranks given roles in this order, e.g. "
          "chief:1,ps:2,worker:4[,evaluator:1] (the evaluator stays outside the cluster); an explicit TF_CONFIG wins");
ABSL_FLAG(int, slurm_port_base, pstrain::kDefaultSlurmPortBase,
          "with --slurm_tasks: a task listens at this port plus its index on its node (SLURM_LOCALID)");
ABSL_FLAG(std::string, listen, "",
          "address to listen on (default 0.0.0.0:<port of this task in the cluster>): the ps's and the worker's "
          "services, the chief's status service; --metrics_port listens on its host too");
ABSL_FLAG(std::string, tls_dir, "",
          "mutual TLS: directory of the cluster's ca.crt and this task's certificate and key (<type>-<index>.crt / "
          ".key, as pstrain certs writes them); also PSTRAIN_TLS_DIR. Without it (or --tls_ca/--tls_cert/--tls_key) "
          "every connection is plaintext");
ABSL_FLAG(std::string, tls_ca, "", "the cluster CA certificate (overrides --tls_dir's; also PSTRAIN_TLS_CA)");
ABSL_FLAG(std::string, tls_cert, "", "this task's certificate (overrides --tls_dir's; also PSTRAIN_TLS_CERT)");
ABSL_FLAG(std::string, tls_key, "", "this task's private key (overrides --tls_dir's; also PSTRAIN_TLS_KEY)");
ABSL_FLAG(std::string, ps_transport, "tensor_channel",
          "how pulls and pushes reach the ps: tensor_channel (the ps's own framing on its port; fastest) or grpc "
          "(unary gRPC calls, for networks that pass only HTTP/2); a ps forwards updates to the ps holding their "
          "backups (job option ps_replicas) the same way");
ABSL_FLAG(int, metrics_port, 0,
          "serve Prometheus metrics at http://<host of --listen>:PORT/metrics (0 = off; without --listen, on every "
          "interface)");

namespace pstrain {
namespace {

// `s` with its message made whole for "<program>: ", its code kept.
absl::Status Bad(absl::string_view what, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

// The type this binary runs as: the task's own when it is one of `types`, else the first (which
// ValidateTaskForRole then names as this binary's).
const char* RunAs(const TfConfig& config, absl::Span<const char* const> types) {
  if (config.task.has_value()) {
    for (const char* type : types) {
      if (config.task->type == type) return type;
    }
  }
  return types.front();
}

absl::StatusOr<TfConfig> LoadValidTfConfig(const std::string& path, absl::Span<const char* const> types,
                                           const Getenv& getenv, const std::function<void(const std::string&)>& note) {
  ASSIGN_OR_RETURN(TfConfig config, LoadTfConfig(path, getenv));
  for (const std::string& line : config.notes) note(line);
  RETURN_IF_ERROR(ValidateTaskForRole(config, RunAs(config, types)));
  return config;
}

// The cluster from the Slurm step; its task must be one this binary runs.
absl::StatusOr<TfConfig> LoadSlurmCluster(const TaskFlagValues& flags, absl::Span<const char* const> types,
                                          const Getenv& getenv, const std::function<void(const std::string&)>& note) {
  ASSIGN_OR_RETURN(SlurmCluster slurm, ResolveSlurmCluster(flags.slurm_tasks, flags.slurm_port_base, getenv));
  const std::string& type = slurm.tf_config.task->type;
  if (std::find(types.begin(), types.end(), type) == types.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", slurm.rank, " is ", slurm.tf_config.task->ToString(), " by --slurm_tasks=", flags.slurm_tasks,
        " but this is ", BinaryForTaskType(types.front()), "; start rank ", slurm.rank, " with ",
        BinaryForTaskType(type), " (srun --multi-prog: deploy/slurm/)"));
  }
  note(slurm.description);
  return std::move(slurm.tf_config);
}

// The cluster and this task: an explicit TF_CONFIG wins, else the Slurm step when --slurm_tasks is
// given. Errors carry their prefix.
absl::StatusOr<TfConfig> LoadCluster(const TaskFlagValues& flags, absl::Span<const char* const> types,
                                     const Getenv& getenv, const std::function<void(const std::string&)>& note) {
  const char* variable = getenv("TF_CONFIG");
  const bool tf_config_given = !flags.tf_config.empty() || (variable != nullptr && *variable != '\0');
  if (!tf_config_given && !flags.slurm_tasks.empty()) {
    absl::StatusOr<TfConfig> config = LoadSlurmCluster(flags, types, getenv, note);
    if (!config.ok()) return Bad("bad Slurm configuration", config.status());
    return config;
  }
  absl::StatusOr<TfConfig> config = LoadValidTfConfig(flags.tf_config, types, getenv, note);
  if (!config.ok()) {
    absl::Status s = config.status();
    if (!tf_config_given && getenv("SLURM_PROCID") != nullptr) {  // inside a Slurm step: say how to use it
      s = absl::Status(s.code(), absl::StrCat(s.message(), "; or, under srun, --slurm_tasks=chief:1,ps:N,worker:M"));
    }
    return Bad("bad TF_CONFIG", s);
  }
  note(absl::StrCat("cluster from TF_CONFIG (",
                    flags.tf_config.empty() ? "the TF_CONFIG variable" : "the file " + flags.tf_config, ")",
                    flags.slurm_tasks.empty() ? "" : "; --slurm_tasks is ignored: an explicit TF_CONFIG wins"));
  return config;
}

// --listen, else every interface at the port of `address`; "" when neither is known.
std::string ListenAddress(const std::string& flag, const std::string& address) {
  if (!flag.empty() || address.empty()) return flag;
  return absl::StrCat("0.0.0.0:", address.substr(address.rfind(':') + 1));
}

}  // namespace

TaskFlagValues SharedTaskFlags() {
  TaskFlagValues flags;
  flags.tf_config = absl::GetFlag(FLAGS_tf_config);
  flags.slurm_tasks = absl::GetFlag(FLAGS_slurm_tasks);
  flags.slurm_port_base = absl::GetFlag(FLAGS_slurm_port_base);
  flags.listen = absl::GetFlag(FLAGS_listen);
  flags.tls = {absl::GetFlag(FLAGS_tls_dir), absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert),
               absl::GetFlag(FLAGS_tls_key)};
  flags.ps_transport = absl::GetFlag(FLAGS_ps_transport);
  flags.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  return flags;
}

absl::StatusOr<TaskSetup> SetUpTask(Env* env, const TaskFlagValues& flags, absl::Span<const char* const> types,
                                    const Getenv& getenv, const std::function<void(const std::string&)>& note) {
  TaskSetup out;
  ASSIGN_OR_RETURN(out.tf_config, LoadCluster(flags, types, getenv, note));
  out.type = out.tf_config.task->type;
  out.task = out.tf_config.task->ToString();
  absl::StatusOr<std::string> address = out.tf_config.cluster.Address(out.type, out.tf_config.task->index);
  // A worker or ps serves at its address; the chief's status service needs one only without --listen,
  // and the evaluator serves nothing but metrics.
  if (address.ok()) {
    out.address = *address;
  } else if (out.type == kWorker || out.type == kPs) {
    return Bad("bad TF_CONFIG", address.status());
  }
  absl::StatusOr<CpuLevel> level = ConfigureCpuLevel(getenv(kCpuLevelEnv));
  if (!level.ok()) return Bad("bad configuration", level.status());
  out.cpu_level = *level;
  absl::StatusOr<TransportKind> kind = ParseTransportKind(flags.ps_transport);
  if (!kind.ok()) return Bad("bad configuration", kind.status());
  out.transport.kind = *kind;
  absl::StatusOr<TlsConfig> tls = LoadTlsConfig(env, TlsFilesWithEnvironment(flags.tls, getenv), out.task);
  if (!tls.ok()) return Bad("bad configuration", tls.status());
  out.transport.tls = *std::move(tls);
  out.transport.caller = out.task;
  out.listen = ListenAddress(flags.listen, out.address);
  if (!out.listen.empty()) {
    absl::Status valid = ValidateListenAddress(out.listen, "--listen");
    if (!valid.ok()) return Bad("bad configuration", valid);
  }
  out.metrics_host = out.listen.empty() ? "0.0.0.0" : ListenHost(out.listen);
  out.metrics_port = flags.metrics_port;
  return out;
}

absl::StatusOr<TaskSetup> BootstrapTask(Env* env, absl::Span<const char* const> types, const Getenv& getenv,
                                        const std::function<void(const std::string&)>& note) {
  return SetUpTask(env, SharedTaskFlags(), types, getenv, note);
}

}  // namespace pstrain
