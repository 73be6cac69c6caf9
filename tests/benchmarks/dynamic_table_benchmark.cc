// Dynamic table speed on one core: lookups and sparse Adagrad pushes in rows/s, beside a plain
// absl::flat_hash_map<int64_t, std::vector<float>> loop doing the same reads and writes over the
// same keys in the same run.
//
// For each --dims value, both structures hold --keys distinct keys (random 64-bit values, so the
// key space is sparse as hashed ids are), each with its values and its Adagrad accumulator, made
// before timing. Batches of --batch distinct keys are drawn uniformly or Zipf-like (exponent
// --zipf_a over the keys, hot keys scattered) and cycled through. Measured, alternating, --repeats
// times each (medians printed):
//   map lookup:   for each key, find it and copy its dim values out;
//   table lookup: DynamicTable::Lookup of the batch (shared lock, same copy);
//   map adagrad:  for each key, find it, then a += g*g; w -= lr*g/sqrt(a+eps) on its row, inline
//                 (std::sqrt keeps errno, so the compiler leaves this loop scalar);
//   map kernel:   the same, with the row updated by the ps's own vectorised Adagrad loop
//                 (optimizer_kernels.h) called once per row: the stronger baseline;
//   table push:   DynamicTable::Push of the batch: size and NaN/Inf checks, duplicate detection,
//                 the table's lock, gather, Adagrad over the gathered rows, scatter, step stamps.
// Ratios are the table's rows/s over the map's (for pushes, over the faster of the two map loops). Single-threaded:
// figures are per core.
//
// Usage: dynamic_table_benchmark [--keys=1000000] [--dims=16,64] [--batch=16384] [--seconds=0.5]
//          [--repeats=3] [--zipf_a=1.05] [--distributions=uniform,zipf]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "common/plan/dynamic_key_owner.h"
#include "ps/store/dynamic_table.h"
#include "ps/store/optimizer_kernels.h"
#include "tests/benchmarks/row_batches.h"

ABSL_FLAG(int64_t, keys, 1000000, "distinct keys held");
ABSL_FLAG(std::string, dims, "16,64", "row widths to measure");
ABSL_FLAG(int64_t, batch, 16384, "distinct keys per lookup or push");
ABSL_FLAG(double, seconds, 0.5, "time per measurement");
ABSL_FLAG(int, repeats, 3, "measurements per method, alternating; medians are printed");
ABSL_FLAG(double, zipf_a, 1.05, "Zipf exponent of the skewed batches");
ABSL_FLAG(std::string, distributions, "uniform,zipf", "key distributions to measure");

