#include "chief/inspect_command.h"

#include <algorithm>
#include <iostream>
#include <set>

#include "absl/strings/str_format.h"
#include "common/command_line.h"
#include "common/exit_codes.h"
#include "common/json_util.h"
#include "common/memory_budget.h"
#include "common/status_macros.h"
#include "ps/checkpoint_index.h"

namespace pstrain {
namespace {

const std::vector<FlagDef>& InspectFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"checkpoint", "", "a checkpoint directory (model_dir/ckpt-N)"},
      {"format", "text", "text or json"},
      {"memory_budget_bytes", "0", "most bytes one checkpoint variable may take (0: half of this host's memory)"},
  };
  return *flags;
}

absl::StatusOr<nlohmann::json> Inspect(const std::string& dir, int64_t max_bytes) {
  Env* env = Env::Default();
  ASSIGN_OR_RETURN(CheckpointIndex index, ReadCheckpointIndex(env, dir));
  nlohmann::json out;
  out["checkpoint"] = dir;
  out["step"] = index.global_step;
  out["variables"] = nlohmann::json::array();
  std::set<std::string> names;  // sorted, so any two checkpoints list variables alike
  for (const SavedShard& shard : index.shards) names.insert(shard.variable_name());
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(Tensor t, ReadCheckpointRows(env, dir, index, name, 0, -1, "", max_bytes));
    double sum = 0.0;
    float lo = 0.0f, hi = 0.0f;
    absl::Span<const float> v = t.flat();
    if (!v.empty()) lo = hi = v[0];
    for (float x : v) {
      sum += x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    out["variables"].push_back({{"name", name},
                                {"shape", t.shape()},
                                {"digest", absl::StrFormat("%016x", Fnv1a64({t.raw(), t.num_bytes()}))},
                                {"sum", sum},
                                {"min", lo},
                                {"max", hi}});
  }
  return out;
}

}  // namespace

uint64_t Fnv1a64(absl::Span<const uint8_t> bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

int InspectMain(int argc, char** argv) {
  absl::StatusOr<CommandLine> cl = CommandLine::Parse("inspect", argc, argv, 2, InspectFlags());
  if (!cl.ok()) {
    std::cerr << "pstrain inspect: " << cl.status().message() << "\n";
    return kExitBadConfiguration;
  }
  if (cl->help()) {
    std::cout << FlagUsage("inspect", "list a checkpoint's variables with digests", InspectFlags());
    return kExitOk;
  }
  if (cl->Get("checkpoint").empty()) {
    std::cerr << "pstrain inspect: give --checkpoint=DIR (a model_dir/ckpt-N directory)\n";
    return kExitBadConfiguration;
  }
  absl::StatusOr<int64_t> budget = cl->GetInt("memory_budget_bytes", IntAtLeast(0));
  if (budget.ok()) budget = MemoryBudgetBytes(Env::Default(), *budget);
  absl::StatusOr<nlohmann::json> out = budget.ok() ? Inspect(cl->Get("checkpoint"), *budget) : budget.status();
  if (!out.ok()) {
    std::cerr << "pstrain inspect: " << out.status().message() << "\n";
    return ExitCodeFor(out.status());
  }
  if (cl->Get("format") == "json") {
    std::cout << DumpJson(*out) << "\n";
    return kExitOk;
  }
  std::cout << absl::StrFormat("%s (step %d)\n", (*out)["checkpoint"].get<std::string>(), (*out)["step"].get<int64_t>());
  for (const auto& v : (*out)["variables"]) {
    std::cout << absl::StrFormat("  %-24s %-14s digest %s  sum %.6g  min %.6g  max %.6g\n", v["name"].get<std::string>(),
                                 DumpJson(v["shape"]), v["digest"].get<std::string>(), v["sum"].get<double>(),
                                 v["min"].get<double>(), v["max"].get<double>());
  }
  return kExitOk;
}

}  // namespace pstrain
