// The two shapes of TF_CONFIG that Kubeflow's TFJob operator writes beyond TensorFlow's own, turned
// into the standard shape before ClusterSpec parses them:
// - "master": the legacy name of the chief (replica type Master). cluster.master becomes
//   cluster.chief and task.type "master" becomes "chief", with a note saying so.
// - "sparseCluster" (TFJob spec.enableDynamicWorker): each task gets only the addresses it needs,
//   {"sparseCluster": {"worker": {"<i>": "<its own address>"}, "ps": [<every ps>]}, ...} for a
//   worker, {"sparseCluster": {"worker": {}, "ps": ["<its own address>"]}, ...} for ps task i (so
//   the one entry is ps i, whatever i), and empty lists for the chief. It becomes "cluster" (a
//   ps's entry keyed by its own index) and the config is marked sparse (see ValidateTaskForRole).
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_CONFIG_KUBEFLOW_TF_CONFIG_H_
#define PSTRAIN_COMMON_CONFIG_KUBEFLOW_TF_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace pstrain {

// Rewrites `doc` (a TF_CONFIG object) as described above; appends one line per change to `notes`
// and sets `*sparse` when it held a sparseCluster. InvalidArgument when both "cluster" and
// "sparseCluster", or both "chief" and "master", are given.
absl::Status NormalizeKubeflowTfConfig(nlohmann::json* doc, std::vector<std::string>* notes, bool* sparse);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_KUBEFLOW_TF_CONFIG_H_