namespace pstrain {
namespace {

constexpr int kBatches = 32;  // distinct batches cycled through while timing
constexpr float kLr = 0.01f, kEps = 1e-7f;

int64_t KeyOf(int64_t index) { return static_cast<int64_t>(Mix64(static_cast<uint64_t>(index) + 12345)); }

// `kBatches` batches of `batch` distinct keys among the n held (KeyOf of distinct indices).
std::vector<std::vector<int64_t>> MakeBatches(const std::string& distribution, int64_t n, int64_t batch, double a) {
  std::vector<std::vector<int64_t>> out = DistinctIndexBatches(distribution, n, batch, a, kBatches);
  for (auto& keys : out) {
    for (int64_t& k : keys) k = KeyOf(k);
  }
  return out;
}

void RunDim(int64_t dim) {
  const int64_t n = absl::GetFlag(FLAGS_keys), batch = absl::GetFlag(FLAGS_batch);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  DynamicTableOptions o;
  o.name = "emb";
  o.dim = dim;
  o.initializer.set_type("random_uniform");
  o.initializer.set_minval(-0.05);
  o.initializer.set_maxval(0.05);
  OptimizerProto p;
  p.set_type("adagrad");
  p.mutable_learning_rate()->set_initial(kLr);
  p.set_epsilon(kEps);
  o.optimizer = std::shared_ptr<const Optimizer>(*Optimizer::Create(p));
  auto table = *DynamicTable::Create(o);
  absl::flat_hash_map<int64_t, std::vector<float>> map;  // key -> values, then accumulator
  map.reserve(static_cast<size_t>(n));
  {
    std::vector<int64_t> keys;
    std::vector<float> zeros(static_cast<size_t>(batch * dim), 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      keys.push_back(KeyOf(i));
      std::vector<float> row(static_cast<size_t>(2 * dim), 0.1f);
      map.emplace(keys.back(), std::move(row));
      if (static_cast<int64_t>(keys.size()) == batch || i == n - 1) {
        if (!table->Push(keys, absl::MakeConstSpan(zeros.data(), keys.size() * dim), 0).ok()) std::abort();
        keys.clear();
      }
    }
  }
  std::printf("\ndim %lld: %lld keys; table %.0f MB (%.1f bytes/row beyond values and slots)\n",
              static_cast<long long>(dim), static_cast<long long>(n), table->MemoryBytes() * 1e-6,
              static_cast<double>(table->MemoryBytes() - n * table->RowBytes()) / static_cast<double>(n));
  std::printf("%-8s  %13s  %14s  %6s  %13s  %13s  %13s  %6s\n", "keys", "map lookup/s", "table lookup/s", "ratio",
              "map adagrad/s", "map kernel/s", "table push/s", "ratio");
  std::vector<float> grads(static_cast<size_t>(batch * dim));
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 1e-3f * static_cast<float>(i % 13) - 6e-3f;
  std::vector<float> out(static_cast<size_t>(batch * dim));
  for (const std::string& distribution :
       std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_distributions), ','))) {
    const auto batches = MakeBatches(distribution, n, batch, absl::GetFlag(FLAGS_zipf_a));
    std::vector<double> ml, tl, ma, mk, tp;
    int64_t step = 1;
    for (int rep = 0; rep < absl::GetFlag(FLAGS_repeats); ++rep) {
      ml.push_back(RowsPerSecond(seconds, batch, kBatches, [&](int k) {
        float* dst = out.data();
        for (int64_t key : batches[k]) {
          auto it = map.find(key);
          if (it == map.end()) std::abort();
          std::memcpy(dst, it->second.data(), static_cast<size_t>(dim) * sizeof(float));
          dst += dim;
        }
      }));
      tl.push_back(RowsPerSecond(seconds, batch, kBatches, [&](int k) {
        if (!table->Lookup(batches[k], absl::MakeSpan(out)).ok()) std::abort();
      }));
      ma.push_back(RowsPerSecond(seconds, batch, kBatches, [&](int k) {
        const float* g = grads.data();
        for (int64_t key : batches[k]) {
          auto it = map.find(key);
          if (it == map.end()) std::abort();
          float* w = it->second.data();
          float* a = w + dim;
          for (int64_t e = 0; e < dim; ++e) {
            a[e] += g[e] * g[e];
            w[e] -= kLr * g[e] / std::sqrt(a[e] + kEps);
          }
          g += dim;
        }
      }));
      mk.push_back(RowsPerSecond(seconds, batch, kBatches, [&](int k) {
        const float* g = grads.data();
        const OptimizerKernels& kernels = ActiveOptimizerKernels();
        for (int64_t key : batches[k]) {
          auto it = map.find(key);
          if (it == map.end()) std::abort();
          kernels.adagrad(it->second.data(), it->second.data() + dim, g, kLr, kEps, dim);
          g += dim;
        }
      }));
      tp.push_back(RowsPerSecond(seconds, batch, kBatches, [&](int k) {
        if (!table->Push(batches[k], grads, step++).ok()) std::abort();
      }));
    }
    const double a = Median(ml), b = Median(tl), c = Median(ma), e = Median(mk), d = Median(tp);
    std::printf("%-8s  %13.3g  %14.3g  %6.2f  %13.3g  %13.3g  %13.3g  %6.2f\n", distribution.c_str(), a, b, b / a, c, e,
                d, d / std::max(c, e));
  }
}

}  // namespace
}  // namespace pstrain

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  for (const std::string& d : std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_dims), ','))) {
    pstrain::RunDim(std::stoll(d));
  }
  return 0;
}
