#include "common/plan/plan_format.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/plan/dynamic_row_bytes.h"
#include "common/plan/memory_budget.h"
#include "common/tensor/tensor.h"

namespace pstrain {

namespace {

// REQUIRES (plan_format.h): PsTaskBytes(plan, slots_per_value) succeeded, so none overflows.
std::vector<int64_t> SlotBytes(const VariablePlan& plan, const SlotInfo& slots) {
  absl::StatusOr<std::vector<int64_t>> bytes = PsSlotBytes(plan, slots.slots_per_value);
  return bytes.ok() ? *std::move(bytes) : std::vector<int64_t>(plan.ps_bytes.size(), 0);
}

std::vector<int64_t> OverheadBytes(const VariablePlan& plan) {
  absl::StatusOr<std::vector<int64_t>> bytes = PsDynamicOverheadBytes(plan);
  return bytes.ok() ? *std::move(bytes) : std::vector<int64_t>(plan.ps_bytes.size(), 0);
}

// What one shard of a dynamic table is budgeted on its ps: values and slots of its cap rows, their
// row overhead and the admission filter.
int64_t DynamicShardBudget(const PlannedShard& s, const DynamicTableSpec& d, const SlotInfo& slots) {
  return s.bytes * (1 + slots.slots_per_value) + s.rows * kDynamicRowOverheadBytes +
         DynamicFilterBytes(d.admission_threshold);
}

}  // namespace

nlohmann::json PlanToJson(const VariablePlan& plan, const std::string& strategy, const SlotInfo& slots) {
  nlohmann::json vars = nlohmann::json::array();
  for (const PlannedVariable& pv : plan.variables) {
    nlohmann::json shards = nlohmann::json::array();
    for (const PlannedShard& s : pv.shards) {
      shards.push_back({{"name", s.name},
                        {"offset", s.row_offset},
                        {"stride", s.row_stride},
                        {"rows", s.rows},
                        {"bytes", s.bytes},
                        {"ps", s.ps},
                        {"backup_ps", s.backup_ps}});
    }
    nlohmann::json var = {{"name", pv.variable.name},
                          {"shape", pv.variable.shape},
                          {"dtype", DTypeName(pv.variable.dtype)},
                          {"sparse", pv.variable.sparse},
                          {"trainable", pv.variable.trainable},
                          {"shards", shards}};
    if (pv.variable.dynamic) {
      const DynamicTableSpec& d = *pv.variable.dynamic;
      var["dynamic"] = {{"admission_threshold", d.admission_threshold},
                        {"ttl_steps", d.ttl_steps},
                        {"max_rows", d.max_rows},
                        {"shard_cap_rows", pv.shards.empty() ? 0 : pv.shards[0].rows},
                        {"placement", "hash"},
                        {"admission_filter_bytes", DynamicFilterBytes(d.admission_threshold)},
                        {"shard_budget_bytes", pv.shards.empty() ? 0 : DynamicShardBudget(pv.shards[0], d, slots)}};
    }
    vars.push_back(std::move(var));
  }
  const std::vector<int64_t> slot_bytes = SlotBytes(plan, slots);
  const std::vector<int64_t> overhead = OverheadBytes(plan);
  std::vector<int64_t> total = plan.ps_bytes;
  for (size_t i = 0; i < total.size(); ++i) total[i] += slot_bytes[i] + overhead[i];
  return {{"variables", vars},
          {"strategy", strategy},
          {"ps_bytes", plan.ps_bytes},
          {"ps_backup_bytes", plan.backup_bytes},
          {"optimizer", slots.optimizer},
          {"slots_per_value", slots.slots_per_value},
          {"ps_slot_bytes", slot_bytes},
          {"ps_dynamic_overhead_bytes", overhead},
          {"ps_total_bytes", total}};
}

std::string PlanToTable(const VariablePlan& plan, const std::string& partitioner_description, const SlotInfo& slots) {
  size_t width = 8;
  for (const PlannedVariable& pv : plan.variables) {
    for (const PlannedShard& s : pv.shards) width = std::max(width, s.name.size());
  }
  bool backups = false;
  for (int64_t b : plan.backup_bytes) backups = backups || b > 0;
  std::string out = absl::StrCat("partitioner: ", partitioner_description, "; ps tasks: ", plan.num_ps,
                                 backups ? "; a backup of every shard on the next ps (ps_replicas 1)" : "", "\n");
  absl::StrAppend(&out, absl::StrFormat("%-*s  %-14s  %-8s  %-5s  %8s  %6s  %6s  %12s  %3s%s\n", width, "shard",
                                        "variable shape", "dtype", "kind", "offset", "stride", "rows", "bytes", "ps",
                                        backups ? "  backup" : ""));
  for (const PlannedVariable& pv : plan.variables) {
    for (const PlannedShard& s : pv.shards) {
      absl::StrAppend(&out, absl::StrFormat("%-*s  %-14s  %-8s  %-5s  %8d  %6d  %6d  %12d  %3d%s\n", width, s.name,
                                            ShapeString(pv.variable.shape), DTypeName(pv.variable.dtype),
                                            pv.variable.dynamic ? "dyn" : pv.variable.sparse ? "table" : "dense",
                                            s.row_offset, s.row_stride, s.rows, s.bytes, s.ps,
                                            backups ? absl::StrFormat("  %6d", s.backup_ps) : ""));
    }
  }
  for (const PlannedVariable& pv : plan.variables) {
    if (!pv.variable.dynamic || pv.shards.empty()) continue;
    const DynamicTableSpec& d = *pv.variable.dynamic;
    const PlannedShard& s = pv.shards[0];
    absl::StrAppend(&out, absl::StrFormat("%s: dynamic, cap %d rows per ps (max_rows %d), hash placement, "
                                          "admission_threshold %d, ttl_steps %d; budget per ps %d bytes (values and "
                                          "slots of %d rows + %d bytes of row overhead each%s)\n",
                                          pv.variable.name, s.rows, d.max_rows, d.admission_threshold, d.ttl_steps,
                                          DynamicShardBudget(s, d, slots), s.rows, kDynamicRowOverheadBytes,
                                          d.admission_threshold > 1
                                              ? absl::StrCat(" + ", DynamicFilterBytes(d.admission_threshold),
                                                             " bytes of admission filter")
                                              : ""));
  }
  const std::vector<int64_t> slot_bytes = SlotBytes(plan, slots);
  const std::vector<int64_t> overhead = OverheadBytes(plan);
  int64_t total = 0;
  for (size_t i = 0; i < plan.ps_bytes.size(); ++i) total += plan.ps_bytes[i] + slot_bytes[i] + overhead[i];
  for (size_t i = 0; i < plan.ps_bytes.size(); ++i) {
    const int64_t held = plan.ps_bytes[i] + slot_bytes[i] + overhead[i];
    const std::string of_overhead =
        overhead[i] > 0 ? absl::StrFormat(" + %d of dynamic tables' row overhead and admission filters", overhead[i]) : "";
    const double pct = total > 0 ? 100.0 * static_cast<double>(held) / static_cast<double>(total) : 0.0;
    const int64_t backup = i < plan.backup_bytes.size() ? plan.backup_bytes[i] : 0;
    const std::string of_backups =
        backups ? absl::StrFormat(" (values of backups: %d, primaries: %d)", backup, plan.ps_bytes[i] - backup) : "";
    if (slots.optimizer.empty() && overhead[i] == 0) {
      absl::StrAppend(&out, absl::StrFormat("ps %d holds %d bytes of values (%.1f%%)%s\n", i, plan.ps_bytes[i], pct,
                                            of_backups));
    } else if (slots.optimizer.empty()) {
      absl::StrAppend(&out, absl::StrFormat("ps %d holds %d bytes: %d of values%s (%.1f%%)%s\n", i, held,
                                            plan.ps_bytes[i], of_overhead, pct, of_backups));
    } else {
      absl::StrAppend(&out, absl::StrFormat("ps %d holds %d bytes: %d of values + %d of %s slots%s (%.1f%%)%s\n", i,
                                            held, plan.ps_bytes[i], slot_bytes[i], slots.optimizer, of_overhead, pct,
                                            of_backups));
    }
  }
  if (!slots.optimizer.empty()) {
    absl::StrAppend(&out, absl::StrFormat("(values + optimizer slots: %s keeps %d float32 per value; a ps's own "
                                          "buffers and process overhead come on top)\n",
                                          slots.optimizer, slots.slots_per_value));
  }
  return out;
}

}  // namespace pstrain
