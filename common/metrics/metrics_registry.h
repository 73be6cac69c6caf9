// MetricsRegistry: the metrics of one process (counters, gauges, histograms) that the logic
// updates through plain pointers, rendered on demand in Prometheus's text exposition format
// (version 0.0.4). No HTTP here: common/http_metrics_server serves Render() to scrapers.
//
// Conventions (Prometheus's): base units in names (`_seconds`, `_bytes`), counters end in
// `_total`, ratios are 0..1; every family has one HELP and one TYPE line; label values are
// escaped (backslash, double quote, newline). Histograms render cumulative `_bucket{le=...}` lines,
// `+Inf` last, then `_sum` and `_count`.
//
// Values that live elsewhere (a ps's per-shard counters, the process's memory) are read at scrape
// time by collectors: callbacks that add samples to a MetricsSnapshot.
//
// Thread-safety: every method of MetricsRegistry, Counter, Gauge and Histogram is thread-safe.
// Metric objects are owned by the registry and live as long as it does.
#ifndef PSTRAIN_COMMON_METRICS_METRICS_REGISTRY_H_
#define PSTRAIN_COMMON_METRICS_METRICS_REGISTRY_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace pstrain {

// Label pairs in the order they are rendered, e.g. {{"worker", "worker:0"}}.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  // REQUIRES: v >= 0 (a counter never goes down).
  void Increment(double v = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v);
  // Raises the gauge to `v` when `v` is higher: for figures that only grow but are computed on
  // several threads, where a plain Set could go back to an older value.
  void SetMax(double v);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, increasing (the +Inf bucket is implicit).
  explicit Histogram(std::vector<double> bounds);

  void Observe(double v);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (= count)
    double sum = 0.0;
    uint64_t count = 0;
  };
  Snapshot Take() const;

 private:
  const std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);  // per bucket (not cumulative), +Inf last
  double sum_ ABSL_GUARDED_BY(mu_) = 0.0;
};

// Bucket bounds: `count` bounds start, start*factor, ... (Prometheus's ExponentialBuckets).
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// Latencies from 100 µs to about 100 s.
std::vector<double> LatencyBuckets();

enum class MetricType { kCounter, kGauge, kHistogram };

// What a scrape renders: families by name, each with its samples.
class MetricsSnapshot {
 public:
  // Add a sample of a counter or gauge family; the first call for `name` sets its type and help.
  void AddCounter(const std::string& name, const std::string& help, const MetricLabels& labels, double value);
  void AddGauge(const std::string& name, const std::string& help, const MetricLabels& labels, double value);
  void AddHistogram(const std::string& name, const std::string& help, const MetricLabels& labels,
                    const Histogram::Snapshot& h);

  // The text exposition format, families sorted by name.
  std::string ToText() const;

 private:
  struct Family {
    MetricType type = MetricType::kGauge;
    std::string help;
    std::vector<std::pair<MetricLabels, double>> values;
    std::vector<std::pair<MetricLabels, Histogram::Snapshot>> histograms;
  };
  Family* FamilyFor(const std::string& name, MetricType type, const std::string& help);
  std::map<std::string, Family> families_;
};

class MetricsRegistry {
 public:
  using Collector = std::function<void(MetricsSnapshot*)>;

  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // The metric `name` with `labels`, created on first use; the same pointer on later calls.
  // REQUIRES: one name is used with one type (and counters' names end in "_total"); a name asked
  // for with another type than its first gets a metric that is never rendered.
  Counter* GetCounter(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  Gauge* GetGauge(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  // `bounds` are used when the histogram is created (see Histogram).
  Histogram* GetHistogram(const std::string& name, const std::string& help, const std::vector<double>& bounds,
                          const MetricLabels& labels = {});

  // Runs at every Render(), on the rendering thread; must be thread-safe and must not call back
  // into this registry.
  void AddCollector(Collector collector);

  // Every metric and every collector's samples, in the text exposition format.
  std::string Render() const;

 private:
  struct Entry {
    MetricType type;
    std::string help;
    std::map<MetricLabels, std::unique_ptr<Counter>> counters;
    std::map<MetricLabels, std::unique_ptr<Gauge>> gauges;
    std::map<MetricLabels, std::unique_ptr<Histogram>> histograms;
  };
  Entry* EntryFor(const std::string& name, MetricType type, const std::string& help) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::vector<Collector> collectors_ ABSL_GUARDED_BY(mu_);
  Entry mismatched_ ABSL_GUARDED_BY(mu_);  // metrics asked for with the wrong type: never rendered
};

// A number as the text format writes it: integers exactly, others with enough digits to read
// back the same double; "+Inf", "-Inf", "NaN".
std::string FormatMetricValue(double v);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_METRICS_METRICS_REGISTRY_H_
