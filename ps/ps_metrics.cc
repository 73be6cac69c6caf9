#include "ps/ps_metrics.h"

namespace pstrain {
namespace {

// One row per ShardStats counter: a new counter of ShardStats is one line here.
struct ShardCounter {
  const char* name;
  const char* help;
  double (*value)(const ShardStats&);
};

constexpr ShardCounter kShardCounters[] = {
    {"pstrain_ps_pulls_total", "Pulls served, by shard", [](const ShardStats& s) { return 1.0 * s.pulls(); }},
    {"pstrain_ps_pushes_total", "Pushes applied or collected, by shard",
     [](const ShardStats& s) { return 1.0 * s.pushes(); }},
    {"pstrain_ps_pulled_bytes_total", "Bytes of values sent by pulls, by shard",
     [](const ShardStats& s) { return 1.0 * s.bytes_out(); }},
    {"pstrain_ps_pushed_bytes_total", "Bytes of gradients received by pushes, by shard",
     [](const ShardStats& s) { return 1.0 * s.bytes_in(); }},
    {"pstrain_ps_pulled_rows_total", "Embedding-table rows sent by sparse pulls, by shard",
     [](const ShardStats& s) { return 1.0 * s.rows_pulled(); }},
    {"pstrain_ps_pushed_rows_total", "Embedding-table gradient rows received by sparse pushes, by shard",
     [](const ShardStats& s) { return 1.0 * s.rows_pushed(); }},
    {"pstrain_ps_rejected_pushes_total", "Pushes rejected (stale, duplicate, bad shape, non-finite), by shard",
     [](const ShardStats& s) { return 1.0 * s.rejected_pushes(); }},
    {"pstrain_ps_skipped_non_finite_total", "Non-finite gradients skipped, by shard",
     [](const ShardStats& s) { return 1.0 * s.skipped_non_finite(); }},
    {"pstrain_ps_update_seconds_total", "Time spent applying updates, by shard",
     [](const ShardStats& s) { return s.update_seconds_total(); }},
};

}  // namespace

Histogram* PsUpdateLatency(MetricsRegistry* metrics) {
  return metrics->GetHistogram("pstrain_ps_update_duration_seconds",
                               "Time of one update of one shard (the optimizer applied to its values and slots)",
                               ExponentialBuckets(0.00001, 2.5, 16));  // 10 µs .. ~9 s
}

void AddShardStats(const PsStatsResponse& stats, MetricsSnapshot* out) {
  out->AddGauge("pstrain_ps_shards", "Variable shards this ps holds", {}, stats.shards_size());
  for (const ShardStats& s : stats.shards()) {
    const MetricLabels labels = {{"shard", s.name()}};
    for (const ShardCounter& c : kShardCounters) out->AddCounter(c.name, c.help, labels, c.value(s));
    out->AddGauge("pstrain_ps_shard_version", "Updates applied to the shard (its version)", labels, s.version());
  }
}

void AddPsMetrics(MetricsRegistry* metrics, PsServer* ps) {
  metrics->AddCollector([ps](MetricsSnapshot* out) {
    PsStatsResponse stats;
    if (ps->GetStats(PsStatsRequest(), &stats).ok()) AddShardStats(stats, out);
  });
}

}  // namespace pstrain
