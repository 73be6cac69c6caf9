#include "common/config/cluster_spec.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config/json_util.h"
#include "common/config/kubeflow_tf_config.h"
#include "common/config/value_range.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

constexpr const char* kKnownJobs[] = {kChief, kWorker, kPs, kEvaluator};
// Task indices above this are typos: no cluster has a million tasks of one type.
constexpr int64_t kMaxTaskIndex = 1000000;

bool IsKnownJob(absl::string_view job) {
  for (const char* known : kKnownJobs) {
    if (job == known) return true;
  }
  return false;
}

// " (did you mean "worker"?)" when `name` is close to one of `known`, else "".
std::string DidYouMean(absl::string_view name, const std::vector<std::string>& known) {
  const std::string near = NearestName(name, known);
  return near.empty() ? "" : absl::StrCat(" (did you mean \"", near, "\"?)");
}

// `; did you mean "task"?` when `doc` has a key close to the missing `key`.
std::string NearKeyHint(const nlohmann::json& doc, const std::string& key) {
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (!NearestName(it.key(), {key}).empty())
      return absl::StrCat("; did you mean \"", key, "\" for ", QuotedExcerpt(it.key()), "?");
  }
  return "";
}

bool IsDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  return true;
}

absl::Status ParseAddressEntry(const nlohmann::json& value, const std::string& field, std::string* out) {
  if (!value.is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be a \"host:port\" string, got ", JsonExcerpt(value)));
  }
  *out = value.get<std::string>();
  return ValidateAddress(*out, field);
}

absl::StatusOr<std::map<int, std::string>> ParseJob(const std::string& job, const nlohmann::json& value) {
  std::map<int, std::string> tasks;
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      RETURN_IF_ERROR(ParseAddressEntry(value[i], absl::StrCat("cluster.", job, "[", i, "]"), &tasks[i]));
    }
    return tasks;
  }
  if (value.is_object()) {
    for (const auto& [key, entry] : value.items()) {
      int index = 0;
      if (!IsDigits(key) || !absl::SimpleAtoi(key, &index) || index > kMaxTaskIndex) {
        return absl::InvalidArgumentError(
            absl::StrCat("cluster.", job, " key ", QuotedExcerpt(key), " is not a task index (0..", kMaxTaskIndex,
                         "); a sparse job maps indices to addresses, e.g. {\"1\": \"host:2222\"}"));
      }
      RETURN_IF_ERROR(ParseAddressEntry(entry, absl::StrCat("cluster.", job, "[\"", key, "\"]"), &tasks[index]));
    }
    return tasks;
  }
  return absl::InvalidArgumentError(absl::StrCat("cluster.", job,
                                                 " must be a list of \"host:port\" strings or a map "
                                                 "{\"index\": \"host:port\"}, got ",
                                                 JsonExcerpt(value)));
}

absl::StatusOr<int> ParseTaskIndex(const nlohmann::json& task) {
  auto it = task.find("index");
  if (it == task.end() || it->is_null()) return 0;  // TensorFlow defaults the index to 0
  if (it->is_number_integer()) {
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(kMaxTaskIndex)) {
      return absl::InvalidArgumentError(
          absl::StrCat("task.index ", it->get<uint64_t>(), " is out of range (at most ", kMaxTaskIndex, ")"));
    }
    const int64_t v = it->get<int64_t>();
    if (v < 0)
      return absl::InvalidArgumentError(absl::StrCat("task.index ", v, " is negative; task indices start at 0"));
    if (v > kMaxTaskIndex) {
      return absl::InvalidArgumentError(
          absl::StrCat("task.index ", v, " is out of range (at most ", kMaxTaskIndex, ")"));
    }
    return static_cast<int>(v);
  }
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    int64_t v = 0;
    if (IsDigits(s)) {
      if (s.size() <= 18 && absl::SimpleAtoi(s, &v) && v <= kMaxTaskIndex) return static_cast<int>(v);
      return absl::InvalidArgumentError(
          absl::StrCat("task.index ", QuotedExcerpt(s), " is out of range (at most ", kMaxTaskIndex, ")"));
    }
    if (!s.empty() && s[0] == '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("task.index ", QuotedExcerpt(s), " is negative; task indices start at 0"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("task.index ", QuotedExcerpt(s), " is not a number; give an integer such as 0 or \"0\""));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("task.index must be an integer or a string of digits, got ", JsonExcerpt(*it)));
}

