#include "ps/store/ps_server.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/wire/protocol_version.h"
#include "common/wire/sync_push_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "tests/ps/ps_test_util.h"
#include "tests/test_util/fake_clock_env.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::Floats;
using testing_util::OnePull;
using testing_util::OnePush;
using testing_util::Spec;
using testing_util::ToFloats;

// Options of a ps whose timers run on `clock`.
PsServer::Options OnClock(Env* clock) {
  PsServer::Options o;
  o.task = "ps:0";
  o.env = clock;
  return o;
}

class PsServerTest : public ::testing::Test {
 protected:
  PsServerTest() : server_(OnClock(&clock_)), client_(&server_) {}

  // Moves the fake clock a second at a time (pausing a little in real time, so parked calls can
  // arm their timers first) until `done` holds; false when it never did.
  bool AdvanceUntil(const std::function<bool()>& done) {
    for (int i = 0; i < 600 && !done(); ++i) {
      absl::SleepFor(absl::Milliseconds(20));
      clock_.Advance(absl::Seconds(1));
    }
    return done();
  }

  testing_util::FakeClockEnv clock_;

  // One shard "w" of shape [2,3], starting at ones, plain SGD with lr 1.
  absl::Status Create(UpdateMode mode, int workers = 1, int64_t timeout_ms = 5000,
                      NonFinitePolicy policy = NON_FINITE_REJECT) {
    CreateShardsRequest r;
    r.set_protocol_version(kProtocolVersion);
    *r.add_shards() = Spec("w", {2, 3}, 0, 2, "ones");
    *r.mutable_optimizer() = testing_util::Sgd(1.0);
    r.set_mode(mode);
    r.set_num_workers(workers);
    r.set_sync_timeout_ms(timeout_ms);
    r.set_non_finite(policy);
    r.set_initialize(true);
    CreateShardsResponse resp;
    return client_.CreateShards(r, &resp);
  }

  std::vector<float> Value(int64_t* version = nullptr) {
    PullResponse r;
    EXPECT_TRUE(client_.Pull(OnePull("w"), &r).ok());
    if (version != nullptr) *version = r.values(0).version();
    return ToFloats(r.values(0).value());
  }

  absl::Status Push(const std::vector<float>& g, int worker = 0, int64_t step = 0, PushResponse* out = nullptr) {
    PushResponse r;
    absl::Status s = client_.Push(OnePush("w", {2, 3}, g, worker, step), &r);
    if (out != nullptr) *out = r;
    return s;
  }

  PsServer server_;
  LocalPsClient client_;
};

const std::vector<float> kOnes(6, 1.0f);

TEST_F(PsServerTest, HandshakeChecksTheProtocolVersion) {
  HandshakeRequest r;
  r.set_protocol_version(kProtocolVersion);
  HandshakeResponse resp;
  ASSERT_TRUE(client_.Handshake(r, &resp).ok());
  EXPECT_EQ(resp.task(), "ps:0");
  r.set_protocol_version(kProtocolVersion + 1);
  EXPECT_EQ(client_.Handshake(r, &resp).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(PsServerTest, AsyncAppliesEachPushAtOnce) {
  ASSERT_TRUE(Create(UPDATE_ASYNC).ok());
  int64_t version = -1;
  EXPECT_EQ(Value(&version), kOnes);
  EXPECT_EQ(version, 0);
  PushResponse resp;
  ASSERT_TRUE(Push({1, 2, 3, 4, 5, 6}, 0, 0, &resp).ok());
  EXPECT_EQ(resp.versions(0), 1);
  ASSERT_TRUE(Push({1, 1, 1, 1, 1, 1}, 1, 0).ok());  // async: any worker, any step
  EXPECT_EQ(Value(&version), (std::vector<float>{-1, -2, -3, -4, -5, -6}));
  EXPECT_EQ(version, 2);
}

TEST_F(PsServerTest, SyncAppliesTheSumOnceAndAnswersEveryWorker) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 3).ok());
  std::vector<absl::Status> results(3);
  std::vector<PushResponse> responses(3);
  std::vector<std::thread> workers;
  for (int w = 0; w < 3; ++w) {
    workers.emplace_back([&, w] { results[w] = Push(std::vector<float>(6, 0.5f * (w + 1)), w, 0, &responses[w]); });
  }
  for (auto& t : workers) t.join();
  for (int w = 0; w < 3; ++w) {
    EXPECT_TRUE(results[w].ok()) << results[w];
    EXPECT_EQ(responses[w].versions(0), 1);
  }
  int64_t version;
  EXPECT_EQ(Value(&version), std::vector<float>(6, 1.0f - 3.0f));  // 1 - (0.5 + 1 + 1.5)
  EXPECT_EQ(version, 1);
}

