// Dynamic tables: each rule of ps/store/dynamic_table.h checked against a reference written out
// here (a std::map of rows applying Adagrad's formula in double precision, with its own admission
// count, TTL and cap rules), independently of the code under test. Initial rows come from a lookup
// of an empty table (a lookup stores nothing, as a test below shows), and are checked on their own
// for determinism and distribution.
#include "ps/store/dynamic_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "common/plan/dynamic_key_owner.h"

namespace pstrain {
namespace {

constexpr int64_t kDim = 4;
constexpr double kLr = 0.05;

std::shared_ptr<const Optimizer> MakeOptimizer(const std::string& type, double lr = kLr) {
  OptimizerProto p;
  p.set_type(type);
  p.mutable_learning_rate()->set_initial(lr);
  return std::shared_ptr<const Optimizer>(*Optimizer::Create(p));
}

DynamicTableOptions Options(const std::string& type = "adagrad") {
  DynamicTableOptions o;
  o.name = "emb";
  o.dim = kDim;
  o.seed = 42;
  o.initializer.set_type("truncated_normal");
  o.initializer.set_stddev(0.5);
  o.optimizer = MakeOptimizer(type);
  return o;
}

std::unique_ptr<DynamicTable> Make(const DynamicTableOptions& o) {
  auto t = DynamicTable::Create(o);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

std::vector<float> LookupOne(const DynamicTable& t, int64_t key) {
  std::vector<float> out(static_cast<size_t>(t.dim()));
  EXPECT_TRUE(t.Lookup({key}, absl::MakeSpan(out)).ok());
  return out;
}

// The reference: rows of values and Adagrad accumulators, updated in double precision.
struct RefRow {
  std::vector<double> w, a;
  int64_t last = 0;
};

class RefTable {
 public:
  // `init`: a table whose lookups give the initial rows; threshold: admission N.
  RefTable(const DynamicTable* init, int threshold = 1) : init_(init), threshold_(threshold) {}

  void Push(const std::vector<int64_t>& keys, const std::vector<float>& grads, int64_t step) {
    std::map<int64_t, std::vector<double>> summed;  // duplicates summed first
    std::vector<int64_t> order;
    for (size_t i = 0; i < keys.size(); ++i) {
      auto [it, fresh] = summed.try_emplace(keys[i], kDim, 0.0);
      if (fresh) order.push_back(keys[i]);
      for (int64_t e = 0; e < kDim; ++e) it->second[e] += grads[i * kDim + e];
    }
    for (int64_t key : order) {
      if (!rows.count(key)) {
        if (++seen[key] < threshold_) {
          ++dropped;
          continue;
        }
        RefRow r;
        for (float v : LookupOne(*init_, key)) r.w.push_back(v);
        r.a.assign(kDim, 0.1);  // Keras's initial_accumulator_value
        rows[key] = r;
      }
      RefRow& r = rows[key];
      for (int64_t e = 0; e < kDim; ++e) {
        const double g = summed[key][e];
        r.a[e] += g * g;
        r.w[e] -= kLr * g / std::sqrt(r.a[e] + 1e-7);
      }
      r.last = step;
    }
  }

  std::map<int64_t, RefRow> rows;
  std::map<int64_t, int> seen;
  int64_t dropped = 0;

 private:
  const DynamicTable* init_;
  int threshold_;
};

// Every reference row is held with the same values and accumulators (and nothing else is held).
void ExpectMatches(const DynamicTable& t, const RefTable& ref) {
  ASSERT_EQ(t.rows(), static_cast<int64_t>(ref.rows.size()));
  std::vector<float> row(static_cast<size_t>(t.FloatsPerRow()));
  for (const auto& [key, r] : ref.rows) {
    int64_t last = -1;
    ASSERT_TRUE(t.ReadRow(key, absl::MakeSpan(row), &last)) << "key " << key;
    EXPECT_EQ(last, r.last) << "key " << key;
    for (int64_t e = 0; e < kDim; ++e) {
      EXPECT_NEAR(row[e], r.w[e], 1e-5) << "key " << key << " element " << e;
      EXPECT_NEAR(row[kDim + e], r.a[e], 1e-5 * r.a[e]) << "key " << key << " element " << e;
    }
  }
}

std::vector<float> Grads(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> g(n * kDim);
  for (float& x : g) x = u(rng);
  return g;
}

TEST(DynamicTable, InitialRowsDependOnSeedTableAndKeyOnly) {
  auto a = Make(Options());
  auto b = Make(Options());
  DynamicTableOptions other_seed = Options(), other_name = Options();
  other_seed.seed = 43;
  other_name.name = "emb2";
  auto c = Make(other_seed);
  auto d = Make(other_name);
  const int64_t big = int64_t{1} << 62;
  for (int64_t key : {int64_t{0}, int64_t{1}, int64_t{-7}, big}) {
    EXPECT_EQ(LookupOne(*a, key), LookupOne(*b, key));
    EXPECT_NE(LookupOne(*a, key), LookupOne(*c, key));
    EXPECT_NE(LookupOne(*a, key), LookupOne(*d, key));
  }
  EXPECT_NE(LookupOne(*a, 1), LookupOne(*a, 2));
  // A row made by a push (sgd with zero gradient keeps it) equals the lookup of an empty table,
  // whichever shard of however many holds it.
  for (int shards : {1, 3}) {
    std::vector<std::unique_ptr<DynamicTable>> tables;
    for (int s = 0; s < shards; ++s) tables.push_back(Make(Options("sgd")));
    for (int64_t key = 100; key < 120; ++key) {
      DynamicTable& t = *tables[DynamicKeyOwner(static_cast<uint64_t>(key), shards)];
      ASSERT_TRUE(t.Push({key}, std::vector<float>(kDim, 0.0f), 0).ok());
      std::vector<float> row(static_cast<size_t>(t.FloatsPerRow()));
      ASSERT_TRUE(t.ReadRow(key, absl::MakeSpan(row), nullptr));
      EXPECT_EQ(row, LookupOne(*a, key)) << shards << " shards, key " << key;
    }
  }
}

TEST(DynamicTable, InitializerDistributions) {
  DynamicTableOptions o = Options();
  o.dim = 8;
  auto t = Make(o);
  std::vector<int64_t> keys(4000);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<int64_t>(i * 7919);
  std::vector<float> out(keys.size() * 8);
  ASSERT_TRUE(t->Lookup(keys, absl::MakeSpan(out)).ok());
  double sum = 0, sq = 0;
  for (float v : out) {
    EXPECT_LE(std::fabs(v), 2 * 0.5 + 1e-6);  // truncated at 2 stddev
    sum += v;
    sq += v * v;
  }
  const double mean = sum / out.size(), stddev = std::sqrt(sq / out.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(stddev, 0.5 * 0.8796, 0.02);  // a unit normal cut at 2 has stddev 0.8796

  o.initializer.Clear();
  o.initializer.set_type("random_uniform");
  o.initializer.set_minval(1.0);
  o.initializer.set_maxval(3.0);
  auto u = Make(o);
  ASSERT_TRUE(u->Lookup(keys, absl::MakeSpan(out)).ok());
  sum = 0;
  for (float v : out) {
    EXPECT_GE(v, 1.0f);
    EXPECT_LT(v, 3.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / out.size(), 2.0, 0.02);
  o.initializer.set_type("zeros");
  EXPECT_EQ(LookupOne(*Make(o), 5), std::vector<float>(8, 0.0f));
  o.initializer.set_type("orthogonal");
  auto bad = DynamicTable::Create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown initializer \"orthogonal\""), std::string::npos) << bad.status();
}

TEST(DynamicTable, GlorotUniformUsesDimAsBothFans) {
  DynamicTableOptions o = Options();
  o.dim = 6;
  o.initializer.Clear();
  o.initializer.set_type("glorot_uniform");
  auto t = Make(o);
  const double limit = std::sqrt(6.0 / 12.0);
  double max_abs = 0;
  for (int64_t key = 0; key < 500; ++key) {
    for (float v : LookupOne(*t, key)) max_abs = std::max(max_abs, std::fabs(static_cast<double>(v)));
  }
  EXPECT_LE(max_abs, limit);
  EXPECT_GT(max_abs, 0.95 * limit);
}

TEST(DynamicKeyOwner, SpreadsConsecutiveKeysOverShards) {
  constexpr int kShards = 4, kKeys = 20000;
  std::vector<int> per_shard(kShards, 0);
  for (int64_t key = 0; key < kKeys; ++key) {
    const int s = DynamicKeyOwner(static_cast<uint64_t>(key), kShards);
    ASSERT_GE(s, 0);
    ASSERT_LT(s, kShards);
    ++per_shard[s];
  }
  for (int n : per_shard) EXPECT_NEAR(n, kKeys / kShards, kKeys / kShards / 10);
  EXPECT_EQ(DynamicKeyOwner(12345, 1), 0);
  EXPECT_EQ(DynamicKeyOwner(12345, 0), 0);
}

TEST(DynamicTable, LookupOfMissingKeyStoresNothing) {
  auto t = Make(Options());
  const std::vector<float> first = LookupOne(*t, 9);
  EXPECT_EQ(LookupOne(*t, 9), first);
  EXPECT_EQ(t->rows(), 0);
  std::vector<float> row(static_cast<size_t>(t->FloatsPerRow()));
  EXPECT_FALSE(t->ReadRow(9, absl::MakeSpan(row), nullptr));
  DynamicTableCounters c = t->counters();
  EXPECT_EQ(c.lookups, 2);
  EXPECT_EQ(c.lookups_missing, 2);
  EXPECT_EQ(c.created, 0);
}

TEST(DynamicTable, PushCreatesRowsAndAddsAcrossPushes) {
  auto t = Make(Options());
  auto init = Make(Options());
  RefTable ref(init.get());
  std::mt19937_64 rng(1);
  for (int step = 0; step < 3; ++step) {
    const std::vector<int64_t> keys = {11, 12};
    const std::vector<float> g = Grads(keys.size(), rng);
    ASSERT_TRUE(t->Push(keys, g, step).ok());
    ref.Push(keys, g, step);
    ExpectMatches(*t, ref);
  }
  EXPECT_EQ(t->counters().created, 2);
  // A lookup now reads the stored row, not the initializer's.
  std::vector<float> row(static_cast<size_t>(t->FloatsPerRow()));
  ASSERT_TRUE(t->ReadRow(11, absl::MakeSpan(row), nullptr));
  EXPECT_EQ(LookupOne(*t, 11), std::vector<float>(row.begin(), row.begin() + kDim));
  EXPECT_NE(LookupOne(*t, 11), LookupOne(*init, 11));
  EXPECT_EQ(t->counters().lookups_missing, 0);
}

TEST(DynamicTable, DuplicateKeysInOnePushAreSummedFirst) {
  auto t = Make(Options());
  auto init = Make(Options());
  RefTable ref(init.get());
  const std::vector<int64_t> keys = {5, 7, 5, 5};
  std::mt19937_64 rng(2);
  const std::vector<float> g = Grads(keys.size(), rng);
  ASSERT_TRUE(t->Push(keys, g, 0).ok());
  ref.Push(keys, g, 0);
  ExpectMatches(*t, ref);
  // Applying the three gradients one push each differs (Adagrad is not additive).
  auto separate = Make(Options());
  for (size_t i : {0, 2, 3}) {
    ASSERT_TRUE(separate->Push({5}, std::vector<float>(g.begin() + i * kDim, g.begin() + (i + 1) * kDim), 0).ok());
  }
  std::vector<float> summed_row(8), separate_row(8);
  ASSERT_TRUE(t->ReadRow(5, absl::MakeSpan(summed_row), nullptr));
  ASSERT_TRUE(separate->ReadRow(5, absl::MakeSpan(separate_row), nullptr));
  EXPECT_NE(summed_row, separate_row);
  EXPECT_EQ(t->counters().pushed_rows, 2);
}

TEST(DynamicTable, RandomPushesMatchTheReference) {
  auto t = Make(Options());
  auto init = Make(Options());
  RefTable ref(init.get());
  std::mt19937_64 rng(3);
  for (int step = 0; step < 60; ++step) {
    std::vector<int64_t> keys(1 + rng() % 40);
    for (int64_t& k : keys) k = static_cast<int64_t>(rng() % 200) - 100;  // repeats within a push
    const std::vector<float> g = Grads(keys.size(), rng);
    ASSERT_TRUE(t->Push(keys, g, step).ok());
    ref.Push(keys, g, step);
  }
  ExpectMatches(*t, ref);
}

TEST(DynamicTable, LazyAdamFtrlAndSgdWorkAdamIsRefused) {
  for (const char* type : {"lazy_adam", "ftrl", "sgd", "rmsprop"}) {
    auto t = DynamicTable::Create(Options(type));
    ASSERT_TRUE(t.ok()) << type << ": " << t.status();
    ASSERT_TRUE((*t)->Push({1, 2, 1}, std::vector<float>(3 * kDim, 0.5f), 0).ok());
    EXPECT_EQ((*t)->rows(), 2);
    EXPECT_NE(LookupOne(**t, 1), LookupOne(*Make(Options()), 1)) << type;
  }
  auto adam = DynamicTable::Create(Options("adam"));
  ASSERT_FALSE(adam.ok());
  EXPECT_NE(adam.status().message().find("lazy_adam"), std::string::npos) << adam.status();
}

TEST(DynamicTable, BadCallsAreRefusedAndChangeNothing) {
  auto t = Make(Options());
  std::vector<float> out(3);
  EXPECT_FALSE(t->Lookup({1}, absl::MakeSpan(out)).ok());
  EXPECT_FALSE(t->Push({1}, std::vector<float>(3, 0.0f), 0).ok());
  EXPECT_FALSE(t->Push({1}, std::vector<float>(kDim, 0.0f), -1).ok());
  std::vector<float> nan(kDim, 0.0f);
  nan[2] = std::nanf("");
  absl::Status s = t->Push({1}, nan, 0);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("key 1"), std::string::npos) << s;
  EXPECT_EQ(t->rows(), 0);
  DynamicTableOptions o = Options();
  o.dim = 0;
  EXPECT_FALSE(DynamicTable::Create(o).ok());
  o = Options();
  o.max_rows = 10;
  o.cap_low_water = 11;
  EXPECT_FALSE(DynamicTable::Create(o).ok());
  o = Options();
  o.admission_threshold = 300;
  EXPECT_FALSE(DynamicTable::Create(o).ok());
}

TEST(DynamicTable, KeysAreAdmittedAfterNPushes) {
  DynamicTableOptions o = Options();
  o.admission_threshold = 3;
  o.filter_width = 1 << 16;
  auto t = Make(o);
  auto init = Make(Options());
  RefTable ref(init.get(), 3);
  std::mt19937_64 rng(4);
  for (int step = 0; step < 40; ++step) {
    std::vector<int64_t> keys(1 + rng() % 10);
    for (int64_t& k : keys) k = static_cast<int64_t>(rng() % 30);  // repeats count once per push
    const std::vector<float> g = Grads(keys.size(), rng);
    ASSERT_TRUE(t->Push(keys, g, step).ok());
    ref.Push(keys, g, step);
    ExpectMatches(*t, ref);
    // A key not admitted yet looks up to its initial row.
    for (const auto& [key, n] : ref.seen) {
      if (!ref.rows.count(key)) {
        EXPECT_EQ(LookupOne(*t, key), LookupOne(*init, key));
      }
    }
  }
  EXPECT_GT(ref.dropped, 0);
  EXPECT_EQ(t->counters().admission_dropped_updates, ref.dropped);
  // Lookups do not count toward admission.
  for (int i = 0; i < 5; ++i) LookupOne(*t, 999);
  ASSERT_TRUE(t->Push({999}, std::vector<float>(kDim, 1.0f), 41).ok());
  EXPECT_EQ(t->rows(), static_cast<int64_t>(ref.rows.size()));
}

TEST(DynamicTable, SharedFilterCountersAdmitEarlyNeverLate) {
  // One counter for every key: key 2 inherits key 1's count (the documented false admission).
  DynamicTableOptions o = Options();
  o.admission_threshold = 3;
  o.filter_width = 1;
  o.filter_depth = 1;
  auto t = Make(o);
  ASSERT_TRUE(t->Push({1}, std::vector<float>(kDim, 1.0f), 0).ok());
  ASSERT_TRUE(t->Push({1}, std::vector<float>(kDim, 1.0f), 1).ok());
  EXPECT_EQ(t->rows(), 0);
  ASSERT_TRUE(t->Push({2}, std::vector<float>(kDim, 1.0f), 2).ok());
  EXPECT_EQ(t->rows(), 1);  // key 2 seen once, admitted
  std::vector<float> row(8);
  EXPECT_TRUE(t->ReadRow(2, absl::MakeSpan(row), nullptr));
}

TEST(DynamicTable, TtlDropsRowsNotUpdatedForTSteps) {
  DynamicTableOptions o = Options();
  o.ttl_steps = 5;
  auto t = Make(o);
  auto init = Make(Options());
  ASSERT_TRUE(t->Push({1, 2}, std::vector<float>(2 * kDim, 1.0f), 0).ok());
  ASSERT_TRUE(t->Push({2, 3}, std::vector<float>(2 * kDim, 1.0f), 3).ok());
  EXPECT_EQ(t->EvictExpired(5), 0);  // 5 - 0 is not more than 5
  EXPECT_EQ(t->EvictExpired(6), 1);  // key 1: 6 - 0 > 5
  EXPECT_EQ(t->rows(), 2);
  EXPECT_EQ(LookupOne(*t, 1), LookupOne(*init, 1));
  EXPECT_EQ(t->EvictExpired(9), 2);
  EXPECT_EQ(t->counters().evicted_ttl, 3);
  EXPECT_EQ(t->rows(), 0);
  // An evicted key pushed again starts from its initial row.
  auto fresh = Make(Options());
  ASSERT_TRUE(t->Push({1}, std::vector<float>(kDim, 1.0f), 10).ok());
  ASSERT_TRUE(fresh->Push({1}, std::vector<float>(kDim, 1.0f), 10).ok());
  EXPECT_EQ(LookupOne(*t, 1), LookupOne(*fresh, 1));
}

TEST(DynamicTable, CapEvictsLeastRecentlyUpdatedFirst) {
  DynamicTableOptions o = Options("sgd");
  o.max_rows = 20;
  o.cap_low_water = 12;
  auto t = Make(o);
  // Reference of the rule: when over max_rows, keep the cap_low_water largest (step, key).
  std::map<int64_t, int64_t> ref;  // key -> last update step
  int64_t evicted = 0;
  std::mt19937_64 rng(5);
  for (int step = 0; step < 50; ++step) {
    std::vector<int64_t> keys(1 + rng() % 6);
    for (int64_t& k : keys) k = static_cast<int64_t>(rng() % 60);
    ASSERT_TRUE(t->Push(keys, std::vector<float>(keys.size() * kDim, 0.25f), step / 2).ok());  // ties too
    for (int64_t k : keys) ref[k] = step / 2;
    if (ref.size() > 20) {
      std::vector<std::pair<int64_t, int64_t>> order;
      for (const auto& [k, s] : ref) order.emplace_back(s, k);
      std::sort(order.begin(), order.end());
      for (size_t i = 0; i + 12 < order.size(); ++i) ref.erase(order[i].second);
      evicted += static_cast<int64_t>(order.size()) - 12;
    }
    ASSERT_EQ(t->rows(), static_cast<int64_t>(ref.size())) << "step " << step;
    std::vector<float> row(static_cast<size_t>(t->FloatsPerRow()));
    for (const auto& [k, s] : ref) {
      int64_t last = -1;
      ASSERT_TRUE(t->ReadRow(k, absl::MakeSpan(row), &last)) << "key " << k << " at step " << step;
      EXPECT_EQ(last, s);
    }
  }
  EXPECT_GT(evicted, 0);
  EXPECT_EQ(t->counters().evicted_cap, evicted);
}

TEST(DynamicTable, MemoryStaysWithinRowsTimesRowBytesPlusStatedOverhead) {
  DynamicTableOptions o = Options();
  o.dim = 16;
  auto t = Make(o);
  const int64_t rows = 50000;
  std::vector<int64_t> keys(1000);
  for (int64_t first = 0; first < rows; first += 1000) {
    for (int64_t i = 0; i < 1000; ++i) keys[i] = (first + i) * 1000003;
    ASSERT_TRUE(t->Push(keys, std::vector<float>(keys.size() * 16, 0.1f), 0).ok());
  }
  ASSERT_EQ(t->rows(), rows);
  EXPECT_EQ(t->RowBytes(), 16 * 2 * 4);  // values + accumulator
  const int64_t bytes = t->MemoryBytes();
  const int64_t chunk = RowArena::kRowsPerChunk * (t->RowBytes() + 16);
  EXPECT_GE(bytes, rows * t->RowBytes());
  EXPECT_LE(bytes, rows * (t->RowBytes() + DynamicTable::kMaxOverheadBytesPerRow) + chunk)
      << "per row: " << static_cast<double>(bytes) / rows;
}

DynamicTableOptions AdmittingOptions() {
  DynamicTableOptions o = Options();
  o.admission_threshold = 2;
  o.filter_width = 4096;
  return o;
}

TEST(DynamicTableCheckpoint, RoundTripKeepsRowsFilterAndCounters) {
  auto t = Make(AdmittingOptions());
  std::mt19937_64 rng(6);
  for (int step = 0; step < 20; ++step) {
    std::vector<int64_t> keys(8);
    for (int64_t& k : keys) k = static_cast<int64_t>(rng() % 50);
    ASSERT_TRUE(t->Push(keys, Grads(keys.size(), rng), step).ok());
  }
  ASSERT_TRUE(t->Push({777}, std::vector<float>(kDim, 1.0f), 20).ok());  // counted once, not admitted
  LookupOne(*t, 123456);
  const DynamicTableState before = t->ExportState();
  absl::StatusOr<DynamicTableState> decoded = DecodeDynamicTableState(EncodeDynamicTableState(before));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  auto restored = Make(AdmittingOptions());
  ASSERT_TRUE(restored->RestoreState(*decoded).ok());
  const DynamicTableState after = restored->ExportState();
  EXPECT_EQ(after.keys, before.keys);
  EXPECT_EQ(after.rows, before.rows);
  EXPECT_EQ(after.last_update_steps, before.last_update_steps);
  EXPECT_EQ(after.filter_counters, before.filter_counters);
  EXPECT_EQ(after.step, 20);
  EXPECT_EQ(restored->counters().created, t->counters().created);
  EXPECT_EQ(restored->counters().lookups_missing, t->counters().lookups_missing);
  EXPECT_EQ(restored->counters().admission_dropped_updates, t->counters().admission_dropped_updates);
  // The filter came back: key 777's second push admits it in both.
  ASSERT_TRUE(restored->Push({777}, std::vector<float>(kDim, 1.0f), 21).ok());
  ASSERT_TRUE(t->Push({777}, std::vector<float>(kDim, 1.0f), 21).ok());
  EXPECT_EQ(LookupOne(*restored, 777), LookupOne(*t, 777));
  EXPECT_EQ(restored->rows(), t->rows());
  // A table of another shape refuses the state.
  DynamicTableOptions other = AdmittingOptions();
  other.dim = kDim + 1;
  absl::Status s = Make(other)->RestoreState(before);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dim"), std::string::npos) << s;
}

TEST(DynamicTableCheckpoint, ReshardingMShardsIntoNGivesTheUnshardedRows) {
  auto whole = Make(AdmittingOptions());
  constexpr int kM = 3;
  std::vector<std::unique_ptr<DynamicTable>> shards;
  for (int s = 0; s < kM; ++s) shards.push_back(Make(AdmittingOptions()));
  std::mt19937_64 rng(7);
  for (int step = 0; step < 30; ++step) {
    std::vector<int64_t> keys(12);
    for (int64_t& k : keys) k = static_cast<int64_t>(rng() % 80) * 0x10001;
    const std::vector<float> g = Grads(keys.size(), rng);
    ASSERT_TRUE(whole->Push(keys, g, step).ok());
    std::vector<std::vector<int64_t>> part_keys(kM);
    std::vector<std::vector<float>> part_grads(kM);
    for (size_t i = 0; i < keys.size(); ++i) {
      const int s = DynamicKeyOwner(static_cast<uint64_t>(keys[i]), kM);
      part_keys[s].push_back(keys[i]);
      part_grads[s].insert(part_grads[s].end(), g.begin() + i * kDim, g.begin() + (i + 1) * kDim);
    }
    for (int s = 0; s < kM; ++s) ASSERT_TRUE(shards[s]->Push(part_keys[s], part_grads[s], step).ok());
  }
  std::vector<std::string> saved;
  for (const auto& s : shards) saved.push_back(EncodeDynamicTableState(s->ExportState()));
  const DynamicTableState reference = whole->ExportState();
  for (int n : {1, 2, 5}) {
    absl::StatusOr<std::vector<std::string>> resharded = ReshardDynamicTableCheckpoints(saved, n);
    ASSERT_TRUE(resharded.ok()) << resharded.status();
    ASSERT_EQ(resharded->size(), static_cast<size_t>(n));
    std::map<int64_t, std::vector<float>> rows;
    int64_t created = 0;
    for (int i = 0; i < n; ++i) {
      auto table = Make(AdmittingOptions());
      absl::StatusOr<DynamicTableState> st = DecodeDynamicTableState((*resharded)[i]);
      ASSERT_TRUE(st.ok()) << st.status();
      ASSERT_TRUE(table->RestoreState(*st).ok());
      const DynamicTableState got = table->ExportState();
      created += table->counters().created;
      for (size_t r = 0; r < got.keys.size(); ++r) {
        EXPECT_EQ(DynamicKeyOwner(static_cast<uint64_t>(got.keys[r]), n), i);
        rows[got.keys[r]].assign(got.rows.begin() + r * 2 * kDim, got.rows.begin() + (r + 1) * 2 * kDim);
      }
    }
    ASSERT_EQ(rows.size(), reference.keys.size()) << n << " shards";
    for (size_t r = 0; r < reference.keys.size(); ++r) {
      const std::vector<float> want(reference.rows.begin() + r * 2 * kDim, reference.rows.begin() + (r + 1) * 2 * kDim);
      EXPECT_EQ(rows[reference.keys[r]], want) << n << " shards, key " << reference.keys[r];
    }
    EXPECT_EQ(created, whole->counters().created);
  }
  // Shards of different tables do not merge.
  DynamicTableOptions other = AdmittingOptions();
  other.name = "other";
  saved.push_back(EncodeDynamicTableState(Make(other)->ExportState()));
  absl::StatusOr<std::vector<std::string>> mixed = ReshardDynamicTableCheckpoints(saved, 2);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("not a shard of the same table"), std::string::npos) << mixed.status();
}

// Re-encodes `st` after `edit` (so the checksum is right and the decoder's own checks must catch it).
template <typename Edit>
std::string Edited(DynamicTableState st, Edit edit) {
  edit(st);
  return EncodeDynamicTableState(st);
}

void ExpectRefused(absl::string_view bytes, const std::string& words) {
  absl::StatusOr<DynamicTableState> st = DecodeDynamicTableState(bytes);
  ASSERT_FALSE(st.ok()) << "accepted: " << words;
  EXPECT_NE(st.status().message().find(words), std::string::npos) << st.status();
}

// Starting rows (--init_from): keys sorted with their rows, each slot at the given initial value,
// step 0; an Adagrad table with admission restores them and holds them, its filter empty.
TEST(DynamicTableCheckpoint, InitialStateHoldsTheGivenRowsWithInitialSlots) {
  const std::vector<int64_t> keys = {9, -4, 1};
  std::vector<float> values(keys.size() * kDim);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  absl::StatusOr<DynamicTableState> st = InitialDynamicTableState("emb", kDim, {0.1f}, keys, values);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->keys, (std::vector<int64_t>{-4, 1, 9}));
  EXPECT_EQ(st->last_update_steps, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(st->counters.created, 3);
  ASSERT_EQ(st->rows.size(), 3u * 2 * kDim);
  for (int64_t d = 0; d < kDim; ++d) {
    EXPECT_EQ(st->rows[d], values[kDim + d]) << "key -4's value";
    EXPECT_EQ(st->rows[kDim + d], 0.1f) << "key -4's accumulator";
    EXPECT_EQ(st->rows[4 * kDim + d], values[d]) << "key 9's value";
  }
  DynamicTableOptions o = Options();
  o.admission_threshold = 3;
  auto t = Make(o);
  ASSERT_TRUE(t->RestoreState(*st).ok());
  EXPECT_EQ(t->rows(), 3);
  EXPECT_EQ(LookupOne(*t, 9), std::vector<float>(values.begin(), values.begin() + kDim));
  EXPECT_EQ(t->ExportState().filter_counters, std::vector<uint8_t>(o.filter_width * o.filter_depth, 0));

  EXPECT_FALSE(InitialDynamicTableState("emb", kDim, {}, {1, 2, 1}, std::vector<float>(3 * kDim)).ok());
  EXPECT_FALSE(InitialDynamicTableState("emb", kDim, {}, {1, 2}, std::vector<float>(3 * kDim)).ok());
  EXPECT_FALSE(InitialDynamicTableState("emb", 0, {}, {}, {}).ok());
}

TEST(DynamicTableCheckpoint, CorruptOrTruncatedBytesAreRefusedWithAMessage) {
  auto t = Make(AdmittingOptions());
  for (int step = 0; step < 2; ++step) {  // the second push admits the keys
    ASSERT_TRUE(t->Push({1, 2, 3, 1, 2, 3}, std::vector<float>(6 * kDim, 0.5f), step).ok());
  }
  const DynamicTableState st = t->ExportState();
  const std::string good = EncodeDynamicTableState(st);
  ASSERT_TRUE(DecodeDynamicTableState(good).ok());
  ASSERT_EQ(st.keys.size(), 3u);
  for (size_t n = 0; n < good.size(); n += 7) EXPECT_FALSE(DecodeDynamicTableState(good.substr(0, n)).ok()) << n;
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  ExpectRefused(flipped, "checksum mismatch");
  ExpectRefused(std::string("PSDYNTB") + std::string(3, 'x'), "too short");
  std::string magic = good;
  magic[0] = 'Q';
  ExpectRefused(magic, "not a dynamic table checkpoint");
  ExpectRefused(Edited(st, [](DynamicTableState& s) { s.dim = 0; }), "dim 0");
  ExpectRefused(Edited(st, [](DynamicTableState& s) { s.num_slots = 99; }), "slot count 99");
  ExpectRefused(Edited(st, [](DynamicTableState& s) { std::swap(s.keys[0], s.keys[1]); }), "not strictly ascending");
  ExpectRefused(Edited(st, [](DynamicTableState& s) { s.filter_depth = 9; }), "depth 9");
  ExpectRefused(Edited(st, [](DynamicTableState& s) { s.table_name.clear(); }), "table name of 0 bytes");
  // Sizes larger than the file, with a valid checksum: refused before anything is allocated.
  ExpectRefused(Edited(st, [](DynamicTableState& s) { s.filter_width = int64_t{1} << 40; }), "larger than the file");
  ExpectRefused(Edited(st, [](DynamicTableState& s) { s.rows.push_back(0); }), "unexpected bytes");
  ExpectRefused(Edited(st, [](DynamicTableState& s) { s.rows.pop_back(); }), "does not fit");
  ExpectRefused(Edited(st,
                       [](DynamicTableState& s) {
                         s.keys.push_back(100);  // one more key than rows: the row count claims more
                         s.last_update_steps.push_back(0);
                       }),
                "row count");
}

}  // namespace
}  // namespace pstrain
