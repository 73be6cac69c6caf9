// What the row-rate benchmarks (sparse_apply_benchmark, dynamic_table_benchmark) share: batches of
// distinct row indices drawn uniformly or Zipf-like, a timing loop and the median of repeats.
// Thread-safety: plain functions.
#ifndef PSTRAIN_TESTS_BENCHMARKS_ROW_BATCHES_H_
#define PSTRAIN_TESTS_BENCHMARKS_ROW_BATCHES_H_

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace pstrain {

// `num_batches` batches of `batch` distinct indices in [0, n) (REQUIRES: batch <= n), from a fixed
// seed: uniform, or (any other `distribution`) Zipf-like with exponent `a` (a != 1).
inline std::vector<std::vector<int64_t>> DistinctIndexBatches(const std::string& distribution, int64_t n,
                                                              int64_t batch, double a, int num_batches) {
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const double dn = static_cast<double>(n);
  auto draw = [&]() -> int64_t {
    if (distribution == "uniform") return static_cast<int64_t>(u01(rng) * dn) % n;
    // Continuous inverse CDF of a power law over ranks 1..n, then the rank scattered over [0, n)
    // by a multiplicative bijection, so the hot indices are not 0, 1, 2...
    const double rank = std::pow((std::pow(dn, 1 - a) - 1) * u01(rng) + 1, 1 / (1 - a));
    const uint64_t r = static_cast<uint64_t>(std::min(dn, std::max(1.0, rank))) - 1;
    return static_cast<int64_t>((r * 2654435761ULL) % static_cast<uint64_t>(n));
  };
  std::vector<std::vector<int64_t>> out(num_batches);
  for (auto& indices : out) {
    absl::flat_hash_set<int64_t> seen;
    while (static_cast<int64_t>(indices.size()) < batch) {
      const int64_t i = draw();
      if (seen.insert(i).second) indices.push_back(i);
    }
  }
  return out;
}

// Runs `step(k)` over batches k = 0, 1, ... (mod num_batches) for about `seconds`; returns rows
// per second at `batch` rows a step.
template <typename Step>
double RowsPerSecond(double seconds, int64_t batch, int num_batches, Step step) {
  using Clock = std::chrono::steady_clock;
  int64_t rows = 0;
  int k = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    step(k++ % num_batches);
    rows += batch;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  return static_cast<double>(rows) / elapsed;
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_BENCHMARKS_ROW_BATCHES_H_
