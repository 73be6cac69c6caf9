#include "common/metrics/metrics_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pstrain {
namespace {

void AtomicAdd(std::atomic<double>* target, double v) {
  double old = target->load(std::memory_order_relaxed);
  while (!target->compare_exchange_weak(old, old + v, std::memory_order_relaxed)) {
  }
}

// Backslash and newline escaped, and double quotes too in label values (not in HELP text).
std::string Escape(const std::string& s, bool quotes) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || (quotes && c == '"')) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string LabelText(const MetricLabels& labels, const std::string& extra_name = "",
                      const std::string& extra_value = "") {
  if (labels.empty() && extra_name.empty()) return "";
  std::string out = "{";
  for (const auto& [name, value] : labels) {
    absl::StrAppend(&out, out.size() > 1 ? "," : "", name, "=\"", Escape(value, true), "\"");
  }
  if (!extra_name.empty()) absl::StrAppend(&out, out.size() > 1 ? "," : "", extra_name, "=\"", extra_value, "\"");
  return out + "}";
}

const char* TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return absl::StrFormat("%.0f", v);
  std::string s = absl::StrFormat("%.15g", v);
  if (std::strtod(s.c_str(), nullptr) != v) s = absl::StrFormat("%.17g", v);
  return s;
}

void Counter::Increment(double v) {
  if (v > 0) AtomicAdd(&value_, v);
}

void Gauge::Add(double v) { AtomicAdd(&value_, v); }

void Gauge::SetMax(double v) {
  double old = value_.load(std::memory_order_relaxed);
  while (v > old && !value_.compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  absl::MutexLock lock(&mu_);
  counts_.assign(bounds_.size() + 1, 0);
}

void Histogram::Observe(double v) {
  // The first bucket whose bound is >= v (Prometheus buckets are "less than or equal").
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  absl::MutexLock lock(&mu_);
  ++counts_[i];
  sum_ += v;
}

Histogram::Snapshot Histogram::Take() const {
  Snapshot s;
  s.bounds = bounds_;
  absl::MutexLock lock(&mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_;
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double b = start;
  for (int i = 0; i < count; ++i, b *= factor) out.push_back(b);
  return out;
}

std::vector<double> LatencyBuckets() { return ExponentialBuckets(0.0001, 2.5, 16); }  // 100 µs .. ~93 s

MetricsSnapshot::Family* MetricsSnapshot::FamilyFor(const std::string& name, MetricType type, const std::string& help) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.type = type;
    it->second.help = help;
  }
  return it->second.type == type ? &it->second : nullptr;
}

void MetricsSnapshot::AddCounter(const std::string& name, const std::string& help, const MetricLabels& labels,
                                 double value) {
  if (Family* f = FamilyFor(name, MetricType::kCounter, help)) f->values.emplace_back(labels, value);
}

void MetricsSnapshot::AddGauge(const std::string& name, const std::string& help, const MetricLabels& labels,
                               double value) {
  if (Family* f = FamilyFor(name, MetricType::kGauge, help)) f->values.emplace_back(labels, value);
}

void MetricsSnapshot::AddHistogram(const std::string& name, const std::string& help, const MetricLabels& labels,
                                   const Histogram::Snapshot& h) {
  if (Family* f = FamilyFor(name, MetricType::kHistogram, help)) f->histograms.emplace_back(labels, h);
}

std::string MetricsSnapshot::ToText() const {
  std::string out;
  for (const auto& [name, f] : families_) {
    absl::StrAppend(&out, "# HELP ", name, " ", Escape(f.help, false), "\n# TYPE ", name, " ", TypeName(f.type), "\n");
    for (const auto& [labels, value] : f.values) {
      absl::StrAppend(&out, name, LabelText(labels), " ", FormatMetricValue(value), "\n");
    }
    for (const auto& [labels, h] : f.histograms) {
      for (size_t i = 0; i < h.cumulative.size(); ++i) {
        const std::string le = i < h.bounds.size() ? FormatMetricValue(h.bounds[i]) : "+Inf";
        absl::StrAppend(&out, name, "_bucket", LabelText(labels, "le", le), " ", h.cumulative[i], "\n");
      }
      absl::StrAppend(&out, name, "_sum", LabelText(labels), " ", FormatMetricValue(h.sum), "\n");
      absl::StrAppend(&out, name, "_count", LabelText(labels), " ", h.count, "\n");
    }
  }
  return out;
}

MetricsRegistry::Entry* MetricsRegistry::EntryFor(const std::string& name, MetricType type, const std::string& help) {
  auto [it, inserted] = entries_.try_emplace(name);
  if (inserted) {
    it->second.type = type;
    it->second.help = help;
  }
  if (it->second.type != type) return &mismatched_;
  return &it->second;
}

Counter* MetricsRegistry::GetCounter(const std::string& name, const std::string& help, const MetricLabels& labels) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<Counter>& c = EntryFor(name, MetricType::kCounter, help)->counters[labels];
  if (c == nullptr) c = std::make_unique<Counter>();
  return c.get();
}

Gauge* MetricsRegistry::GetGauge(const std::string& name, const std::string& help, const MetricLabels& labels) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<Gauge>& g = EntryFor(name, MetricType::kGauge, help)->gauges[labels];
  if (g == nullptr) g = std::make_unique<Gauge>();
  return g.get();
}

Histogram* MetricsRegistry::GetHistogram(const std::string& name, const std::string& help,
                                         const std::vector<double>& bounds, const MetricLabels& labels) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<Histogram>& h = EntryFor(name, MetricType::kHistogram, help)->histograms[labels];
  if (h == nullptr) h = std::make_unique<Histogram>(bounds);
  return h.get();
}

void MetricsRegistry::AddCollector(Collector collector) {
  absl::MutexLock lock(&mu_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::Render() const {
  MetricsSnapshot snapshot;
  std::vector<Collector> collectors;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, e] : entries_) {
      for (const auto& [labels, c] : e.counters) snapshot.AddCounter(name, e.help, labels, c->value());
      for (const auto& [labels, g] : e.gauges) snapshot.AddGauge(name, e.help, labels, g->value());
      for (const auto& [labels, h] : e.histograms) snapshot.AddHistogram(name, e.help, labels, h->Take());
    }
    collectors = collectors_;
  }
  for (const Collector& collect : collectors) collect(&snapshot);
  return snapshot.ToText();
}

}  // namespace pstrain
