#include "common/config/slurm_cluster.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/platform/status_macros.h"
#include "nlohmann/json.hpp"

namespace pstrain {
namespace {

absl::Status BadHostlist(absl::string_view hostlist, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("SLURM_STEP_NODELIST \"", hostlist, "\": ", why,
                                                 " (expected names and ranges such as node[01-03,7],gpu5)"));
}

// A number of at most 9 digits (so that sums and ranges stay far from overflow).
bool ParseSmallNumber(absl::string_view digits, int* out) {
  if (digits.empty() || digits.size() > 9) return false;
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(digits, out);
}

std::string ZeroPadded(int value, size_t width) {
  std::string s = std::to_string(value);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// "01-03,7" -> 01 02 03 7, appended to `out`.
absl::Status ExpandRanges(absl::string_view hostlist, absl::string_view ranges, std::vector<std::string>* out) {
  for (absl::string_view part : absl::StrSplit(ranges, ',')) {
    const size_t dash = part.find('-');
    const absl::string_view lo_text = part.substr(0, dash);
    const absl::string_view hi_text = dash == absl::string_view::npos ? lo_text : part.substr(dash + 1);
    int lo = 0, hi = 0;
    if (!ParseSmallNumber(lo_text, &lo) || !ParseSmallNumber(hi_text, &hi)) {
      return BadHostlist(hostlist, absl::StrCat("\"[", ranges, "]\" holds \"", part, "\", not N or N-M"));
    }
    if (hi < lo) return BadHostlist(hostlist, absl::StrCat("the range ", part, " runs backwards"));
    if (hi - lo >= kMaxSlurmTasks || out->size() + static_cast<size_t>(hi - lo) >= kMaxSlurmTasks) {
      return BadHostlist(hostlist, absl::StrCat("more than ", kMaxSlurmTasks, " names"));
    }
    for (int i = lo; i <= hi; ++i) out->push_back(ZeroPadded(i, lo_text.size()));
  }
  return absl::OkStatus();
}

// One name with any number of bracket groups ("rack[1-2]-n[01-02]"), expanded into `out`.
absl::Status ExpandName(absl::string_view hostlist, absl::string_view name, std::vector<std::string>* out) {
  const size_t open = name.find('[');
  if (open == absl::string_view::npos) {
    if (name.find(']') != absl::string_view::npos) return BadHostlist(hostlist, "a ']' without its '['");
    if (out->size() >= kMaxSlurmTasks)
      return BadHostlist(hostlist, absl::StrCat("more than ", kMaxSlurmTasks, " names"));
    out->emplace_back(name);
    return absl::OkStatus();
  }
  const size_t close = name.find(']', open);
  if (close == absl::string_view::npos) return BadHostlist(hostlist, "a '[' without its ']'");
  const absl::string_view body = name.substr(open + 1, close - open - 1);
  if (body.find('[') != absl::string_view::npos) return BadHostlist(hostlist, "brackets inside brackets");
  if (body.empty()) return BadHostlist(hostlist, "an empty range \"[]\"");
  std::vector<std::string> numbers;
  RETURN_IF_ERROR(ExpandRanges(hostlist, body, &numbers));
  const absl::string_view prefix = name.substr(0, open);
  const absl::string_view rest = name.substr(close + 1);
  for (const std::string& number : numbers) {
    const std::string head = absl::StrCat(prefix, number);
    if (rest.empty()) {
      if (out->size() >= kMaxSlurmTasks)
        return BadHostlist(hostlist, absl::StrCat("more than ", kMaxSlurmTasks, " names"));
      out->push_back(head);
      continue;
    }
    std::vector<std::string> tails;
    RETURN_IF_ERROR(ExpandName(hostlist, rest, &tails));
    for (const std::string& tail : tails) {
      if (out->size() >= kMaxSlurmTasks)
        return BadHostlist(hostlist, absl::StrCat("more than ", kMaxSlurmTasks, " names"));
      out->push_back(head + tail);
    }
  }
  return absl::OkStatus();
}

// A variable srun sets in every task; FailedPrecondition when unset.
absl::StatusOr<std::string> SlurmVariable(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* value = getenv(name);
  if (value == nullptr || *value == '\0') {
    return absl::FailedPreconditionError(
        absl::StrCat(name,
                     " is not set: --slurm_tasks needs a Slurm job step; start every task with srun inside an "
                     "allocation (sbatch or salloc; see deploy/slurm/), or give a TF_CONFIG instead"));
  }
  return std::string(value);
}

absl::StatusOr<int> SlurmNumber(const std::function<const char*(const char*)>& getenv, const char* name) {
  ASSIGN_OR_RETURN(std::string text, SlurmVariable(getenv, name));
  int value = 0;
  if (!ParseSmallNumber(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is \"", text, "\", not a number"));
  }
  return value;
}

// Where each rank runs: its node (an index into the node list) and its index among that node's tasks.
struct Placement {
  int node = 0;
  int local = 0;
};

// Ranks placed as Slurm's block or cyclic distribution does with `per_node` tasks per node.
std::vector<Placement> PlaceRanks(const std::vector<int>& per_node, bool cyclic, int num_tasks) {
  std::vector<Placement> out;
  out.reserve(static_cast<size_t>(num_tasks));
  std::vector<int> used(per_node.size(), 0);
  if (!cyclic) {
    for (size_t n = 0; n < per_node.size(); ++n) {
      for (int l = 0; l < per_node[n]; ++l) out.push_back({static_cast<int>(n), l});
    }
    return out;
  }
  while (static_cast<int>(out.size()) < num_tasks) {  // ends: the counts sum to num_tasks
    for (size_t n = 0; n < per_node.size(); ++n) {
      if (used[n] < per_node[n]) out.push_back({static_cast<int>(n), used[n]++});
    }
  }
  return out;
}

// SLURM_DISTRIBUTION's task-to-node part ("cyclic:block,pack" -> cyclic); true for cyclic.
absl::StatusOr<bool> IsCyclic(const std::function<const char*(const char*)>& getenv) {
  const char* value = getenv("SLURM_DISTRIBUTION");
  const std::string text = value == nullptr ? "" : value;
  const std::string dist = text.substr(0, text.find_first_of(":,"));
  if (dist.empty() || dist == "block") return false;
  if (dist == "cyclic") return true;
  return absl::InvalidArgumentError(
      absl::StrCat("SLURM_DISTRIBUTION is \"", text,
                   "\": --slurm_tasks places ranks by block or cyclic distribution only; start "
                   "the step with srun --distribution=block or --distribution=cyclic"));
}

// The node list and tasks per node of the step, checked against each other and the task count.
absl::Status ReadLayout(const std::function<const char*(const char*)>& getenv, int num_tasks,
                        std::vector<std::string>* nodes, std::vector<int>* per_node) {
  ASSIGN_OR_RETURN(std::string nodelist, SlurmVariable(getenv, "SLURM_STEP_NODELIST"));
  ASSIGN_OR_RETURN(*nodes, ExpandSlurmHostlist(nodelist));
  ASSIGN_OR_RETURN(std::string tasks_per_node, SlurmVariable(getenv, "SLURM_STEP_TASKS_PER_NODE"));
  ASSIGN_OR_RETURN(*per_node, ExpandSlurmTasksPerNode(tasks_per_node));
  if (per_node->size() != nodes->size()) {
    return absl::InvalidArgumentError(absl::StrCat("SLURM_STEP_TASKS_PER_NODE \"", tasks_per_node, "\" counts ",
                                                   per_node->size(), " nodes but SLURM_STEP_NODELIST \"", nodelist,
                                                   "\" names ", nodes->size()));
  }
  int64_t sum = 0;
  for (int n : *per_node) sum += n;
  if (sum != num_tasks) {
    return absl::InvalidArgumentError(absl::StrCat("SLURM_STEP_TASKS_PER_NODE \"", tasks_per_node, "\" adds up to ",
                                                   sum, " tasks but SLURM_STEP_NUM_TASKS is ", num_tasks));
  }
  return absl::OkStatus();
}

// Checks that Slurm put this task where the layout says (when srun says where it did).
absl::Status CheckOwnPlacement(const std::function<const char*(const char*)>& getenv, int rank, const std::string& node,
                               int local, bool cyclic) {
  const char* nodename = getenv("SLURMD_NODENAME");
  const char* localid = getenv("SLURM_LOCALID");
  int slurm_local = local;
  if (localid != nullptr && !ParseSmallNumber(localid, &slurm_local)) {
    return absl::InvalidArgumentError(absl::StrCat("SLURM_LOCALID is \"", localid, "\", not a number"));
  }
  if ((nodename != nullptr && node != nodename) || slurm_local != local) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", cyclic ? "cyclic" : "block", " layout of SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE puts rank ",
        rank, " on ", node, " as local task ", local, " but Slurm started it on ", nodename ? nodename : node,
        " as local task ", slurm_local,
        " (SLURMD_NODENAME, SLURM_LOCALID); start the step with srun "
        "--distribution=block or --distribution=cyclic, without an arbitrary layout"));
  }
  return absl::OkStatus();
}