TEST_F(PsServerTest, SyncPushWaitsWithoutBlockingTheCaller) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 2).ok());
  std::atomic<bool> finished{false};
  PushRequest r0 = OnePush("w", {2, 3}, kOnes, 0, 0);
  PushResponse resp0;
  absl::Status status0;
  server_.Push(&r0, &resp0, [&](absl::Status s) {
    status0 = s;
    finished = true;
  });
  // The call returned with the push parked: nothing applied yet, no answer yet.
  EXPECT_FALSE(finished.load());
  EXPECT_EQ(Value(), kOnes);
  ASSERT_TRUE(Push(kOnes, 1, 0).ok());
  EXPECT_TRUE(finished.load());  // answered by the push that completed the step
  EXPECT_TRUE(status0.ok());
  EXPECT_EQ(Value(), std::vector<float>(6, -1.0f));
}

TEST_F(PsServerTest, DuplicateAndStalePushesAreRejectedNeverAppliedTwice) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 2, 5000).ok());
  PushRequest r0 = OnePush("w", {2, 3}, kOnes, 0, 0);
  PushResponse resp0;
  absl::Notification first_done;
  server_.Push(&r0, &resp0, [&](absl::Status s) {
    EXPECT_TRUE(s.ok()) << s;
    first_done.Notify();
  });
  absl::Status dup = Push(kOnes, 0, 0);
  EXPECT_EQ(dup.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(dup.message()), HasSubstr("shard w"));
  EXPECT_THAT(std::string(dup.message()), HasSubstr("duplicate push from part 0 for step 0"));
  // A re-run of a lost worker's data part: the worker sees "already counted" and goes on.
  EXPECT_TRUE(IsAlreadyCountedSyncPush(dup));
  ASSERT_TRUE(Push(kOnes, 1, 0).ok());
  first_done.WaitForNotification();
  EXPECT_EQ(Value(), std::vector<float>(6, -1.0f));  // 1 - (1 + 1): applied once
  absl::Status stale = Push(kOnes, 1, 0);
  EXPECT_EQ(stale.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(stale.message()), HasSubstr("stale push from part 1 for step 0"));
  EXPECT_THAT(std::string(stale.message()), HasSubstr("version 1"));
  EXPECT_TRUE(IsAlreadyCountedSyncPush(stale));
  EXPECT_EQ(Value(), std::vector<float>(6, -1.0f));  // neither the duplicate nor the stale push applied
  absl::Status ahead = Push(kOnes, 1, 5);
  EXPECT_EQ(ahead.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(IsAlreadyCountedSyncPush(ahead));  // a real error: never taken as done
  absl::Status bad_worker = Push(kOnes, 2, 1);
  EXPECT_EQ(bad_worker.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Value(), std::vector<float>(6, -1.0f));
  PsStatsResponse stats;
  ASSERT_TRUE(client_.GetStats(PsStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.shards(0).rejected_pushes(), 4);
  EXPECT_EQ(stats.total().rejected_pushes(), 4);
}

TEST_F(PsServerTest, SyncTimeoutNamesTheMissingWorkers) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 4, 60000).ok());
  std::vector<absl::Status> results(2);
  std::atomic<int> finished{0};
  std::thread a([&] {
    results[0] = Push(kOnes, 0, 0);
    ++finished;
  });
  std::thread b([&] {
    results[1] = Push(kOnes, 2, 0);
    ++finished;
  });
  // Both pushes at the ps (counted just before they park).
  auto pushes = [this] {
    PsStatsResponse stats;
    return client_.GetStats(PsStatsRequest(), &stats).ok() ? stats.total().pushes() : 0;
  };
  for (int i = 0; i < 3000 && pushes() < 2; ++i) absl::SleepFor(absl::Milliseconds(1));
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(finished.load(), 0);  // the fake clock has not moved: nothing timed out
  // Control: the same look after the same wait sees the timeouts once the clock passes them.
  clock_.Advance(absl::Seconds(61));
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(finished.load(), 2);
  a.join();
  b.join();
  for (const absl::Status& s : results) {
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_THAT(std::string(s.message()), HasSubstr("shard w is missing workers [1, 3] (2 of 4 pushed)"));
  }
  EXPECT_EQ(Value(), kOnes);
}

