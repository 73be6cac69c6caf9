// A ps task's Prometheus metrics: per shard (label `shard`), read from PsServer::GetStats at scrape
// time, pulls, pushes, bytes, rejected and non-finite pushes, update time and version; and the
// histogram of single updates (an optimizer step on one shard), which the shards observe.
// Thread-safety: the collector runs on the scraping thread and only calls GetStats.
#ifndef PSTRAIN_PS_SERVER_PS_METRICS_H_
#define PSTRAIN_PS_SERVER_PS_METRICS_H_

#include "common/metrics/metrics_registry.h"
#include "proto/ps.pb.h"
#include "ps/store/ps_server.h"

namespace pstrain {

// pstrain_ps_update_duration_seconds, for PsServer::Options::update_latency.
Histogram* PsUpdateLatency(MetricsRegistry* metrics);

// Adds `stats`' per-shard series to `out` (exposed for tests).
void AddShardStats(const PsStatsResponse& stats, MetricsSnapshot* out);

// Registers the per-shard collector. `ps` and `metrics` are not owned and must outlive every
// Render().
void AddPsMetrics(MetricsRegistry* metrics, PsServer* ps);

}  // namespace pstrain

#endif  // PSTRAIN_PS_SERVER_PS_METRICS_H_
