#include "chief/tool/inspect_command.h"

#include <algorithm>
#include <iostream>
#include <map>

#include "absl/strings/str_format.h"
#include "common/checkpoint/checkpoint_index.h"
#include "common/checkpoint/checkpoint_reader.h"
#include "common/config/command_line.h"
#include "common/config/json_util.h"
#include "common/plan/memory_budget.h"
#include "common/platform/exit_codes.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

const std::vector<FlagDef>& InspectFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"checkpoint", "", "a checkpoint directory (model_dir/ckpt-N)"},
      {"format", "text", "text or json"},
      {"memory_budget_bytes", "0", "most bytes one block of checkpoint rows may take (0: half of this host's memory)"},
  };
  return *flags;
}

// Digest, sum, min and max of one variable, read in blocks of rows in global row order: a table
// larger than memory is inspected in bounded memory, and a div and a mod checkpoint of the same
// values give the same digest.
absl::StatusOr<nlohmann::json> InspectVariable(CheckpointReader* reader, const SavedShard& any) {
  std::vector<int64_t> shape(any.full_shape().begin(), any.full_shape().end());
  const int64_t rows = shape.empty() ? 1 : shape[0];
  const int64_t row_elements = shape.empty() ? 1 : NumElements(absl::MakeConstSpan(shape).subspan(1));
  const int64_t block = std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(row_elements * 4, 1));
  uint64_t digest = kFnv1a64Start;
  double sum = 0.0;
  float lo = 0.0f, hi = 0.0f;
  bool first = true;
  for (int64_t r = 0; r < rows; r += block) {
    const int64_t n = std::min(block, rows - r);
    ASSIGN_OR_RETURN(Tensor t, reader->ReadRows(any.variable_name(), r, n, ""));
    digest = Fnv1a64({t.raw(), t.num_bytes()}, digest);
    for (float x : t.flat()) {
      if (first) lo = hi = x;
      first = false;
      sum += x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  return nlohmann::json{{"name", any.variable_name()},
                        {"shape", shape},
                        {"digest", absl::StrFormat("%016x", digest)},
                        {"sum", sum},
                        {"min", lo},
                        {"max", hi}};
}

absl::StatusOr<nlohmann::json> Inspect(Env* env, const std::string& dir, int64_t max_bytes) {
  ASSIGN_OR_RETURN(CheckpointIndex index, ReadCheckpointIndex(env, dir));
  CheckpointReader reader(env, dir, &index, max_bytes);
  nlohmann::json out;
  out["checkpoint"] = dir;
  out["step"] = index.global_step;
  out["variables"] = nlohmann::json::array();
  std::map<std::string, const SavedShard*> variables;  // sorted, so any two checkpoints list variables alike
  for (const SavedShard& shard : index.shards) variables.emplace(shard.variable_name(), &shard);
  for (const auto& [name, shard] : variables) {
    ASSIGN_OR_RETURN(nlohmann::json v, InspectVariable(&reader, *shard));
    out["variables"].push_back(std::move(v));
  }
  return out;
}

}  // namespace

uint64_t Fnv1a64(absl::Span<const uint8_t> bytes, uint64_t h) {
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

int InspectMain(Env* env, int argc, char** argv) {
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
  if (budget.ok()) budget = MemoryBudgetBytes(env, *budget);
  absl::StatusOr<nlohmann::json> out = budget.ok() ? Inspect(env, cl->Get("checkpoint"), *budget) : budget.status();
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
