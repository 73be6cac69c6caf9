// Dynamic tables under concurrent use: lookups on several threads while pushes (making rows and
// updating them) and TTL evictions run. With SGD at learning rate 1 and gradients of 1, every push
// subtracts exactly 1 from each element of a row, so a row is always its initial row minus k for
// one whole k: a lookup must never see a torn row (elements at different k) or a k beyond the
// pushes made, and the final rows must be initial - pushes whatever the interleaving.
// Run under ThreadSanitizer by deploy/sanitize-tests.sh tsan. Bounded: fixed loop counts.
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "ps/store/dynamic_table.h"

namespace pstrain {
namespace {

constexpr int64_t kDim = 8;
constexpr int64_t kKeys = 64;
constexpr int kPushesPerWriter = 200;

DynamicTableOptions SgdOptions() {
  DynamicTableOptions o;
  o.name = "emb";
  o.dim = kDim;
  o.seed = 3;
  o.initializer.set_type("random_uniform");
  o.initializer.set_minval(-1);
  o.initializer.set_maxval(1);
  OptimizerProto p;
  p.set_type("sgd");
  p.mutable_learning_rate()->set_initial(1.0);
  o.optimizer = std::shared_ptr<const Optimizer>(*Optimizer::Create(p));
  return o;
}

// The k with row == init - k (applied one subtraction at a time, as the table does), or -1.
int PushesSeen(const std::vector<float>& row, const std::vector<float>& init, int max_k) {
  std::vector<float> expect = init;
  for (int k = 0; k <= max_k; ++k) {
    if (row == expect) return k;
    for (float& v : expect) v -= 1.0f;
  }
  return -1;
}

TEST(DynamicTableConcurrency, LookupsWhilePushingSeeWholeRows) {
  auto table = *DynamicTable::Create(SgdOptions());
  auto init_table = *DynamicTable::Create(SgdOptions());
  std::vector<std::vector<float>> init(kKeys, std::vector<float>(kDim));
  for (int64_t k = 0; k < kKeys; ++k) ASSERT_TRUE(init_table->Lookup({k}, absl::MakeSpan(init[k])).ok());
  constexpr int kWriters = 2, kReaders = 2;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      // Writer w pushes every key once per round, the keys in a different order per writer.
      std::vector<int64_t> keys(kKeys);
      for (int64_t k = 0; k < kKeys; ++k) keys[k] = w == 0 ? k : kKeys - 1 - k;
      const std::vector<float> ones(kKeys * kDim, 1.0f);
      for (int round = 0; round < kPushesPerWriter; ++round) {
        if (!table->Push(keys, ones, round).ok()) ++bad;
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&] {
      std::vector<int64_t> keys(kKeys);
      for (int64_t k = 0; k < kKeys; ++k) keys[k] = k;
      std::vector<float> out(kKeys * kDim);
      for (int i = 0; i < 300; ++i) {
        if (!table->Lookup(keys, absl::MakeSpan(out)).ok()) ++bad;
        for (int64_t k = 0; k < kKeys; ++k) {
          std::vector<float> row(out.begin() + k * kDim, out.begin() + (k + 1) * kDim);
          if (PushesSeen(row, init[k], kWriters * kPushesPerWriter) < 0) ++bad;
        }
        (void)table->counters();
        (void)table->MemoryBytes();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  std::vector<float> row(static_cast<size_t>(table->FloatsPerRow()));
  for (int64_t k = 0; k < kKeys; ++k) {
    ASSERT_TRUE(table->ReadRow(k, absl::MakeSpan(row), nullptr));
    EXPECT_EQ(PushesSeen(row, init[k], kWriters * kPushesPerWriter), kWriters * kPushesPerWriter) << "key " << k;
  }
  EXPECT_EQ(table->counters().lookups, kReaders * 300 * kKeys);
}

TEST(DynamicTableConcurrency, EvictionsAndExportsRaceLookupsAndPushes) {
  DynamicTableOptions o = SgdOptions();
  o.ttl_steps = 3;
  o.max_rows = 40;
  auto table = *DynamicTable::Create(o);
  std::atomic<int> bad{0};
  std::thread pusher([&] {
    for (int step = 0; step < 300; ++step) {
      std::vector<int64_t> keys = {step % 97, (step * 7) % 97, (step * 13) % 97};
      if (!table->Push(keys, std::vector<float>(keys.size() * kDim, 1.0f), step).ok()) ++bad;
    }
  });
  std::thread evicter([&] {
    for (int i = 0; i < 300; ++i) {
      table->EvictExpired(i);
      DynamicTableState st = table->ExportState();
      if (st.rows.size() != st.keys.size() * static_cast<size_t>(kDim)) ++bad;  // sgd: no slots
    }
  });
  std::thread reader([&] {
    std::vector<float> out(3 * kDim);
    for (int i = 0; i < 300; ++i) {
      if (!table->Lookup({i % 97, 5, 6}, absl::MakeSpan(out)).ok()) ++bad;
    }
  });
  pusher.join();
  evicter.join();
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_LE(table->rows(), 40);
  const DynamicTableCounters c = table->counters();
  EXPECT_EQ(c.rows, c.created - c.evicted_ttl - c.evicted_cap);
}

}  // namespace
}  // namespace pstrain
