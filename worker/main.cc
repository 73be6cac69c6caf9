// pstrain-worker: validates its TF_CONFIG and job flags. Serving is added by the worker library.
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "common/cluster_spec.h"
#include "common/exit_codes.h"

ABSL_FLAG(std::string, tf_config, "", "read TF_CONFIG from this file instead of the environment");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  auto config = pstrain::LoadTfConfig(absl::GetFlag(FLAGS_tf_config));
  absl::Status s = config.ok() ? pstrain::ValidateTaskForRole(*config, "worker") : config.status();
  if (!s.ok()) {
    std::cerr << "pstrain-worker: bad configuration: " << s.message() << "\n";
    return pstrain::kExitBadConfiguration;
  }
  std::cerr << "pstrain-worker: " << config->task->ToString() << " configuration is valid; serving is not built yet\n";
  return pstrain::kExitRuntimeFailure;
}