TEST_F(PsServerTest, PullWithMinVersionWaitsForTheStep) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 1, 5000).ok());
  PullRequest pull = OnePull("w", 1);
  PullResponse pulled;
  std::atomic<bool> finished{false};
  server_.Pull(&pull, &pulled, [&](absl::Status s) {
    EXPECT_TRUE(s.ok()) << s;
    finished = true;
  });
  EXPECT_FALSE(finished.load());
  ASSERT_TRUE(Push(kOnes, 0, 0).ok());
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(pulled.values(0).version(), 1);
  EXPECT_EQ(ToFloats(pulled.values(0).value()), std::vector<float>(6, 0.0f));
}

TEST_F(PsServerTest, PullWithMinVersionTimesOut) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 2, 60000).ok());
  PullResponse pulled;
  absl::Status s;
  std::atomic<bool> finished{false};
  std::thread puller([&] {
    s = client_.Pull(OnePull("w", 1), &pulled);
    finished = true;
  });
  EXPECT_TRUE(AdvanceUntil([&] { return finished.load(); }));
  puller.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(s.message()), HasSubstr("shard w is at version 0"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("missing workers [0, 1]"));
}

TEST_F(PsServerTest, ConcurrentPushesAreNeverTorn) {
  CreateShardsRequest r;
  r.set_protocol_version(kProtocolVersion);
  *r.add_shards() = Spec("w", {1000, 16}, 0, 1000, "zeros");
  *r.mutable_optimizer() = testing_util::Sgd(1.0);
  CreateShardsResponse resp;
  ASSERT_TRUE(client_.CreateShards(r, &resp).ok());
  constexpr int kThreads = 4, kPushes = 50;
  std::atomic<bool> torn{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPushes; ++i) {
        PushResponse r;
        EXPECT_TRUE(client_.Push(OnePush("w", {1000, 16}, std::vector<float>(16000, 1.0f)), &r).ok());
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 100; ++i) {
      PullResponse p;
      ASSERT_TRUE(client_.Pull(OnePull("w"), &p).ok());
      std::vector<float> v = ToFloats(p.values(0).value());
      // Every element moved by the same number of updates, equal to the version read with it.
      for (float f : v) {
        if (f != v[0]) torn = true;
      }
      if (v[0] != -static_cast<float>(p.values(0).version())) torn = true;
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_FALSE(torn.load());
  PullResponse p;
  ASSERT_TRUE(client_.Pull(OnePull("w"), &p).ok());
  EXPECT_EQ(p.values(0).version(), kThreads * kPushes);
  EXPECT_EQ(ToFloats(p.values(0).value())[123], -static_cast<float>(kThreads * kPushes));
}

// PullSnapshots hands out the shard's own buffer: it must never change while a pull holds it.
std::vector<PulledTensor> Snapshots(PsServer* server, const std::string& shard) {
  std::vector<PulledTensor> out;
  PullRequest r = OnePull(shard);
  server->PullSnapshots(&r, [&](absl::Status s, std::vector<PulledTensor> t) {
    EXPECT_TRUE(s.ok()) << s;
    out = std::move(t);
  });
  return out;
}

std::vector<float> SnapshotFloats(const PulledTensor& t) {
  return {t.values->data<float>(), t.values->data<float>() + t.values->num_elements()};
}

TEST_F(PsServerTest, PulledSnapshotsNeverChangeUnderLaterPushes) {
  ASSERT_TRUE(Create(UPDATE_ASYNC).ok());
  std::vector<PulledTensor> held = Snapshots(&server_, "w");
  ASSERT_EQ(held.size(), 1u);
  ASSERT_TRUE(Push({1, 1, 1, 1, 1, 1}).ok());  // applied to a copy: `held` is still being sent
  ASSERT_TRUE(Push({1, 1, 1, 1, 1, 1}).ok());
  EXPECT_EQ(SnapshotFloats(held[0]), kOnes);
  EXPECT_EQ(held[0].version, 0);
  std::vector<PulledTensor> now = Snapshots(&server_, "w");
  EXPECT_EQ(SnapshotFloats(now[0]), std::vector<float>(6, -1.0f));
  EXPECT_EQ(now[0].version, 2);
  held.clear();
  now.clear();
  ASSERT_TRUE(Push({1, 1, 1, 1, 1, 1}).ok());  // nothing holds the values: updated in place
  EXPECT_EQ(Value(), std::vector<float>(6, -2.0f));
}

TEST_F(PsServerTest, SnapshotsHeldAcrossConcurrentPushesStayConsistent) {
  CreateShardsRequest r;
  r.set_protocol_version(kProtocolVersion);
  *r.add_shards() = Spec("w", {1000, 16}, 0, 1000, "zeros");
  *r.mutable_optimizer() = testing_util::Sgd(1.0);
  CreateShardsResponse resp;
  ASSERT_TRUE(client_.CreateShards(r, &resp).ok());
  std::atomic<bool> done{false}, changed{false};
  std::thread pusher([&] {
    for (int i = 0; i < 200; ++i) {
      PushResponse p;
      EXPECT_TRUE(client_.Push(OnePush("w", {1000, 16}, std::vector<float>(16000, 1.0f)), &p).ok());
    }
    done = true;
  });
  while (!done) {
    std::vector<PulledTensor> t = Snapshots(&server_, "w");
    const std::vector<float> first = SnapshotFloats(t[0]);
    if (first[0] != -static_cast<float>(t[0].version)) changed = true;
    std::this_thread::yield();  // pushes land while the snapshot is held
    if (SnapshotFloats(t[0]) != first) changed = true;
  }
  pusher.join();
  EXPECT_FALSE(changed.load());
  EXPECT_EQ(Value()[77], -200.0f);
}

TEST_F(PsServerTest, BadInputNamesTheShardAndLeavesItUnchanged) {
  ASSERT_TRUE(Create(UPDATE_ASYNC).ok());
  PushResponse resp;
  absl::Status s = client_.Push(OnePush("nope", {2, 3}, kOnes), &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("shard nope is not held by ps:0"));

  s = client_.Push(OnePush("w", {3, 2}, kOnes), &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("shard w: gradient shape [3,2] does not match"));

  PushRequest wrong_size = OnePush("w", {2, 3}, std::vector<float>(5, 1.0f));
  s = client_.Push(wrong_size, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("needs 24 bytes but 20 arrived"));

  PushRequest wrong_dtype = OnePush("w", {2, 3}, kOnes);
  wrong_dtype.mutable_gradients(0)->mutable_gradient()->set_dtype(DT_DOUBLE);
  s = client_.Push(wrong_dtype, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("dtype DT_DOUBLE"));

  std::vector<float> nan = kOnes;
  nan[2] = std::numeric_limits<float>::quiet_NaN();
  nan[4] = std::numeric_limits<float>::infinity();
  s = client_.Push(OnePush("w", {2, 3}, nan), &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("shard w: gradient from worker 0 has 2 non-finite values"));

  // A request with one good and one bad gradient changes nothing.
  PushRequest mixed = OnePush("w", {2, 3}, kOnes);
  *mixed.add_gradients() = OnePush("nope", {1}, {1.0f}).gradients(0);
  EXPECT_EQ(client_.Push(mixed, &resp).code(), absl::StatusCode::kNotFound);

  int64_t version;
  EXPECT_EQ(Value(&version), kOnes);
  EXPECT_EQ(version, 0);
  PullResponse pulled;
  EXPECT_EQ(client_.Pull(OnePull("nope"), &pulled).code(), absl::StatusCode::kNotFound);
}

TEST_F(PsServerTest, NonFiniteSkipCountsAndSucceeds) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1, 1000, NON_FINITE_SKIP).ok());
  std::vector<float> nan = kOnes;
  nan[0] = std::numeric_limits<float>::quiet_NaN();
  PushResponse resp;
  ASSERT_TRUE(Push(nan, 0, 0, &resp).ok());
  EXPECT_EQ(resp.skipped_non_finite(), 1);
  EXPECT_EQ(Value(), kOnes);
  PsStatsResponse stats;
  ASSERT_TRUE(client_.GetStats(PsStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.total().skipped_non_finite(), 1);
}