std::string Joined(const nlohmann::json& list) {
  std::vector<std::string> items;
  for (const auto& item : list) items.push_back(item.get<std::string>());
  return absl::StrJoin(items, ", ");
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandSlurmHostlist(absl::string_view hostlist) {
  std::vector<std::string> out;
  if (hostlist.empty()) return BadHostlist(hostlist, "it is empty");
  // Commas inside brackets separate ranges, outside them names.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= hostlist.size(); ++i) {
    const char c = i < hostlist.size() ? hostlist[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) return BadHostlist(hostlist, "a ']' without its '['");
    if (depth > 1) return BadHostlist(hostlist, "brackets inside brackets");
    if (c != ',' || depth != 0) continue;
    const absl::string_view name = hostlist.substr(start, i - start);
    if (name.empty()) return BadHostlist(hostlist, "an empty name between commas");
    RETURN_IF_ERROR(ExpandName(hostlist, name, &out));
    start = i + 1;
  }
  if (depth != 0) return BadHostlist(hostlist, "a '[' without its ']'");
  std::set<std::string> seen;
  for (const std::string& name : out) {
    if (name.empty()) return BadHostlist(hostlist, "an empty name");
    if (!seen.insert(name).second) return BadHostlist(hostlist, absl::StrCat("the node ", name, " is named twice"));
  }
  return out;
}