absl::StatusOr<TaskId> ParseTask(const nlohmann::json& task) {
  if (!task.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task must be an object like {\"type\": \"worker\", \"index\": 0}, got ", JsonExcerpt(task)));
  }
  auto type_it = task.find("type");
  if (type_it == task.end() || !type_it->is_string()) {
    return absl::InvalidArgumentError(
        "task.type is missing or not a string; set it to one of chief, worker, ps, evaluator");
  }
  TaskId id;
  id.type = type_it->get<std::string>();
  if (!IsKnownJob(id.type)) {
    return absl::InvalidArgumentError(absl::StrCat("task.type ", QuotedExcerpt(id.type),
                                                   " is not a task type pstrain knows; use one of chief, worker, ps, "
                                                   "evaluator",
                                                   DidYouMean(id.type, {kChief, kWorker, kPs, kEvaluator})));
  }
  ASSIGN_OR_RETURN(id.index, ParseTaskIndex(task));
  return id;
}

// `given_type` is task.type as written ("master" for a chief named the legacy way).
absl::Status ValidateTaskInCluster(const ClusterSpec& cluster, const TaskId& task, const std::string& given_type) {
  if (!cluster.HasJob(task.type)) {
    if (given_type != task.type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task.type \"", given_type, "\" is Kubeflow's legacy name of the chief, and cluster has no chief or ",
          given_type, ": a ps or a worker sets task.type to \"ps\" or \"worker\"; a chief adds cluster.chief with "
          "its address"));
    }
    // The evaluator runs outside the training cluster, as in TensorFlow.
    if (task.type == kEvaluator) {
      if (task.index != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("task.index ", task.index, " is out of range: there is only one evaluator (index 0)"));
      }
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat("task.type \"", task.type,
                                                   "\" has no entries in cluster; add cluster.", task.type,
                                                   " with this task's address"));
  }
  const std::vector<int> indices = cluster.TaskIndices(task.type);
  for (int i : indices) {
    if (i == task.index) return absl::OkStatus();
  }
  const int n = cluster.NumTasks(task.type);
  const bool dense = indices.back() == n - 1;
  if (dense) {
    return absl::InvalidArgumentError(absl::StrCat("task.index ", task.index, " is out of range: cluster.", task.type,
                                                   " has ", n, n == 1 ? " entry" : " entries", " (0..", n - 1, ")"));
  }
  return absl::InvalidArgumentError(absl::StrCat("task.index ", task.index, " is not in cluster.", task.type,
                                                 ": it has indices ", absl::StrJoin(indices, ", ")));
}

}  // namespace

namespace {

// ValidateAddress and ValidateListenAddress: ports below `min_port` are refused.
absl::Status CheckAddress(absl::string_view address, absl::string_view field, int min_port) {
  const std::string hint = absl::StrCat(" (expected \"host:port\", e.g. \"localhost:2222\")");
  if (address.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is an empty address", hint));
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(field, " \"", address, "\" has no port", hint));
  }
  absl::string_view host = address.substr(0, colon);
  absl::string_view port = address.substr(colon + 1);
  if (host.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " \"", address, "\" has no host", hint));
  if (host.front() == '[' ? host.back() != ']' : host.find(':') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " \"", address, "\" is malformed; write IPv6 hosts in brackets, e.g. \"[::1]:2222\""));
  }
  for (char c : host) {
    if (absl::ascii_isspace(c) || c == '/') {
      return absl::InvalidArgumentError(absl::StrCat(field, " \"", address, "\" has an invalid host", hint));
    }
  }
  int port_num = 0;
  if (!IsDigits(port) || !absl::SimpleAtoi(port, &port_num) || port_num < min_port || port_num > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(field, " \"", address, "\" has an invalid port \"", port,
                                                   "\"; ports are ", min_port, "..65535",
                                                   min_port == 0 ? " (0 picks a free one)" : ""));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateAddress(absl::string_view address, absl::string_view field) {
  return CheckAddress(address, field, 1);
}

absl::Status ValidateListenAddress(absl::string_view address, absl::string_view field) {
  return CheckAddress(address, field, 0);
}

