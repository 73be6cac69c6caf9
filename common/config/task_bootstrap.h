// The start-up every task binary shares (pstrain-chief, pstrain-worker, pstrain-ps): the flags they
// all take are defined once, in task_bootstrap.cc (--tf_config, --slurm_tasks, --slurm_port_base,
// --listen, --tls_dir, --tls_ca, --tls_cert, --tls_key, --ps_transport, --metrics_port), and
// BootstrapTask turns them, TF_CONFIG (or the Slurm step) and the environment into a TaskSetup: who
// this task is, where it listens, how it reaches the ps, its CPU level and its metrics port. A main
// parses its command line (task_flags.h), calls BootstrapTask, then reads its own flags. Only a
// binary that links pstrain_task_bootstrap has these flags (the `pstrain` tool does not).
// Thread-safety: call from main before any thread starts (it sets the process's CPU level).
#ifndef PSTRAIN_COMMON_CONFIG_TASK_BOOTSTRAP_H_
#define PSTRAIN_COMMON_CONFIG_TASK_BOOTSTRAP_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/config/cluster_spec.h"
#include "common/config/slurm_cluster.h"
#include "common/config/transport_config.h"
#include "common/platform/cpu_level.h"
#include "common/platform/env.h"
#include "common/security/tls_config.h"

namespace pstrain {

// Looks up an environment variable: null when unset. Mains pass std::getenv; tests a fake.
using Getenv = std::function<const char*(const char*)>;

// The shared flags' values, as given on the command line.
struct TaskFlagValues {
  std::string tf_config;                        // a TF_CONFIG file; "": the TF_CONFIG variable
  std::string slurm_tasks;                      // "": the cluster is not from a Slurm step (slurm_cluster.h)
  int slurm_port_base = kDefaultSlurmPortBase;  // a task's port: this + its index on its node
  std::string listen;                           // "": 0.0.0.0:<port of this task in TF_CONFIG>
  TlsFiles tls;                                 // --tls_dir, --tls_ca, --tls_cert, --tls_key
  std::string ps_transport = "tensor_channel";  // how pulls and pushes reach the ps
  int metrics_port = 0;                         // 0: no metrics server
};

// What a task is and how it talks, before anything of its role starts.
struct TaskSetup {
  TfConfig tf_config;         // validated for `type`: tf_config.task is set
  std::string type;           // the task's type (kChief, kEvaluator, kWorker or kPs)
  std::string task;           // "worker:0": its name in logs, metrics and certificates
  std::string address;        // its address in TF_CONFIG; "" for a chief or evaluator not listed there
  std::string listen;         // --listen, else 0.0.0.0:<port of `address`>; "" when neither is known
  std::string metrics_host;   // where --metrics_port listens: the host of `listen`, else 0.0.0.0
  int metrics_port = 0;       // ServeMetrics checks its range
  TransportConfig transport;  // --ps_transport, the TLS material for `task`, caller `task`
  // From PSTRAIN_CPU_LEVEL (the best this CPU has when unset); now the process's level.
  CpuLevel cpu_level = CpuLevel::kBaseline;
};

// The values of the shared flags. REQUIRES: the command line was parsed (ParseTaskCommandLine).
TaskFlagValues SharedTaskFlags();

// The setup of a task of one of `types`, the task types this binary serves (the chief's are
// {kChief, kEvaluator}; the first names the binary when TF_CONFIG's task is of none), from `flags`,
// TF_CONFIG (the file flags.tf_config, else getenv("TF_CONFIG")) and the variables `getenv` gives
// (PSTRAIN_CPU_LEVEL, PSTRAIN_TLS_*). Each of TF_CONFIG's notes (how a Kubeflow shape was read)
// goes to `note` as soon as it is read, so a later error does not hide it. A worker or ps must be
// listed in the cluster: it serves at that address. Sets the process's CPU level. `env` (not owned)
// reads the TLS files.
// REQUIRES: `types` is not empty.
// The cluster comes from TF_CONFIG when one is given (the file or a non-empty variable), else from
// the Slurm step when flags.slurm_tasks is set (slurm_cluster.h); a note names which, once it is read.
// Every error's message is whole after "<program>: ": "bad Slurm configuration: ..." for the Slurm
// step or --slurm_tasks (slurm_cluster.h's codes; InvalidArgument for a task of another binary's type);
// "bad TF_CONFIG: ..." when TF_CONFIG is unset
// (FailedPrecondition), unreadable (NotFound) or wrong (InvalidArgument: malformed, a task of another
// type, no task, no ps or worker; NotFound: this worker or ps not listed), "bad configuration: ..."
// for a bad --listen, --ps_transport or PSTRAIN_CPU_LEVEL (InvalidArgument) or TLS material
// (InvalidArgument, NotFound for a missing file). Each names what is wrong and how to fix it.
absl::StatusOr<TaskSetup> SetUpTask(Env* env, const TaskFlagValues& flags, absl::Span<const char* const> types,
                                    const Getenv& getenv, const std::function<void(const std::string&)>& note);

// SetUpTask with SharedTaskFlags(): what a main calls.
absl::StatusOr<TaskSetup> BootstrapTask(Env* env, absl::Span<const char* const> types, const Getenv& getenv,
                                        const std::function<void(const std::string&)>& note);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_TASK_BOOTSTRAP_H_