absl::StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(absl::string_view tasks_per_node) {
  std::vector<int> out;
  auto bad = [tasks_per_node](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("SLURM_STEP_TASKS_PER_NODE \"", tasks_per_node, "\": ", why,
                                                   " (expected counts such as 2(x3),1)"));
  };
  for (absl::string_view part : absl::StrSplit(tasks_per_node, ',')) {
    absl::string_view count_text = part;
    int repeat = 1;
    const size_t open = part.find("(x");
    if (open != absl::string_view::npos) {
      count_text = part.substr(0, open);
      absl::string_view times = part.substr(open + 2);
      if (times.empty() || times.back() != ')' || !ParseSmallNumber(times.substr(0, times.size() - 1), &repeat) ||
          repeat < 1) {
        return bad(absl::StrCat("\"", part, "\" is not N or N(xM)"));
      }
    }
    int count = 0;
    if (!ParseSmallNumber(count_text, &count) || count < 1) {
      return bad(absl::StrCat("\"", part, "\" is not N or N(xM) with N at least 1"));
    }
    if (out.size() + static_cast<size_t>(repeat) > kMaxSlurmTasks) {
      return bad(absl::StrCat("more than ", kMaxSlurmTasks, " nodes"));
    }
    out.insert(out.end(), static_cast<size_t>(repeat), count);
  }
  return out;
}

absl::StatusOr<std::vector<SlurmRole>> ParseSlurmTasks(absl::string_view flag) {
  auto bad = [flag](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--slurm_tasks=", flag, ": ", why,
                                                   " (expected TYPE:COUNT,... such as chief:1,ps:2,worker:4, with "
                                                   "chief, ps, worker and optionally evaluator:1)"));
  };
  std::vector<SlurmRole> out;
  std::set<std::string> seen;
  for (absl::string_view part : absl::StrSplit(flag, ',')) {
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(part, absl::MaxSplits(':', 1));
    SlurmRole role;
    role.type = std::string(kv.first);
    if (role.type != kChief && role.type != kPs && role.type != kWorker && role.type != kEvaluator) {
      return bad(absl::StrCat("\"", part, "\" is not TYPE:COUNT with TYPE chief, ps, worker or evaluator"));
    }
    if (!ParseSmallNumber(kv.second, &role.count) || role.count < 1 || role.count > kMaxSlurmTasks) {
      return bad(absl::StrCat("\"", part, "\" needs a count from 1 to ", kMaxSlurmTasks));
    }
    if (!seen.insert(role.type).second) return bad(absl::StrCat(role.type, " is given twice"));
    if ((role.type == kChief || role.type == kEvaluator) && role.count != 1) {
      return bad(absl::StrCat("a job has one ", role.type, ", not ", role.count));
    }
    out.push_back(role);
  }
  for (const char* needed : {kChief, kPs, kWorker}) {
    if (seen.count(needed) == 0) return bad(absl::StrCat("no ", needed, " (a training cluster needs one)"));
  }
  return out;
}