int ClusterSpec::NumTasks(absl::string_view job) const {
  auto it = jobs_.find(std::string(job));
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

std::vector<int> ClusterSpec::TaskIndices(absl::string_view job) const {
  std::vector<int> out;
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) return out;
  for (const auto& [index, address] : it->second) out.push_back(index);
  return out;
}

absl::StatusOr<std::string> ClusterSpec::Address(absl::string_view job, int index) const {
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("cluster has no job \"", job, "\""));
  auto task = it->second.find(index);
  if (task == it->second.end()) {
    return absl::NotFoundError(absl::StrCat("cluster.", job, " has no task ", index, " (indices ",
                                            absl::StrJoin(TaskIndices(job), ", "), ")"));
  }
  return task->second;
}

std::vector<std::string> ClusterSpec::Addresses(absl::string_view job) const {
  std::vector<std::string> out;
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) return out;
  for (const auto& [index, address] : it->second) out.push_back(address);
  return out;
}

namespace {

// The form two addresses are compared in: host lower-cased, "localhost" as 127.0.0.1 (what every
// local cluster uses), brackets of an IPv6 host dropped.
std::string CanonicalAddress(const std::string& address) {
  std::string host, port;
  if (!SplitHostPort(address, &host, &port)) return address;
  host = absl::AsciiStrToLower(host);
  if (host == "localhost") host = "127.0.0.1";
  return absl::StrCat(host, ":", port);
}

// Two tasks at one address would both serve there (one fails to bind, or, with SO_REUSEPORT, the
// two split the calls): a run that mixes two tasks' shards. Refused, naming both tasks.
absl::Status CheckDistinctAddresses(const ClusterSpec& spec) {
  std::map<std::string, TaskId> seen;
  for (const auto& [job, tasks] : spec.jobs()) {
    for (const auto& [index, address] : tasks) {
      const TaskId task{job, index};
      auto [it, inserted] = seen.emplace(CanonicalAddress(address), task);
      if (inserted) continue;
      const std::string& first_address = spec.jobs().at(it->second.type).at(it->second.index);
      const std::string spelled = first_address == address ? "" : absl::StrCat(" (as \"", first_address, "\")");
      return absl::InvalidArgumentError(absl::StrCat("cluster gives ", it->second.ToString(), " and ", task.ToString(),
                                                     " the same address \"", address, "\"", spelled,
                                                     "; every task needs its own host:port (give ", task.ToString(),
                                                     " another port)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterSpec> ClusterSpec::FromJson(const nlohmann::json& cluster) {
  if (!cluster.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster must be an object mapping job names to address lists, got ", JsonExcerpt(cluster)));
  }
  ClusterSpec spec;
  for (const auto& [job, value] : cluster.items()) {
    if (!IsKnownJob(job)) {
      return absl::InvalidArgumentError(absl::StrCat("cluster.", QuotedExcerpt(job),
                                                     " is not a job pstrain knows; use chief, worker, ps or "
                                                     "evaluator",
                                                     DidYouMean(job, {kChief, kWorker, kPs, kEvaluator})));
    }
    ASSIGN_OR_RETURN(auto tasks, ParseJob(job, value));
    if (tasks.empty()) continue;  // an empty job is the same as an absent one
    spec.jobs_[job] = std::move(tasks);
  }
  for (const char* single : {kChief, kEvaluator}) {
    const int n = spec.NumTasks(single);
    if (n > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.", single, " has ", n, " entries; there must be at most one ", single));
    }
  }
  RETURN_IF_ERROR(CheckDistinctAddresses(spec));
  return spec;
}

absl::StatusOr<TfConfig> ParseTfConfig(absl::string_view json_text) {
  ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(json_text, "TF_CONFIG"));
  if (!doc.is_object()) {
    return absl::InvalidArgumentError("TF_CONFIG must be a JSON object with \"cluster\" and \"task\"");
  }
  TfConfig config;
  std::string given_type;  // before Kubeflow's "master" is renamed
  if (auto t = doc.find("task"); t != doc.end() && t->is_object()) {
    if (auto type = t->find("type"); type != t->end() && type->is_string()) given_type = type->get<std::string>();
  }
  RETURN_IF_ERROR(NormalizeKubeflowTfConfig(&doc, &config.notes, &config.sparse));
  auto cluster_it = doc.find("cluster");
  if (cluster_it == doc.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TF_CONFIG has no \"cluster\"; add {\"cluster\": {\"worker\": [...], \"ps\": [...]}}",
                     NearKeyHint(doc, "cluster")));
  }
  ASSIGN_OR_RETURN(config.cluster, ClusterSpec::FromJson(*cluster_it));
  auto task_it = doc.find("task");
  if (task_it == doc.end()) config.missing_task_hint = NearKeyHint(doc, "task");
  if (task_it != doc.end() && !task_it->is_null()) {
    ASSIGN_OR_RETURN(TaskId task, ParseTask(*task_it));
    if (config.sparse && task.type == kChief) {
      return absl::InvalidArgumentError(
          "TF_CONFIG has a sparseCluster (Kubeflow's enableDynamicWorker), which gives the chief no ps or worker "
          "addresses, but the chief must reach every task: give it the whole cluster with --tf_config=FILE (a "
          "TF_CONFIG whose \"cluster\" lists every ps and worker, and the chief's own address)");
    }
    RETURN_IF_ERROR(ValidateTaskInCluster(config.cluster, task, given_type.empty() ? task.type : given_type));
    config.task = task;
    config.task_type_given = given_type.empty() ? task.type : given_type;
  }
  auto rpc_it = doc.find("rpc_layer");
  if (rpc_it != doc.end() && !rpc_it->is_null()) {
    if (!rpc_it->is_string()) return absl::InvalidArgumentError("rpc_layer must be a string such as \"grpc\"");
    config.rpc_layer = rpc_it->get<std::string>();
    if (config.rpc_layer.empty()) config.rpc_layer = "grpc";
    if (config.rpc_layer != "grpc") {
      return absl::InvalidArgumentError(absl::StrCat("rpc_layer \"", config.rpc_layer,
                                                     "\" is not served; pstrain speaks only \"grpc\" (remove "
                                                     "rpc_layer or set it to \"grpc\")"));
    }
  }
  return config;
}

absl::StatusOr<TfConfig> LoadTfConfig(const std::string& path, const std::function<const char*(const char*)>& getenv) {
  if (!path.empty()) {
    absl::StatusOr<std::string> text = ReadJsonText(path);
    if (!text.ok())
      return absl::Status(text.status().code(), absl::StrCat("the TF_CONFIG file: ", text.status().message()));
    return ParseTfConfig(*text);
  }
  const char* env = getenv("TF_CONFIG");
  if (env == nullptr || *env == '\0') {
    return absl::FailedPreconditionError(
        "TF_CONFIG is not set; export TF_CONFIG='{\"cluster\": {...}, \"task\": {\"type\": ..., \"index\": ...}}' "
        "or pass --tf_config=FILE");
  }
  return ParseTfConfig(env);
}


absl::Status ValidateTaskForRole(const TfConfig& config, absl::string_view expected_type) {
  if (!config.task.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("TF_CONFIG has no \"task\"; this binary needs {\"type\": \"",
                                                   expected_type, "\", \"index\": N}", config.missing_task_hint));
  }
  if (config.task->type != expected_type) {
    if (!config.task_type_given.empty() && config.task_type_given != config.task->type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task.type is \"", config.task_type_given, "\" (Kubeflow's legacy name of the chief) but this is the ",
          expected_type, " binary; set task.type to \"", expected_type, "\", or run pstrain-chief for the chief"));
    }
    return absl::InvalidArgumentError(absl::StrCat("task.type is \"", config.task->type, "\" but this is the ",
                                                   expected_type, " binary; run pstrain-", config.task->type,
                                                   " for that task or set task.type to \"", expected_type, "\""));
  }
  // A sparse ps knows its own address only (checked when parsed); the evaluator needs none.
  if (config.sparse && (expected_type == kPs || expected_type == kEvaluator)) return absl::OkStatus();
  if (config.cluster.NumTasks(kPs) == 0) {
    return absl::InvalidArgumentError(
        "cluster has no ps tasks; a training cluster needs cluster.ps with at least one address");
  }
  if (config.cluster.NumTasks(kWorker) == 0) {
    return absl::InvalidArgumentError(
        "cluster has no worker tasks; a training cluster needs cluster.worker with at least one address");
  }
  return absl::OkStatus();
}

bool SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  return !port->empty();
}

}  // namespace pstrain
