// The cluster spec and task identity from a TF_CONFIG-style JSON document, with TensorFlow's
// semantics: jobs chief/worker/ps/evaluator given as lists of "host:port" or sparse maps
// {"1": "host:port"}; task {type, index} (index a number or a string of digits); rpc_layer "grpc".
// Every violation is an InvalidArgument that names the field and says how to fix it.
// Thread-safety: immutable values after construction; safe to share.
#ifndef PSTRAIN_COMMON_CONFIG_CLUSTER_SPEC_H_
#define PSTRAIN_COMMON_CONFIG_CLUSTER_SPEC_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace pstrain {

inline constexpr char kChief[] = "chief";
inline constexpr char kWorker[] = "worker";
inline constexpr char kPs[] = "ps";
inline constexpr char kEvaluator[] = "evaluator";

struct TaskId {
  std::string type;
  int index = 0;
  std::string ToString() const { return type + ":" + std::to_string(index); }
};

class ClusterSpec {
 public:
  ClusterSpec() = default;

  // Parses and validates the "cluster" object of TF_CONFIG.
  static absl::StatusOr<ClusterSpec> FromJson(const nlohmann::json& cluster);

  bool HasJob(absl::string_view job) const { return jobs_.count(std::string(job)) > 0; }
  // Number of tasks of `job` (0 when absent).
  int NumTasks(absl::string_view job) const;
  // Task indices of `job` in increasing order (sparse jobs may skip some).
  std::vector<int> TaskIndices(absl::string_view job) const;
  // Address of one task; NotFound naming the job and the valid indices.
  absl::StatusOr<std::string> Address(absl::string_view job, int index) const;
  // Addresses of `job` ordered by task index.
  std::vector<std::string> Addresses(absl::string_view job) const;
  const std::map<std::string, std::map<int, std::string>>& jobs() const { return jobs_; }

 private:
  std::map<std::string, std::map<int, std::string>> jobs_;
};

struct TfConfig {
  ClusterSpec cluster;
  std::optional<TaskId> task;
  std::string task_type_given;  // task.type as written: "master" for a chief named the legacy way
  std::string rpc_layer = "grpc";
  std::string missing_task_hint;  // when "task" is absent: a hint naming a near key ("tsak"), or ""
  // Kubeflow's shapes (common/config/kubeflow_tf_config.h): a sparseCluster names only what this task
  // needs; `notes` says what was read differently from TensorFlow's shape, one line each.
  bool sparse = false;
  std::vector<std::string> notes;
};

// Parses a whole TF_CONFIG document (rules in the file comment), also in Kubeflow's "master" and
// "sparseCluster" shapes. `task` is optional here.
absl::StatusOr<TfConfig> ParseTfConfig(absl::string_view json_text);

// Reads TF_CONFIG from the file `path` when non-empty, otherwise from the TF_CONFIG environment
// variable, looked up with `getenv` (main passes std::getenv). FailedPrecondition when neither is
// set; NotFound when the file cannot be read.
absl::StatusOr<TfConfig> LoadTfConfig(const std::string& path, const std::function<const char*(const char*)>& getenv);

// Checks that `config` describes a task of `expected_type` inside a cluster able to train (at least
// one ps and one worker). With a sparseCluster, a ps needs only its own address and a worker its
// own and the ps's; the chief, which must reach every task, is refused with a way out.
// InvalidArgument naming what is missing.
absl::Status ValidateTaskForRole(const TfConfig& config, absl::string_view expected_type);

// Splits "host:port", "[v6]:port" (brackets dropped) or ":port"; false when there is no port.
bool SplitHostPort(const std::string& address, std::string* host, std::string* port);

// Splits "host:port" (also "[v6]:port"). InvalidArgument naming `field` when malformed or the port
// is outside 1..65535.
absl::Status ValidateAddress(absl::string_view address, absl::string_view field);

// A task's --listen address: as ValidateAddress, but port 0 (the system picks a free port) is
// allowed. Checked before binding: a port beyond 65535 would otherwise wrap to another port.
absl::Status ValidateListenAddress(absl::string_view address, absl::string_view field);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_CLUSTER_SPEC_H_
