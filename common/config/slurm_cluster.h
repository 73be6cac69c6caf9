// The cluster and this task from a Slurm job step, for tasks that srun starts without a TF_CONFIG
// (the facts as TensorFlow's SlurmClusterResolver reads them; see common/README.md):
// - SLURM_PROCID is this task's rank, SLURM_STEP_NUM_TASKS the step's task count;
// - SLURM_STEP_NODELIST ("node[01-03,7],gpu5") expands to the step's nodes, and
//   SLURM_STEP_TASKS_PER_NODE ("2(x3),1") to how many of its tasks each runs;
// - ranks sit on the nodes as SLURM_DISTRIBUTION says: block (the default: consecutive ranks share
//   a node) or cyclic (rank r on the r-th node round-robin); a task listens at the port
//   `port_base + its index on its node` (SLURM_LOCALID);
// - --slurm_tasks ("chief:1,ps:2,worker:4[,evaluator:1]") gives the ranks their roles in the order
//   written: there, rank 0 is the chief, ranks 1-2 ps:0-1, ranks 3-6 worker:0-3.
// Where TensorFlow's resolver goes wrong, this does not: the evaluator takes a rank but stays out of
// the cluster (it serves nothing); the task list never depends on GPUs (with none, TensorFlow's is
// empty); the nodes keep Slurm's order (ranks follow it; sorting by name would put node10 before
// node9); and each task checks that the layout puts it where Slurm did (SLURMD_NODENAME,
// SLURM_LOCALID), so a layout this cannot follow is an error, never a wrong cluster.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_CONFIG_SLURM_CLUSTER_H_
#define PSTRAIN_COMMON_CONFIG_SLURM_CLUSTER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/config/cluster_spec.h"

namespace pstrain {

// The most nodes a node list, or tasks a step, may name: far beyond a parameter-server job, and a bound
// on what a typo like node[0-999999999] may allocate.
inline constexpr int kMaxSlurmTasks = 65536;

// --slurm_port_base's default, TensorFlow's too.
inline constexpr int kDefaultSlurmPortBase = 8888;

// One role of --slurm_tasks.
struct SlurmRole {
  std::string type;  // kChief, kPs, kWorker or kEvaluator
  int count = 0;
};

// Expands a Slurm host list, order kept: "n[1-2],m5,o[08-10]" -> n1 n2 m5 o08 o09 o10 (a range is
// padded with zeros to the width of its first number; several bracket groups in one name expand as
// a product). InvalidArgument naming the part that is malformed (an unbalanced or nested bracket,
// an empty name or range, a range that runs backwards), a name given twice, or more than
// kMaxSlurmTasks names.
absl::StatusOr<std::vector<std::string>> ExpandSlurmHostlist(absl::string_view hostlist);

// Expands SLURM_STEP_TASKS_PER_NODE: "2(x3),1" -> 2 2 2 1. InvalidArgument naming the malformed
// part (counts are at least 1) or more than kMaxSlurmTasks entries.
absl::StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(absl::string_view tasks_per_node);

// Parses --slurm_tasks: comma-separated TYPE:COUNT with TYPE chief, ps, worker or evaluator, each
// once, order kept. InvalidArgument unless it has chief:1, ps and worker (at least 1 each), and at
// most evaluator:1.
absl::StatusOr<std::vector<SlurmRole>> ParseSlurmTasks(absl::string_view flag);

// What a task of a Slurm step is.
struct SlurmCluster {
  TfConfig tf_config;       // the cluster (chief, ps, worker; never the evaluator) and this task
  int rank = 0;             // SLURM_PROCID
  std::string description;  // one line: "cluster from Slurm: rank 3 of 7 on node02 is worker:0 at ..."
};

// The cluster and this task from --slurm_tasks (`tasks`), --slurm_port_base (`port_base`) and the
// Slurm variables `getenv` gives. REQUIRES: `tasks` is not empty. Errors, each naming the variable
// or flag and how to fix it: FailedPrecondition when a variable srun sets is missing (not inside a
// step); InvalidArgument when a variable is malformed, --slurm_tasks is malformed or counts other
// than the step's tasks, the ports run past 65535, the distribution is neither block nor cyclic, or
// the layout puts this task on another node or local index than Slurm did.
absl::StatusOr<SlurmCluster> ResolveSlurmCluster(absl::string_view tasks, int port_base,
                                                 const std::function<const char*(const char*)>& getenv);

// The binary that runs a task of `type` ("pstrain-chief" for the chief and the evaluator).
std::string BinaryForTaskType(absl::string_view type);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_SLURM_CLUSTER_H_
