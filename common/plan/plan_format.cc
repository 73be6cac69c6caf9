#include "common/plan/plan_format.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/plan/memory_budget.h"
#include "common/tensor/tensor.h"

namespace pstrain {

namespace {

// REQUIRES (plan_format.h): PsTaskBytes(plan, slots_per_value) succeeded, so none overflows.
std::vector<int64_t> SlotBytes(const VariablePlan& plan, const SlotInfo& slots) {
  absl::StatusOr<std::vector<int64_t>> bytes = PsSlotBytes(plan, slots.slots_per_value);
  return bytes.ok() ? *std::move(bytes) : std::vector<int64_t>(plan.ps_bytes.size(), 0);
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
    vars.push_back({{"name", pv.variable.name},
                    {"shape", pv.variable.shape},
                    {"dtype", DTypeName(pv.variable.dtype)},
                    {"sparse", pv.variable.sparse},
                    {"trainable", pv.variable.trainable},
                    {"shards", shards}});
  }
  const std::vector<int64_t> slot_bytes = SlotBytes(plan, slots);
  std::vector<int64_t> total = plan.ps_bytes;
  for (size_t i = 0; i < total.size(); ++i) total[i] += slot_bytes[i];
  return {{"variables", vars},
          {"strategy", strategy},
          {"ps_bytes", plan.ps_bytes},
          {"ps_backup_bytes", plan.backup_bytes},
          {"optimizer", slots.optimizer},
          {"slots_per_value", slots.slots_per_value},
          {"ps_slot_bytes", slot_bytes},
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
                                            pv.variable.sparse ? "table" : "dense", s.row_offset, s.row_stride, s.rows,
                                            s.bytes, s.ps, backups ? absl::StrFormat("  %6d", s.backup_ps) : ""));
    }
  }
  const std::vector<int64_t> slot_bytes = SlotBytes(plan, slots);
  int64_t total = 0;
  for (size_t i = 0; i < plan.ps_bytes.size(); ++i) total += plan.ps_bytes[i] + slot_bytes[i];
  for (size_t i = 0; i < plan.ps_bytes.size(); ++i) {
    const int64_t held = plan.ps_bytes[i] + slot_bytes[i];
    const double pct = total > 0 ? 100.0 * static_cast<double>(held) / static_cast<double>(total) : 0.0;
    const int64_t backup = i < plan.backup_bytes.size() ? plan.backup_bytes[i] : 0;
    const std::string of_backups =
        backups ? absl::StrFormat(" (values of backups: %d, primaries: %d)", backup, plan.ps_bytes[i] - backup) : "";
    if (slots.optimizer.empty()) {
      absl::StrAppend(&out, absl::StrFormat("ps %d holds %d bytes of values (%.1f%%)%s\n", i, plan.ps_bytes[i], pct,
                                            of_backups));
    } else {
      absl::StrAppend(&out, absl::StrFormat("ps %d holds %d bytes: %d of values + %d of %s slots (%.1f%%)%s\n", i,
                                            held, plan.ps_bytes[i], slot_bytes[i], slots.optimizer, pct, of_backups));
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
