// DataPositions (the chief's per-part batch positions) and the closure queue's hand-out rules that
// keep a closure's data across a re-run.
#include "chief/checkpoint/data_positions.h"

#include <filesystem>
#include <optional>
#include <thread>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

Closure Train(int64_t id, int32_t steps, int target = -1) {
  Closure c;
  c.id = id;
  c.num_steps = steps;
  c.target_worker = target;
  return c;
}

TEST(DataPositionsTest, HandsOutEachPartsBatchesOnceInOrder) {
  DataPositions d(2);
  Closure a = Train(1, 5), b = Train(2, 3), c = Train(3, 5);
  d.Assign(0, &a);
  d.Assign(1, &b);
  d.Assign(0, &c);
  EXPECT_EQ(a.data_part, 0);
  EXPECT_EQ(a.data_position, 0);
  EXPECT_EQ(b.data_part, 1);
  EXPECT_EQ(b.data_position, 0);
  EXPECT_EQ(c.data_part, 0);
  EXPECT_EQ(c.data_position, 5);
  EXPECT_EQ(d.Snapshot(), (std::vector<int64_t>{10, 3}));
}

TEST(DataPositionsTest, ARerunKeepsItsPartAndPositionOnAnyWorker) {
  DataPositions d(2);
  Closure a = Train(1, 5);
  d.Assign(1, &a);  // handed to worker 1, which fails
  Closure again = a;
  d.Assign(0, &again);  // re-run on worker 0: same examples, nothing advances
  EXPECT_EQ(again.data_part, 1);
  EXPECT_EQ(again.data_position, 0);
  EXPECT_EQ(d.Snapshot(), (std::vector<int64_t>{0, 5}));
}

TEST(DataPositionsTest, SyncRoundClosureKeepsItsChosenPart) {
  DataPositions d(3);
  Closure c = Train(1, 4, /*target=*/2);
  c.data_part = 2;
  d.Assign(0, &c);  // e.g. an orphan run by worker 0's rescue thread
  EXPECT_EQ(c.data_part, 2);
  EXPECT_EQ(d.Snapshot(), (std::vector<int64_t>{0, 0, 4}));
}

TEST(DataPositionsTest, EvaluationClosuresGetNoData) {
  DataPositions d(1);
  Closure e;
  e.kind = Closure::Kind::kEvaluate;
  d.Assign(0, &e);
  EXPECT_EQ(e.data_position, -1);
  EXPECT_EQ(d.Snapshot(), (std::vector<int64_t>{0}));
}

TEST(DataPositionsTest, SavedJsonLoadsBackAndOlderCheckpointsHaveNone) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/data_positions_test_", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Env* env = Env::Default();
  auto none = DataPositions::Load(env, dir, 2);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(env->WriteFileAtomic(dir + "/" + kDataPositionsFile, DataPositions::ToJson(7, {9, 5})).ok());
  auto loaded = DataPositions::Load(env, dir, 2);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ(**loaded, (std::vector<int64_t>{9, 5}));
  auto other_count = DataPositions::Load(env, dir, 3);
  EXPECT_EQ(other_count.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other_count.status().message().find("holds 2 data parts; this job has 3 workers"), std::string::npos);
  EXPECT_EQ(DataPositions::FromStep(12, 2), (std::vector<int64_t>{12, 12}));
  std::filesystem::remove_all(dir);
}

TEST(ClosureQueueDataTest, LostTargetsClosuresBecomeOrphansForRescueThreadsOnly) {
  ClosureQueue q;
  q.Push(Train(1, 5, 0));
  q.Push(Train(2, 5, 1));
  q.SetTargetLost(1, true);
  q.Push(Train(3, 5, 1));  // a later round, still lost
  // Worker 0's own dispatch never takes worker 1's parts (they would wait on its own push).
  auto own = q.Take(0, absl::ZeroDuration(), ClosureQueue::TakeMode::kOwn);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->id, 1);
  EXPECT_FALSE(q.Take(0, absl::ZeroDuration(), ClosureQueue::TakeMode::kOwn).has_value());
  auto rescued = q.Take(0, absl::ZeroDuration(), ClosureQueue::TakeMode::kOrphans);
  ASSERT_TRUE(rescued.has_value());
  EXPECT_EQ(rescued->id, 2);
  EXPECT_TRUE(rescued->orphan);
  auto later = q.Take(0, absl::ZeroDuration(), ClosureQueue::TakeMode::kOrphans);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->id, 3);
  q.SetTargetLost(1, false);
  q.Push(Train(4, 5, 1));  // back: its own dispatch takes its next round
  EXPECT_FALSE(q.Take(0, absl::ZeroDuration(), ClosureQueue::TakeMode::kOrphans).has_value());
  auto back = q.Take(1, absl::ZeroDuration(), ClosureQueue::TakeMode::kOwn);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->id, 4);
}

TEST(ClosureQueueDataTest, ALostWorkersWaitingDispatcherIsNotHandedTheOrphansOfItsLoss) {
  ClosureQueue q;
  q.Push(Train(1, 5, 1));
  q.Push(Train(2, 5, 1));
  // Worker 1's rescue thread waits for orphans when worker 1 is lost (a SIGSTOP): the orphans
  // that loss makes must not wake it, or a round would go back to the stopped worker while a
  // live one waits on the ps for it.
  std::optional<Closure> by_lost;
  std::thread rescue_of_lost(
      [&] { by_lost = q.Take(1, absl::Milliseconds(300), ClosureQueue::TakeMode::kOrphans); });
  q.SetTargetLost(1, true);
  rescue_of_lost.join();
  EXPECT_FALSE(by_lost.has_value());
  EXPECT_FALSE(q.Take(1, absl::ZeroDuration(), ClosureQueue::TakeMode::kOwn).has_value());
  auto first = q.Take(0, absl::ZeroDuration(), ClosureQueue::TakeMode::kOrphans);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->id, 1);
  auto second = q.Take(0, absl::ZeroDuration(), ClosureQueue::TakeMode::kOrphans);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->id, 2);
}

TEST(ClosureQueueDataTest, DropWaitingKeepsClosuresWhoseBatchesWereHandedOut) {
  ClosureQueue q;
  Closure handed = Train(1, 5);
  handed.data_part = 0;
  handed.data_position = 10;
  q.Push(handed);
  q.Push(Train(2, 5));
  auto taken = q.Take(0, absl::ZeroDuration());
  ASSERT_TRUE(taken.has_value());
  q.Requeue(*taken);  // its worker failed: the batches 10..14 of part 0 must still be trained
  q.DropWaiting();
  EXPECT_EQ(q.pending(), 1);
  EXPECT_EQ(q.Take(1, absl::ZeroDuration())->data_position, 10);
}

}  // namespace
}  // namespace pstrain
