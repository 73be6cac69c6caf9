// How a ps's counters (GetStats) are shown: a log line per ps and per shard, and a JSON form for
// the job's summary. Tables show the rows pulled and pushed beside the bytes, which is how a user
// sees that a step moves only the rows it touches and how evenly div or mod spread them.
// Thread-safety: pure functions.
#ifndef PSTRAIN_PS_CLIENT_PS_STATS_FORMAT_H_
#define PSTRAIN_PS_CLIENT_PS_STATS_FORMAT_H_

#include <string>

#include "nlohmann/json.hpp"
#include "proto/ps.pb.h"

namespace pstrain {

// "12 pulls (300 rows, 19.2 kB out), 12 pushes (300 rows, 21.6 kB in), version 12" (rows only
// when some were moved; "N rejected", "N skipped non-finite" when non-zero).
std::string ShardStatsText(const ShardStats& s);

// {"task", "pulls", "pushes", "bytes_in", "bytes_out", "rows_pulled", "rows_pushed",
//  "rejected_pushes", "skipped_non_finite", "update_seconds", "shards": [{"name", ...same}]}, and
// when the ps holds dynamic table shards "dynamic_shards": [{"name", "rows", "created",
// "evicted_ttl", "evicted_cap", "admission_dropped_updates", "lookups", "lookups_missing",
// "pushed_rows", "memory_bytes", "pulls", "pushes"}] (they have no version and are not in the totals).
nlohmann::json PsStatsToJson(const std::string& task, const PsStatsResponse& stats);

}  // namespace pstrain

#endif  // PSTRAIN_PS_CLIENT_PS_STATS_FORMAT_H_
