#include "chief/tool/inspect_command.h"

#include <algorithm>
#include <iostream>
#include <map>

#include "absl/strings/str_format.h"
#include "common/checkpoint/checkpoint_index.h"
#include "common/checkpoint/checkpoint_reader.h"
#include "common/checkpoint/dynamic_shard_files.h"
#include "common/config/command_line.h"
#include "common/config/json_util.h"
#include "common/plan/memory_budget.h"
#include "common/platform/exit_codes.h"
#include "common/platform/status_macros.h"
#include "ps/store/dynamic_table_state.h"

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

// The "dynamic" options of each field of the job spec that has them, by table name
// ("<field>/embeddings", as the model names a field's table): what the checkpoint's files do not hold.
void FindDynamicOptions(const nlohmann::json& j, std::map<std::string, nlohmann::json>* out) {
  if (j.is_object()) {
    auto name = j.find("name");
    auto dynamic = j.find("dynamic");
    if (name != j.end() && name->is_string() && dynamic != j.end() && dynamic->is_object()) {
      (*out)[name->get<std::string>() + "/embeddings"] = *dynamic;
    }
  }
  if (j.is_object() || j.is_array()) {
    for (const auto& child : j) FindDynamicOptions(child, out);
  }
}

// One dynamic table: its files (rows and bytes each) decoded whole, one at a time (each at most
// `max_bytes`), with its dim, slots, admission filter and counters summed over the shards.
absl::StatusOr<nlohmann::json> InspectDynamicTable(Env* env, const std::string& dir, const SavedDynamicTableFiles& table,
                                                   const nlohmann::json& options, int64_t max_bytes) {
  nlohmann::json files = nlohmann::json::array();
  int64_t rows = 0, bytes = 0, dim = 0, slots = 0, step = 0, filter_width = 0, filter_depth = 0;
  DynamicTableCounters counters;
  double sum = 0.0;
  for (const SavedDynamicShard& s : table.shards) {
    const std::string path = dir + "/" + s.file();
    ASSIGN_OR_RETURN(std::string data, env->ReadRegularFile(path, max_bytes));
    absl::StatusOr<DynamicTableState> state = DecodeDynamicTableState(data);
    if (!state.ok()) return absl::Status(state.status().code(), absl::StrCat(path, ": ", state.status().message()));
    if (state->table_name != table.table_name) {
      return absl::DataLossError(absl::StrCat(path, " holds table ", state->table_name, ", not ", table.table_name));
    }
    const int64_t held = static_cast<int64_t>(state->keys.size());
    if (held != s.rows()) {
      return absl::DataLossError(absl::StrCat(path, " holds ", held, " rows; index.json says ", s.rows()));
    }
    files.push_back({{"file", s.file()}, {"shard", s.shard_index()}, {"rows", held}, {"bytes", data.size()}});
    rows += held;
    bytes += static_cast<int64_t>(data.size());
    dim = state->dim;
    slots = state->num_slots;
    step = std::max(step, state->step);
    filter_width = state->filter_width;
    filter_depth = state->filter_depth;
    counters.created += state->counters.created;
    counters.evicted_ttl += state->counters.evicted_ttl;
    counters.evicted_cap += state->counters.evicted_cap;
    counters.admission_dropped_updates += state->counters.admission_dropped_updates;
    const int64_t per_row = state->FloatsPerRow();
    for (int64_t r = 0; r < held; ++r) {
      for (int64_t k = 0; k < dim; ++k) sum += state->rows[static_cast<size_t>(r * per_row + k)];
    }
  }
  nlohmann::json out = {{"name", table.table_name},
                        {"dim", dim},
                        {"shards", table.num_shards},
                        {"rows", rows},
                        {"bytes", bytes},
                        {"slots", slots},
                        {"step", step},
                        {"sum", sum},
                        {"files", files},
                        {"created", counters.created},
                        {"evicted_ttl", counters.evicted_ttl},
                        {"evicted_cap", counters.evicted_cap},
                        {"admission_dropped_updates", counters.admission_dropped_updates},
                        {"filter_width", filter_width},
                        {"filter_depth", filter_depth}};
  out["options"] = options.is_object() ? options : nlohmann::json::object();
  return out;
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
  out["dynamic_tables"] = nlohmann::json::array();
  ASSIGN_OR_RETURN(std::vector<SavedDynamicTableFiles> tables, GroupDynamicShards(index.dynamic_shards));
  std::map<std::string, nlohmann::json> options;
  if (!tables.empty() && !index.job_spec_json.empty()) {
    absl::StatusOr<nlohmann::json> spec = ParseJson(index.job_spec_json, "the checkpoint's job spec");
    if (spec.ok()) FindDynamicOptions(*spec, &options);
  }
  for (const SavedDynamicTableFiles& table : tables) {
    ASSIGN_OR_RETURN(nlohmann::json t, InspectDynamicTable(env, dir, table, options[table.table_name], max_bytes));
    out["dynamic_tables"].push_back(std::move(t));
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
  for (const auto& t : (*out)["dynamic_tables"]) {
    std::cout << absl::StrFormat("  %-24s dynamic, dim %d, %d rows in %d shards, %d bytes  sum %.6g\n",
                                 t["name"].get<std::string>(), t["dim"].get<int64_t>(), t["rows"].get<int64_t>(),
                                 t["shards"].get<int64_t>(), t["bytes"].get<int64_t>(), t["sum"].get<double>());
    std::cout << absl::StrFormat("    options %s; created %d, evicted %d (ttl) %d (cap)\n", DumpJson(t["options"]),
                                 t["created"].get<int64_t>(), t["evicted_ttl"].get<int64_t>(),
                                 t["evicted_cap"].get<int64_t>());
    for (const auto& f : t["files"]) {
      std::cout << absl::StrFormat("    %s  %d rows, %d bytes\n", f["file"].get<std::string>(),
                                   f["rows"].get<int64_t>(), f["bytes"].get<int64_t>());
    }
  }
  return kExitOk;
}

}  // namespace pstrain
