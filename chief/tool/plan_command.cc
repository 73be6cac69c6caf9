#include "chief/tool/plan_command.h"

#include <cstdlib>
#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/config/cluster_spec.h"
#include "common/config/command_line.h"
#include "common/config/job_spec.h"
#include "common/config/json_util.h"
#include "common/plan/memory_budget.h"
#include "common/plan/model_variables.h"
#include "common/plan/optimizer_defaults.h"
#include "common/plan/plan_format.h"
#include "common/plan/variable_planner.h"
#include "common/platform/checked_math.h"
#include "common/platform/exit_codes.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

const std::vector<FlagDef>& PlanFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"job", "", "job spec: a preset (linear, mlp, cnn, ctr) or a JSON file"},
      {"num_ps", "", "number of ps tasks (default: the ps count in TF_CONFIG)"},
      {"tf_config", "", "read TF_CONFIG from this file instead of the environment"},
      {"format", "table", "table or json"},
      {"partitioner", "", "none, fixed_shards, min_size or max_size (overrides the job's)"},
      {"num_shards", "", "fixed_shards: number of shards"},
      {"min_shard_bytes", "262144", "min_size: minimum bytes per shard"},
      {"max_shard_bytes", "", "max_size: maximum bytes per shard"},
      {"max_shards", "", "min_size (default 1) / max_size (default 0 = unlimited): most shards"},
      {"bytes_per_string", "16", "estimated bytes per string element"},
      {"strategy", "", "div or mod: how embedding tables' rows map to their shards (overrides the job's)"},
      {"optimizer", "", "count this optimizer's slots in each ps's bytes (default: the job's)"},
      {"ps_replicas", "", "backups per shard, 0 or 1 (overrides the job's ps_replicas)"},
      {"shape", "", "single variable: comma-separated shape, e.g. 10,30"},
      {"dtype", "float32", "single variable: element type"},
      {"name", "v", "single variable: its name"},
      {"sparse", "false", "single variable: an embedding table (true or false)"},
      {"memory_budget_bytes", "0",
       "most bytes of values and optimizer slots one ps may hold; a plan beyond it is refused (0: half of this "
       "host's memory)"},
  };
  return *flags;
}

absl::StatusOr<PartitionerSpec> PartitionerFromFlags(const CommandLine& cl, PartitionerSpec spec) {
  if (cl.Given("partitioner")) {
    ASSIGN_OR_RETURN(spec.kind, ParsePartitionerKind(cl.Get("partitioner")));
  }
  if (cl.Given("num_shards")) {
    ASSIGN_OR_RETURN(spec.num_shards, cl.GetInt("num_shards"));
  }
  if (cl.Given("min_shard_bytes")) {
    ASSIGN_OR_RETURN(spec.min_shard_bytes, cl.GetInt("min_shard_bytes"));
  }
  if (cl.Given("max_shard_bytes")) {
    ASSIGN_OR_RETURN(spec.max_shard_bytes, cl.GetInt("max_shard_bytes"));
  }
  if (cl.Given("max_shards")) {
    ASSIGN_OR_RETURN(spec.max_shards, cl.GetInt("max_shards"));
  }
  if (cl.Given("bytes_per_string")) {
    ASSIGN_OR_RETURN(spec.bytes_per_string, cl.GetInt("bytes_per_string"));
  }
  if (cl.Given("strategy")) spec.strategy = cl.Get("strategy");
  if (spec.kind == PartitionerSpec::Kind::kFixedShards && spec.num_shards == 0) {
    return absl::InvalidArgumentError("--partitioner=fixed_shards needs --num_shards=N");
  }
  if (spec.kind == PartitionerSpec::Kind::kMaxSize && spec.max_shard_bytes == 0) {
    return absl::InvalidArgumentError("--partitioner=max_size needs --max_shard_bytes=N");
  }
  RETURN_IF_ERROR(ValidatePartitioner(spec));
  return spec;
}

absl::StatusOr<int> NumPs(const CommandLine& cl) {
  if (cl.Given("num_ps")) {
    ASSIGN_OR_RETURN(int64_t n, cl.GetInt("num_ps", IntBetween(1, 100000)));
    return static_cast<int>(n);
  }
  auto config = LoadTfConfig(cl.Get("tf_config"), std::getenv);  // a command is process-edge code
  if (!config.ok()) {
    if (config.status().code() == absl::StatusCode::kFailedPrecondition) {
      return absl::InvalidArgumentError("give --num_ps=N (or set TF_CONFIG with a cluster.ps list)");
    }
    return config.status();
  }
  const int n = config->cluster.NumTasks(kPs);
  if (n == 0) return absl::InvalidArgumentError("TF_CONFIG has no cluster.ps entries; give --num_ps=N");
  return n;
}

absl::StatusOr<std::vector<VariableSpec>> SingleVariable(const CommandLine& cl) {
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, cl.GetIntList("shape"));
  for (int64_t d : shape) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("--shape=", cl.Get("shape"), " has a negative dimension"));
  }
  RETURN_IF_ERROR(CheckedNumElements(shape, absl::StrCat("--shape=", cl.Get("shape"))).status());
  VariableSpec var;
  var.name = cl.Get("name");
  var.shape = shape;
  ASSIGN_OR_RETURN(var.dtype, ParseDType(cl.Get("dtype")));
  const std::string sparse = cl.Get("sparse");
  if (sparse != "true" && sparse != "false") {
    return absl::InvalidArgumentError(absl::StrCat("--sparse=", sparse, " is not true or false"));
  }
  var.sparse = sparse == "true";
  return std::vector<VariableSpec>{var};
}

