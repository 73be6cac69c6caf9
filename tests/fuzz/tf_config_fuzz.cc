// libFuzzer target: the TF_CONFIG parser (TensorFlow's and Kubeflow's shapes) and the role checks
// behind it. Beyond "no crash, no sanitizer report": an accepted config names only tasks it holds,
// and every error message is bounded.
#include <cstddef>
#include <cstdint>

#include "common/config/cluster_spec.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pstrain;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<TfConfig> config = ParseTfConfig(text);
  if (!config.ok()) {
    fuzz::Check(!config.status().message().empty() && config.status().message().size() < 64 * 1024);
    return 0;
  }
  for (const char* role : {kChief, kWorker, kPs, kEvaluator}) {
    absl::Status s = ValidateTaskForRole(*config, role);
    fuzz::Check(s.ok() || !s.message().empty());
  }
  for (const auto& [job, tasks] : config->cluster.jobs()) {
    for (const auto& [index, address] : tasks) {
      absl::StatusOr<std::string> a = config->cluster.Address(job, index);
      fuzz::Check(a.ok() && *a == address);
    }
  }
  return 0;
}