std::string BinaryForTaskType(absl::string_view type) {
  return type == kEvaluator ? "pstrain-chief" : absl::StrCat("pstrain-", type);
}

absl::StatusOr<SlurmCluster> ResolveSlurmCluster(absl::string_view tasks, int port_base,
                                                 const std::function<const char*(const char*)>& getenv) {
  ASSIGN_OR_RETURN(std::vector<SlurmRole> roles, ParseSlurmTasks(tasks));
  ASSIGN_OR_RETURN(int rank, SlurmNumber(getenv, "SLURM_PROCID"));
  ASSIGN_OR_RETURN(int num_tasks, SlurmNumber(getenv, "SLURM_STEP_NUM_TASKS"));
  int named = 0;
  for (const SlurmRole& role : roles) named += role.count;
  if (named != num_tasks) {
    return absl::InvalidArgumentError(
        absl::StrCat("--slurm_tasks=", tasks, " names ", named, " tasks but the step has ", num_tasks,
                     " (SLURM_STEP_NUM_TASKS); start it with srun --ntasks=", named, " or change the counts"));
  }
  if (rank < 0 || rank >= num_tasks) {
    return absl::InvalidArgumentError(
        absl::StrCat("SLURM_PROCID is ", rank, " but the step has ", num_tasks, " tasks (SLURM_STEP_NUM_TASKS)"));
  }
  std::vector<std::string> nodes;
  std::vector<int> per_node;
  RETURN_IF_ERROR(ReadLayout(getenv, num_tasks, &nodes, &per_node));
  ASSIGN_OR_RETURN(bool cyclic, IsCyclic(getenv));
  int most_per_node = 0;
  for (int n : per_node) most_per_node = std::max(most_per_node, n);
  if (port_base < 1 || port_base > 65535 - (most_per_node - 1)) {
    return absl::InvalidArgumentError(absl::StrCat("--slurm_port_base=", port_base, ": a node runs up to ",
                                                   most_per_node,
                                                   " tasks, at ports from the base on; give a base "
                                                   "from 1 to ",
                                                   65536 - most_per_node));
  }
  const std::vector<Placement> placement = PlaceRanks(per_node, cyclic, num_tasks);
  const Placement own = placement[static_cast<size_t>(rank)];
  RETURN_IF_ERROR(CheckOwnPlacement(getenv, rank, nodes[static_cast<size_t>(own.node)], own.local, cyclic));

  SlurmCluster out;
  out.rank = rank;
  nlohmann::json cluster = nlohmann::json::object();
  std::string own_address;
  int next_rank = 0;
  for (const SlurmRole& role : roles) {
    for (int index = 0; index < role.count; ++index, ++next_rank) {
      const Placement& at = placement[static_cast<size_t>(next_rank)];
      const std::string address = absl::StrCat(nodes[static_cast<size_t>(at.node)], ":", port_base + at.local);
      if (next_rank == rank) {
        out.tf_config.task = TaskId{role.type, index};
        own_address = address;
      }
      if (role.type != kEvaluator) cluster[role.type].push_back(address);  // the evaluator serves nothing
    }
  }
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::FromJson(cluster);
  if (!spec.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the addresses from SLURM_STEP_NODELIST are not usable: ", spec.status().message()));
  }
  out.tf_config.cluster = *std::move(spec);
  const char* job = getenv("SLURM_JOB_ID");
  const char* step = getenv("SLURM_STEP_ID");
  std::string roles_text;
  for (const char* type : {kChief, kPs, kWorker}) {
    absl::StrAppend(&roles_text, "; ", type, ": ", Joined(cluster[type]));
  }
  out.description =
      absl::StrCat("cluster from Slurm: rank ", rank, " of ", num_tasks, " on ", nodes[static_cast<size_t>(own.node)],
                   " is ", out.tf_config.task->ToString(),
                   out.tf_config.task->type == kEvaluator ? " (outside the training cluster)" : " at " + own_address,
                   " (job ", job ? job : "?", " step ", step ? step : "?", ", ", cyclic ? "cyclic" : "block",
                   " distribution, --slurm_tasks=", tasks, roles_text, ")");
  return out;
}

}  // namespace pstrain