// The optimizer slots a ps keeps per value: --optimizer (a type with Keras defaults) over the
// job's optimizer; none known: values only.
absl::StatusOr<SlotInfo> SlotsFromFlags(const CommandLine& cl, const JobSpec* job) {
  OptimizerSpec spec;
  if (job != nullptr) spec = job->optimizer;
  if (cl.Given("optimizer")) {
    spec = OptimizerSpec();
    spec.type = cl.Get("optimizer");
  } else if (job == nullptr) {
    return SlotInfo();
  }
  ASSIGN_OR_RETURN(int slots, OptimizerSlotCount(spec));
  return SlotInfo{spec.type, slots};
}

absl::Status RunPlan(Env* env, const CommandLine& cl) {
  const bool has_job = cl.Given("job");
  if (has_job == cl.Given("shape")) {
    return absl::InvalidArgumentError("give either --job=FILE|preset or --shape=D0,D1,... (a single variable)");
  }
  const std::string format = cl.Get("format");
  if (format != "table" && format != "json") {
    return absl::InvalidArgumentError(absl::StrCat("--format=", format, " is not table or json"));
  }
  ASSIGN_OR_RETURN(int num_ps, NumPs(cl));
  std::vector<VariableSpec> variables;
  PartitionerSpec partitioner;
  std::optional<JobSpec> job;
  if (has_job) {
    ASSIGN_OR_RETURN(job, LoadJobSpec(cl.Get("job")));
    ASSIGN_OR_RETURN(variables, ModelVariables(job->model));
    partitioner = job->partitioner;
  } else {
    ASSIGN_OR_RETURN(variables, SingleVariable(cl));
  }
  ASSIGN_OR_RETURN(partitioner, PartitionerFromFlags(cl, partitioner));
  ASSIGN_OR_RETURN(SlotInfo slots, SlotsFromFlags(cl, job ? &*job : nullptr));
  ASSIGN_OR_RETURN(VariablePlan plan, PlanVariables(variables, partitioner, num_ps));
  int64_t replicas = job ? job->ps_replicas : 0;
  if (cl.Given("ps_replicas")) {
    ASSIGN_OR_RETURN(replicas, cl.GetInt("ps_replicas", IntBetween(0, 1)));
  }
  RETURN_IF_ERROR(AddBackups(replicas, &plan));
  ASSIGN_OR_RETURN(int64_t budget_flag, cl.GetInt("memory_budget_bytes", IntAtLeast(0)));
  ASSIGN_OR_RETURN(int64_t budget, MemoryBudgetBytes(env, budget_flag));
  ASSIGN_OR_RETURN(std::vector<int64_t> memory, PsTaskBytes(plan, slots.slots_per_value));
  if (format == "json") {
    nlohmann::json doc = PlanToJson(plan, partitioner.strategy, slots);
    doc["memory_budget_bytes"] = budget;
    std::cout << DumpJson(doc, 2) << "\n";
  } else {
    std::cout << PlanToTable(plan, absl::StrCat(partitioner.KindName(), ", tables ", partitioner.strategy), slots);
    std::cout << "memory budget of each ps: " << FormatBytes(budget) << " (" << kMemoryBudgetFlag << ")\n";
  }
  bool dynamic = false;  // dynamic tables: their rows' overhead is budgeted too
  for (const VariableSpec& v : variables) dynamic = dynamic || v.dynamic.has_value();
  for (size_t i = 0; i < memory.size(); ++i) {
    RETURN_IF_ERROR(CheckMemoryBudget(absl::StrCat("ps ", i), memory[i],
                                      absl::StrCat("values and ", slots.slots_per_value, " optimizer slots each",
                                                   dynamic ? ", and dynamic tables' row overhead and admission filters"
                                                           : ""),
                                      budget,
                                      absl::StrCat("give a larger ", kMemoryBudgetFlag,
                                                   " (here and to pstrain-chief and pstrain-ps), more ps tasks, or a "
                                                   "smaller model")));
  }
  return absl::OkStatus();
}

}  // namespace

int PlanMain(Env* env, int argc, char** argv) {
  const std::string summary =
      "Shows how variables are split into shards and placed on ps tasks (TensorFlow's partitioner arithmetic,\n"
      "round-robin placement). Examples:\n"
      "  pstrain plan --job=cnn --num_ps=2\n"
      "  pstrain plan --shape=50000000,16 --sparse=true --strategy=mod --optimizer=adagrad \\\n"
      "      --partitioner=max_size --max_shard_bytes=800000000 --num_ps=4\n"
      "  pstrain plan --partitioner=max_size --max_shard_bytes=1000 --shape=10,30 --dtype=float64 --num_ps=3";
  auto cl = CommandLine::Parse("pstrain plan", argc, argv, 2, PlanFlags());
  if (!cl.ok()) {
    std::cerr << "pstrain plan: " << cl.status().message() << "\n";
    return kExitBadConfiguration;
  }
  if (cl->help()) {
    std::cout << FlagUsage("pstrain plan", summary, PlanFlags());
    return kExitOk;
  }
  absl::Status s = RunPlan(env, *cl);
  if (!s.ok()) {
    std::cerr << "pstrain plan: " << s.message() << "\n";
    return ExitCodeFor(s);
  }
  return kExitOk;
}

}  // namespace pstrain