TEST_F(PsServerTest, CreateShardsRejectsBadSpecsAllOrNothing) {
  CreateShardsRequest r;
  r.set_protocol_version(kProtocolVersion);
  *r.add_shards() = Spec("a", {4}, 0, 4);
  *r.add_shards() = Spec("b", {4}, 2, 3);  // rows beyond the variable
  *r.mutable_optimizer() = testing_util::Sgd(0.1);
  CreateShardsResponse resp;
  absl::Status s = client_.CreateShards(r, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("shard b"));
  PullResponse pulled;
  EXPECT_EQ(client_.Pull(OnePull("a"), &pulled).code(), absl::StatusCode::kNotFound);
  r.set_protocol_version(0);
  EXPECT_EQ(client_.CreateShards(r, &resp).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(PsServerTest, StatsCountPullsPushesAndBytes) {
  ASSERT_TRUE(Create(UPDATE_ASYNC).ok());
  ASSERT_TRUE(Push(kOnes).ok());
  Value();
  Value();
  PsStatsResponse stats;
  ASSERT_TRUE(client_.GetStats(PsStatsRequest(), &stats).ok());
  ASSERT_EQ(stats.shards_size(), 1);
  EXPECT_EQ(stats.shards(0).name(), "w");
  EXPECT_EQ(stats.shards(0).pushes(), 1);
  EXPECT_EQ(stats.shards(0).pulls(), 2);
  EXPECT_EQ(stats.shards(0).bytes_in(), 24);
  EXPECT_EQ(stats.shards(0).bytes_out(), 48);
  EXPECT_EQ(stats.shards(0).version(), 1);
  EXPECT_EQ(stats.total().pushes(), 1);
}

TEST_F(PsServerTest, ShutdownFailsParkedCalls) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 2, 60000).ok());
  PushRequest r0 = OnePush("w", {2, 3}, kOnes, 0, 0);
  PushResponse resp0;
  absl::Notification done;
  absl::Status status;
  server_.Push(&r0, &resp0, [&](absl::Status s) {
    status = s;
    done.Notify();
  });
  server_.Shutdown();
  done.WaitForNotification();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace pstrain
