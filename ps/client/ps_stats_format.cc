#include "ps/client/ps_stats_format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pstrain {
namespace {

std::string Bytes(int64_t b) {
  if (b >= 1000000000) return absl::StrFormat("%.2f GB", static_cast<double>(b) * 1e-9);
  if (b >= 1000000) return absl::StrFormat("%.1f MB", static_cast<double>(b) * 1e-6);
  if (b >= 1000) return absl::StrFormat("%.1f kB", static_cast<double>(b) * 1e-3);
  return absl::StrCat(b, " B");
}

nlohmann::json Counters(const ShardStats& s) {
  return {{"name", s.name()},
          {"pulls", s.pulls()},
          {"pushes", s.pushes()},
          {"bytes_in", s.bytes_in()},
          {"bytes_out", s.bytes_out()},
          {"rows_pulled", s.rows_pulled()},
          {"rows_pushed", s.rows_pushed()},
          {"rejected_pushes", s.rejected_pushes()},
          {"skipped_non_finite", s.skipped_non_finite()},
          {"update_seconds", s.update_seconds_total()},
          {"version", s.version()},
          {"backup", s.backup()}};
}

}  // namespace

std::string ShardStatsText(const ShardStats& s) {
  const bool rows = s.rows_pulled() > 0 || s.rows_pushed() > 0;
  std::string out =
      rows ? absl::StrCat(s.pulls(), " pulls (", s.rows_pulled(), " rows, ", Bytes(s.bytes_out()), " out), ",
                          s.pushes(), " pushes (", s.rows_pushed(), " rows, ", Bytes(s.bytes_in()), " in)")
           : absl::StrCat(s.pulls(), " pulls (", Bytes(s.bytes_out()), " out), ", s.pushes(), " pushes (",
                          Bytes(s.bytes_in()), " in)");
  absl::StrAppend(&out, ", version ", s.version());
  if (s.rejected_pushes() > 0) absl::StrAppend(&out, ", ", s.rejected_pushes(), " rejected");
  if (s.skipped_non_finite() > 0) absl::StrAppend(&out, ", ", s.skipped_non_finite(), " skipped non-finite");
  if (s.backup()) absl::StrAppend(&out, ", backup");
  if (s.backup_shards() > 0) absl::StrAppend(&out, ", ", s.backup_shards(), " backup shards");
  return out;
}

nlohmann::json PsStatsToJson(const std::string& task, const PsStatsResponse& stats) {
  nlohmann::json out = Counters(stats.total());
  out.erase("name");
  out["task"] = task;
  out["backup_shards"] = stats.total().backup_shards();
  out["shards"] = nlohmann::json::array();
  for (const ShardStats& s : stats.shards()) out["shards"].push_back(Counters(s));
  if (stats.dynamic_shards_size() > 0) {
    out["dynamic_shards"] = nlohmann::json::array();
    for (const DynamicShardStats& d : stats.dynamic_shards()) {
      out["dynamic_shards"].push_back({{"name", d.name()},
                                       {"rows", d.rows()},
                                       {"created", d.created()},
                                       {"evicted_ttl", d.evicted_ttl()},
                                       {"evicted_cap", d.evicted_cap()},
                                       {"admission_dropped_updates", d.admission_dropped_updates()},
                                       {"lookups", d.lookups()},
                                       {"lookups_missing", d.lookups_missing()},
                                       {"pushed_rows", d.pushed_rows()},
                                       {"memory_bytes", d.memory_bytes()},
                                       {"pulls", d.pulls()},
                                       {"pushes", d.pushes()}});
    }
  }
  return out;
}

}  // namespace pstrain
