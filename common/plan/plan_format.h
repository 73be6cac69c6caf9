// Renders a VariablePlan for `pstrain plan`: a human table or the documented JSON shape
// {"variables": [{"name", "shape", "dtype", "sparse", "shards": [{"name", "offset", "stride",
//  "rows", "bytes", "ps", "backup_ps" (-1: none)}]}], "strategy", "ps_bytes": [values per ps,
//  backups included], "ps_backup_bytes": [of which backups], "optimizer",
//  "slots_per_value", "ps_slot_bytes": [optimizer slots per ps], "ps_dynamic_overhead_bytes":
//  [dynamic tables' per-row overhead per ps], "ps_total_bytes": [all three]}.
// A shard holds global rows offset + j * stride (stride > 1: a table's mod shard), except a dynamic
// table's (kind "dyn"; its variable has "dynamic": {"admission_threshold", "ttl_steps", "max_rows",
// "shard_cap_rows", "placement": "hash", "shard_budget_bytes"}): its keys are placed by hash and
// `rows` is its cap.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLAN_PLAN_FORMAT_H_
#define PSTRAIN_COMMON_PLAN_PLAN_FORMAT_H_

#include <string>

#include "common/plan/variable_planner.h"
#include "nlohmann/json.hpp"

namespace pstrain {

// What a ps keeps beside each value: the job's optimizer slots (adagrad 1, adam 2, sgd 0 or 1...).
struct SlotInfo {
  std::string optimizer;    // "" when unknown: only the values are counted
  int slots_per_value = 0;  // float32 state elements per value element
};

// REQUIRES: PsTaskBytes(plan, slots.slots_per_value) succeeds (memory_budget.h): the byte counts
// printed are that function's.
nlohmann::json PlanToJson(const VariablePlan& plan, const std::string& strategy = "div", const SlotInfo& slots = {});
std::string PlanToTable(const VariablePlan& plan, const std::string& partitioner_description,
                        const SlotInfo& slots = {});

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_PLAN_FORMAT_H_
