#include "chief/coordinator/closure_queue.h"

#include <thread>

#include "gtest/gtest.h"

namespace pstrain {
namespace {

Closure Train(int64_t id, int target = -1) {
  Closure c;
  c.id = id;
  c.num_steps = 5;
  c.target_worker = target;
  return c;
}

TEST(ClosureQueueTest, HandsOutInOrderAndFinishesOnce) {
  ClosureQueue q;
  q.Push(Train(1));
  q.Push(Train(2));
  auto a = q.Take(0, absl::ZeroDuration());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->id, 1);
  EXPECT_TRUE(q.Finish(*a));
  EXPECT_FALSE(q.Finish(*a));  // a duplicate execution does not count
  EXPECT_EQ(q.unfinished(), 1);
  auto b = q.Take(1, absl::ZeroDuration());
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(q.Finish(*b));
  EXPECT_TRUE(q.WaitAllFinished(absl::Now()).ok());
}

TEST(ClosureQueueTest, RequeuedClosureGoesFirstToAnotherWorker) {
  ClosureQueue q;
  q.Push(Train(1));
  q.Push(Train(2));
  auto a = q.Take(0, absl::ZeroDuration());
  q.Requeue(*a);
  auto again = q.Take(1, absl::ZeroDuration());
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->id, 1);
}

TEST(ClosureQueueTest, RequeueAfterFinishIsDropped) {
  ClosureQueue q;
  q.Push(Train(1));
  auto a = q.Take(0, absl::ZeroDuration());
  ASSERT_TRUE(q.Finish(*a));
  q.Requeue(*a);
  EXPECT_EQ(q.pending(), 0);
}

TEST(ClosureQueueTest, TargetedClosuresOnlyGoToTheirWorker) {
  ClosureQueue q;
  q.Push(Train(1, /*target=*/1));
  EXPECT_FALSE(q.Take(0, absl::Milliseconds(1)).has_value());
  auto c = q.Take(1, absl::ZeroDuration());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->id, 1);
}

TEST(ClosureQueueTest, FailWakesWaitersAndIsReported) {
  ClosureQueue q;
  q.Push(Train(1));
  std::thread t([&q] { q.Fail(absl::InvalidArgumentError("shape mismatch on dense/kernel")); });
  absl::Status s = q.WaitAllFinished(absl::Now() + absl::Seconds(30));
  t.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(q.Take(0, absl::ZeroDuration()).has_value());
}

TEST(ClosureQueueTest, WaitTimesOutWithUnfinishedClosures) {
  ClosureQueue q;
  q.Push(Train(1));
  EXPECT_EQ(q.WaitAllFinished(absl::Now() + absl::Milliseconds(5)).code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(ClosureQueueTest, DropWaitingForgetsUntakenClosures) {
  ClosureQueue q;
  q.Push(Train(1));
  q.Push(Train(2));
  auto a = q.Take(0, absl::ZeroDuration());
  q.DropWaiting();
  EXPECT_EQ(q.pending(), 0);
  EXPECT_EQ(q.unfinished(), 1);
  EXPECT_TRUE(q.Finish(*a));
  EXPECT_TRUE(q.WaitAllFinished(absl::Now()).ok());
}

}  // namespace
}  // namespace pstrain
