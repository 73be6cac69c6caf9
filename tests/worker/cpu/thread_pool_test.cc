// ThreadPool::RunChunks: the chunks cover every item once, contiguously and in order, one per
// thread at most, and never more chunks than items.
#include "worker/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "gtest/gtest.h"

namespace pstrain {
namespace {

TEST(ThreadPoolTest, RunChunksCoversEveryItemOnceInContiguousChunks) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 2, 3, 7, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::vector<int64_t> begins(3, -1), counts(3, -1);
    const int chunks = pool.RunChunks(n, [&](int t, int64_t begin, int64_t count) {
      begins[t] = begin;
      counts[t] = count;
      for (int64_t i = begin; i < begin + count; ++i) hits[i].fetch_add(1);
    });
    EXPECT_EQ(chunks, n < 3 ? std::max<int64_t>(n, 1) : 3) << n;
    int64_t next = 0;
    for (int t = 0; t < chunks; ++t) {
      EXPECT_EQ(begins[t], next) << "n " << n << " chunk " << t;
      EXPECT_EQ(counts[t], n * (t + 1) / chunks - n * t / chunks) << "n " << n << " chunk " << t;
      next += counts[t];
    }
    EXPECT_EQ(next, n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n " << n << " item " << i;
  }
}

}  // namespace
}  // namespace pstrain
