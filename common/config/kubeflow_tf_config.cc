#include "common/config/kubeflow_tf_config.h"

#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

// A task index given as a number or a string of digits, or -1.
int IndexOf(const nlohmann::json& task) {
  auto it = task.find("index");
  if (it == task.end() || it->is_null()) return 0;
  if (it->is_number_unsigned() || it->is_number_integer()) return it->get<int>();
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos && s.size() < 9) return std::stoi(s);
  }
  return -1;
}

}  // namespace

absl::Status NormalizeKubeflowTfConfig(nlohmann::json* doc, std::vector<std::string>* notes, bool* sparse) {
  *sparse = false;
  if (!doc->is_object()) return absl::OkStatus();
  if (doc->contains("sparseCluster")) {
    if (doc->contains("cluster")) {
      return absl::InvalidArgumentError(
          "TF_CONFIG has both \"cluster\" and \"sparseCluster\"; give one (Kubeflow writes sparseCluster only for "
          "jobs with enableDynamicWorker)");
    }
    nlohmann::json cluster = (*doc)["sparseCluster"];
    doc->erase("sparseCluster");
    const nlohmann::json task = doc->value("task", nlohmann::json::object());
    // A ps is given only its own address, as the one entry of the list: key it by its index.
    if (cluster.is_object() && task.is_object() && task.value("type", "") == "ps" && cluster.contains("ps") &&
        cluster["ps"].is_array() && cluster["ps"].size() == 1 && IndexOf(task) > 0) {
      cluster["ps"] = nlohmann::json{{std::to_string(IndexOf(task)), cluster["ps"][0]}};
    }
    (*doc)["cluster"] = cluster;
    *sparse = true;
    notes->push_back(
        "TF_CONFIG has a sparseCluster (Kubeflow's dynamic workers): this task knows only the addresses it needs");
  }
  auto cluster = doc->find("cluster");
  if (cluster != doc->end() && cluster->is_object() && cluster->contains("master")) {
    if (cluster->contains("chief") && !(*cluster)["chief"].empty()) {
      return absl::InvalidArgumentError(
          "TF_CONFIG's cluster has both \"chief\" and \"master\"; \"master\" is the legacy name of the chief: keep "
          "one");
    }
    (*cluster)["chief"] = (*cluster)["master"];
    cluster->erase("master");
    notes->push_back("TF_CONFIG names the chief \"master\" (Kubeflow's legacy name): cluster.master is the chief");
  }
  auto task = doc->find("task");
  // Only a string type is looked at here (json::value throws on any other); the role checks name
  // a wrong one.
  if (task != doc->end() && task->is_object() && task->contains("type") && (*task)["type"].is_string() &&
      (*task)["type"].get<std::string>() == "master") {
    (*task)["type"] = "chief";
    notes->push_back("task.type \"master\" (Kubeflow's legacy name of the chief) is run as the chief");
  }
  return absl::OkStatus();
}

}  // namespace pstrain
