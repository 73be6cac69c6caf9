// Replication (ps_replicas 1) between two PsServers in one process: the backup stays bit for bit
// its primary (values and optimizer slots, dense and table shards, every optimizer) under
// concurrent pushes whose forwards travel in parallel; backups refuse workers and are not saved;
// promotion applies held forwards; held forwards are bounded; link errors (permanent, unreachable,
// detached) end every push.
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/platform/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/ps_server.h"
#include "tests/ps/ps_test_util.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::Rows;
using testing_util::Spec;
using testing_util::TableShard;

constexpr int64_t kVocab = 12, kDim = 3;

OptimizerProto Optimizer(const std::string& type) {
  OptimizerProto o;
  o.set_type(type);
  o.mutable_learning_rate()->set_initial(0.05);
  if (type == "sgd") {
    o.set_momentum(0.9);
    o.set_nesterov(true);
  }
  if (type == "adam" || type == "lazy_adam") {
    o.set_beta_1(0.9);
    o.set_beta_2(0.999);
  }
  if (type == "adagrad" || type == "ftrl") o.set_initial_accumulator_value(0.1);
  if (type == "rmsprop") {
    o.set_rho(0.9);
    o.set_centered(true);
  }
  if (type == "ftrl") {
    o.set_l1(0.01);
    o.set_beta(0.1);
  }
  o.set_epsilon(1e-7);
  return o;
}

// A dense shard and a table shard of ps:0, backed up on ps:1.
CreateShardsRequest Request(const std::string& optimizer) {
  ShardSpecProto w = Spec("w", {6, 5}, 0, 6, "random_uniform");
  ShardSpecProto emb = TableShard("emb", kVocab, kDim, 0, kVocab, 1, "emb");
  for (ShardSpecProto* s : {&w, &emb}) {
    s->set_ps_task(0);
    s->set_backup_ps(1);
  }
  CreateShardsRequest r = testing_util::CreateRequest({w, emb}, UPDATE_ASYNC, 4);
  *r.mutable_optimizer() = Optimizer(optimizer);
  return r;
}

PushRequest RandomPush(std::mt19937* rng) {
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<float> dense(30);
  for (float& x : dense) x = g(*rng);
  PushRequest r = testing_util::OnePush("w", {6, 5}, dense);
  // Rows with duplicates (summed by the ps) and a few untouched ones.
  std::uniform_int_distribution<int64_t> id(0, kVocab - 1);
  std::vector<int64_t> ids;
  std::vector<float> values;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(id(*rng));
    for (int d = 0; d < kDim; ++d) values.push_back(g(*rng));
  }
  *r.add_sparse() = Rows("emb", ids, values);
  return r;
}

class ReplicationTest : public ::testing::Test {
 protected:
  // `backup_defer_bytes`, `backup_hold_bytes`: the backup's Options::replica_defer_bytes and
  // replica_hold_bytes (-1: its default).
  void Start(absl::Duration retry_for = absl::Seconds(60), int64_t backup_defer_bytes = -1,
             int64_t backup_hold_bytes = -1) {
    PsServer::Options b;
    b.task = "ps:1";
    b.ps_index = 1;
    if (backup_defer_bytes >= 0) b.replica_defer_bytes = backup_defer_bytes;
    if (backup_hold_bytes >= 0) b.replica_hold_bytes = backup_hold_bytes;
    backup_ = std::make_unique<PsServer>(b);
    PsServer::Options p;
    p.task = "ps:0";
    p.ps_index = 0;
    p.replica_retry_for = retry_for;
    p.connect_ps = [this](int ps) {
      EXPECT_EQ(ps, 1);
      ReplicaPeer peer;
      peer.push = [this](const PushRequest& header, absl::Span<const absl::string_view> payload,
                         PushResponse* response) {
        sends_.fetch_add(1);
        if (on_send_) on_send_(header, payload);
        if (fault_) {
          absl::Status s = fault_();
          if (!s.ok()) return s;
        }
        if (fault_on_) {
          absl::Status s = fault_on_(header);
          if (!s.ok()) return s;
        }
        absl::Status s = LocalPsClient(backup_.get()).PushParts(header, payload, response);
        if (absl::IsUnavailable(s)) refused_.fetch_add(1);
        if (answered_) answered_(header);
        return s;
      };
      peer.install = [this](const ReplicaStateRequest& request) {
        ReplicaStateResponse response;
        return LocalPsClient(backup_.get()).InstallReplica(request, &response);
      };
      return peer;
    };
    p.log = [this](const std::string& line) {
      absl::MutexLock l(&log_mu_);
      log_.push_back(line);
    };
    primary_ = std::make_unique<PsServer>(p);
  }

  void Create(const std::string& optimizer) {
    CreateShardsRequest r = Request(optimizer);
    CreateShardsResponse out;
    ASSERT_TRUE(backup_->CreateShards(r, &out).ok());
    ASSERT_TRUE(primary_->CreateShards(r, &out).ok());
  }

  std::string Checkpoint(PsServer* ps, const std::string& name, SaveResponse* out) {
    const std::string dir = ::testing::TempDir() + "/replication_" + name;
    SaveRequest r;
    r.set_checkpoint_dir(dir);
    EXPECT_TRUE(ps->Save(r, out).ok());
    return dir;
  }

  // A forward of ps:0's update `version` straight to the backup: 30 floats of `value` for "w" and
  // an empty row update for "emb".
  absl::Status Forward(int64_t version, float value) {
    PushRequest r = testing_util::OnePush("w", {6, 5}, std::vector<float>(30, value));
    *r.add_sparse() = Rows("emb", {}, {});
    r.add_replica_versions(version);
    r.add_replica_versions(version);
    PushResponse response;
    return LocalPsClient(backup_.get()).Push(r, &response);
  }

  // A push on a thread of its own whose forwards the backup never takes (UNAVAILABLE, retried).
  struct WaitingPush {
    absl::Notification done;
    absl::Status result;
    std::thread thread;
    // Its answer, which must come within 10 s.
    absl::Status Finish() {
      EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
      thread.join();
      return result;
    }
  };
  // Starts a WaitingPush of RandomPush(seed); returns once its forward was tried, the push still
  // unanswered.
  std::unique_ptr<WaitingPush> PushToUnreachableBackup(uint32_t seed) {
    fault_ = [] { return absl::UnavailableError("connection refused"); };
    auto push = std::make_unique<WaitingPush>();
    push->thread = std::thread([this, p = push.get(), seed] {
      std::mt19937 rng(seed);
      PushResponse response;
      p->result = LocalPsClient(primary_.get()).Push(RandomPush(&rng), &response);
      p->done.Notify();
    });
    while (sends_.load() == 0) absl::SleepFor(absl::Milliseconds(1));
    EXPECT_FALSE(push->done.HasBeenNotified());  // not acknowledged while the backup lacks it
    return push;
  }

  // The backup's version: of every shard (the stats' total), or of shard `name`.
  int64_t BackupVersion(const std::string& name = "") {
    PsStatsResponse stats;
    EXPECT_TRUE(backup_->GetStats({}, &stats).ok());
    for (const ShardStats& s : stats.shards()) {
      if (s.name() == name) return s.version();
    }
    return stats.total().version();
  }

  std::vector<std::unique_ptr<PsServer>> retired_;
  std::unique_ptr<PsServer> backup_, primary_;  // the primary forwards to the backup: declared after it
  std::function<absl::Status()> fault_;          // set before pushes start
  std::function<absl::Status(const PushRequest&)> fault_on_;  // likewise, by forward
  std::function<void(const PushRequest&)> answered_;          // likewise: after the backup answered
  std::atomic<int> refused_{0};                  // forwards the backup answered UNAVAILABLE
  std::function<void(const PushRequest&, absl::Span<const absl::string_view>)> on_send_;  // likewise
  std::atomic<int> sends_{0};
  absl::Mutex log_mu_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(log_mu_);
};

class ReplicaBitsTest : public ReplicationTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(ReplicaBitsTest, BackupIsBitIdenticalToPrimaryAfterConcurrentPushes) {
  Start();
  Create(GetParam());
  constexpr int kThreads = 4, kPushes = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int i = 0; i < kPushes; ++i) {
        PushResponse response;
        if (!LocalPsClient(primary_.get()).Push(RandomPush(&rng), &response).ok()) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  // Every push was acknowledged, so the backup has every update: promote it and compare.
  PromoteRequest promote;
  promote.set_lost_ps(0);
  PromoteResponse promoted;
  ASSERT_TRUE(backup_->Promote(promote, &promoted).ok());
  EXPECT_THAT(promoted.promoted(), ::testing::UnorderedElementsAre("emb", "w"));
  SaveResponse a, b;
  Checkpoint(primary_.get(), "primary_" + GetParam(), &a);
  Checkpoint(backup_.get(), "backup_" + GetParam(), &b);
  ASSERT_EQ(a.shards_size(), 2);
  ASSERT_EQ(b.shards_size(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(a.shards(i).shard_name(), b.shards(i).shard_name());
    EXPECT_EQ(a.shards(i).version(), kThreads * kPushes);
    EXPECT_EQ(b.shards(i).version(), kThreads * kPushes);
    // The checksum covers the values and every optimizer slot.
    EXPECT_EQ(a.shards(i).checksum(), b.shards(i).checksum()) << a.shards(i).shard_name() << " " << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOptimizer, ReplicaBitsTest,
                         ::testing::Values("sgd", "adagrad", "adam", "rmsprop", "ftrl", "lazy_adam"));

TEST_F(ReplicationTest, BackupRefusesWorkersAndIsNotSaved) {
  Start();
  Create("adagrad");
  std::mt19937 rng(1);
  PushResponse response;
  absl::Status push = LocalPsClient(backup_.get()).Push(RandomPush(&rng), &response);
  EXPECT_EQ(push.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(push.message(), HasSubstr("backup of ps:0"));
  PullResponse pulled;
  absl::Status pull = LocalPsClient(backup_.get()).Pull(testing_util::OnePull("w"), &pulled);
  EXPECT_EQ(pull.code(), absl::StatusCode::kFailedPrecondition);
  SaveResponse saved;
  Checkpoint(backup_.get(), "backup_only", &saved);
  EXPECT_EQ(saved.shards_size(), 0);  // each shard is saved once, by its primary
  PsStatsResponse stats;
  ASSERT_TRUE(backup_->GetStats({}, &stats).ok());
  EXPECT_EQ(stats.total().backup_shards(), 2);
}

TEST_F(ReplicationTest, PermanentLinkErrorFailsPushesWithoutRetrying) {
  Start();
  Create("sgd");
  fault_ = [] { return absl::InvalidArgumentError("shard w does not fit"); };
  std::mt19937 rng(2);
  PushResponse response;
  absl::Status first = LocalPsClient(primary_.get()).Push(RandomPush(&rng), &response);
  EXPECT_EQ(first.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(first.message(), HasSubstr("ps:0 cannot keep its backup on ps:1"));
  EXPECT_THAT(first.message(), HasSubstr("shard w does not fit"));
  absl::Status second = LocalPsClient(primary_.get()).Push(RandomPush(&rng), &response);
  EXPECT_EQ(second.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(sends_.load(), 1);  // never sent again
  absl::MutexLock l(&log_mu_);
  ASSERT_EQ(log_.size(), 1u);  // logged once
  EXPECT_THAT(log_[0], HasSubstr("permanent"));
}

TEST_F(ReplicationTest, UnreachableBackupFailsThePushAfterRetrying) {
  Start(absl::Milliseconds(200));
  Create("sgd");
  fault_ = [] { return absl::UnavailableError("connection refused"); };
  std::mt19937 rng(3);
  PushResponse response;
  absl::Status s = LocalPsClient(primary_.get()).Push(RandomPush(&rng), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("could not reach its backup ps:1"));
  EXPECT_GT(sends_.load(), 1);
}

TEST_F(ReplicationTest, ForwardIsSentFromThePushsOwnBuffers) {
  Start();
  Create("sgd");
  std::mt19937 rng(6);
  const PushRequest push = RandomPush(&rng);
  std::vector<const char*> sent;
  PushRequest header;
  on_send_ = [&](const PushRequest& h, absl::Span<const absl::string_view> payload) {
    header = h;
    for (absl::string_view p : payload) sent.push_back(p.data());
  };
  PushResponse response;
  ASSERT_TRUE(LocalPsClient(primary_.get()).Push(push, &response).ok());
  // The header carries no bytes; the payload is the push's gradient and rows, not copies of them.
  ASSERT_EQ(header.gradients_size(), 1);
  EXPECT_TRUE(header.gradients(0).gradient().data().empty());
  EXPECT_THAT(header.replica_versions(), ::testing::ElementsAre(1, 1));
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0], push.gradients(0).gradient().data().data());
  EXPECT_EQ(sent[1], push.sparse(0).ids().data());
  EXPECT_EQ(sent[2], push.sparse(0).values().data());
  // Kept, then applied at idle priority: the backup gets there.
  for (int i = 0; i < 1000 && BackupVersion("w") < 1; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(BackupVersion("w"), 1);
}

TEST_F(ReplicationTest, ShutdownEndsAForwardRetryingAnUnreachableBackup) {
  Start();  // retries for 60 s
  Create("sgd");
  std::unique_ptr<WaitingPush> push = PushToUnreachableBackup(7);
  primary_->Shutdown();
  const absl::Status result = push->Finish();
  EXPECT_EQ(result.code(), absl::StatusCode::kUnavailable) << result;
  EXPECT_THAT(result.message(), HasSubstr("ps:0 is stopping"));
}

TEST_F(ReplicationTest, PromoteOnThePrimaryAnswersPushesWaitingForALostBackup) {
  Start();
  Create("sgd");
  std::unique_ptr<WaitingPush> push = PushToUnreachableBackup(4);
  PromoteRequest promote;
  promote.set_lost_ps(1);
  PromoteResponse out;
  ASSERT_TRUE(primary_->Promote(promote, &out).ok());
  EXPECT_THAT(out.unbacked(), ::testing::UnorderedElementsAre("emb", "w"));
  const absl::Status result = push->Finish();
  EXPECT_TRUE(result.ok()) << result;
  // Later pushes are not forwarded at all.
  const int sends = sends_.load();
  std::mt19937 rng(5);
  PushResponse response;
  EXPECT_TRUE(LocalPsClient(primary_.get()).Push(RandomPush(&rng), &response).ok());
  EXPECT_EQ(sends_.load(), sends);
}

TEST_F(ReplicationTest, PromotionAppliesHeldForwardsInVersionOrder) {
  Start(absl::Seconds(60), /*backup_defer_bytes=*/0);  // each forward applied before it is answered
  Create("sgd");
  // Forwards for versions 2 and 3 arrive before version 1's: both are held.
  ASSERT_TRUE(Forward(2, 1.f).ok());
  ASSERT_TRUE(Forward(3, 2.f).ok());
  EXPECT_EQ(BackupVersion(), 0);
  // A forward already applied (a retry) is dropped: version 1 applies once.
  ASSERT_TRUE(Forward(1, 0.5f).ok());
  ASSERT_TRUE(Forward(1, 0.5f).ok());
  EXPECT_EQ(BackupVersion(), 3);
  // Version 5 arrives, 4 never does (the primary died before forwarding it: never acknowledged).
  ASSERT_TRUE(Forward(5, 4.f).ok());
  PromoteRequest promote;
  promote.set_lost_ps(0);
  PromoteResponse out;
  ASSERT_TRUE(backup_->Promote(promote, &out).ok());
  EXPECT_EQ(BackupVersion(), 5);
  // Now a primary: workers may push it.
  std::mt19937 rng(6);
  PushResponse response;
  EXPECT_TRUE(LocalPsClient(backup_.get()).Push(RandomPush(&rng), &response).ok());
}

TEST_F(ReplicationTest, KeptForwardsAreAnsweredAtOnceAndAppliedInOrderAfterwards) {
  Start();  // the default: a backup keeps forwards and applies them on its idle-priority thread
  Create("sgd");
  ASSERT_TRUE(Forward(2, 1.f).ok());
  ASSERT_TRUE(Forward(3, 2.f).ok());
  ASSERT_TRUE(Forward(1, 0.5f).ok());
  ASSERT_TRUE(Forward(1, 0.5f).ok());  // a retry of a kept update: still applied once
  // Applied when the CPUs have time: a bounded wait, not a fixed sleep.
  for (int i = 0; i < 3000 && BackupVersion() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(BackupVersion(), 3);
  // The same updates, each applied before it is answered, on a second pair: bit for bit equal.
  SaveResponse kept;
  PromoteRequest promote;
  promote.set_lost_ps(0);
  PromoteResponse out;
  ASSERT_TRUE(backup_->Promote(promote, &out).ok());
  Checkpoint(backup_.get(), "kept_forwards", &kept);
  retired_.push_back(std::move(primary_));
  retired_.push_back(std::move(backup_));
  Start(absl::Seconds(60), /*backup_defer_bytes=*/0);
  Create("sgd");
  for (auto [version, value] : {std::pair<int64_t, float>{1, 0.5f}, {2, 1.f}, {3, 2.f}}) {
    ASSERT_TRUE(Forward(version, value).ok());
  }
  ASSERT_TRUE(backup_->Promote(promote, &out).ok());
  SaveResponse applied;
  Checkpoint(backup_.get(), "applied_forwards", &applied);
  ASSERT_EQ(kept.shards_size(), applied.shards_size());
  for (int i = 0; i < kept.shards_size(); ++i) {
    EXPECT_EQ(kept.shards(i).version(), 3);
    EXPECT_EQ(kept.shards(i).checksum(), applied.shards(i).checksum()) << kept.shards(i).shard_name();
  }
}

TEST_F(ReplicationTest, ForwardWithNonFiniteValuesIsRefused) {
  Start();
  CreateShardsRequest r = Request("sgd");
  r.set_non_finite(NON_FINITE_SKIP);  // workers' non-finite pushes are skipped, but a forward's are corrupt
  CreateShardsResponse out;
  ASSERT_TRUE(backup_->CreateShards(r, &out).ok());
  std::vector<float> bad(30, 1.f);
  bad[7] = std::numeric_limits<float>::quiet_NaN();
  PushRequest forward = testing_util::OnePush("w", {6, 5}, bad);
  forward.add_replica_versions(1);
  PushResponse response;
  absl::Status s = LocalPsClient(backup_.get()).Push(forward, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("non-finite values for w"));
  EXPECT_EQ(BackupVersion("w"), 0);
}

TEST_F(ReplicationTest, PromotionAppliesKeptForwardsBeforeItAnswers) {
  Start();
  Create("sgd");
  for (int64_t v = 1; v <= 20; ++v) ASSERT_TRUE(Forward(v, 0.1f * static_cast<float>(v)).ok());
  PromoteRequest promote;
  promote.set_lost_ps(0);
  PromoteResponse out;
  ASSERT_TRUE(backup_->Promote(promote, &out).ok());
  EXPECT_EQ(BackupVersion(), 20);  // every answered forward is in, whether or not its turn had come
}

TEST_F(ReplicationTest, ForwardsPastTheKeptBytesAreAppliedBeforeTheyAreAnswered) {
  // Room for one kept update of "w" (30 floats); "emb"'s empty row updates take none.
  Start(absl::Seconds(60), /*backup_defer_bytes=*/30 * sizeof(float));
  Create("sgd");
  ASSERT_TRUE(Forward(2, 1.f).ok());    // kept (its turn has not come)
  ASSERT_TRUE(Forward(3, 2.f).ok());    // past the room: held, as its turn has not come either
  ASSERT_TRUE(Forward(1, 0.5f).ok());   // past the room: applied now, and 2 and 3 after it
  EXPECT_EQ(BackupVersion("w"), 3);
}

// A peer sending versions far ahead (or a primary whose earlier forwards are slow) cannot make the
// backup hold without bound: past replica_hold_bytes a forward is refused UNAVAILABLE, which a
// primary retries, and taken once the earlier ones have landed.
TEST_F(ReplicationTest, HeldForwardsAreBoundedAndThoseRefusedAreTakenWhenRetried) {
  // Room for two held updates of "w" (30 floats each); "emb"'s empty row updates take none.
  Start(absl::Seconds(60), /*backup_defer_bytes=*/0, /*backup_hold_bytes=*/2 * 30 * sizeof(float));
  Create("sgd");
  ASSERT_TRUE(Forward(2, 1.f).ok());
  ASSERT_TRUE(Forward(3, 2.f).ok());
  for (int64_t far : {4, 1000000}) {
    absl::Status s = Forward(far, 3.f);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("the backup of shard w holds 2 updates (240 bytes) waiting for "
                                                    "version 1"));
  }
  ASSERT_TRUE(Forward(3, 2.f).ok());  // a retry of a held version replaces it: no more room taken
  EXPECT_EQ(BackupVersion("w"), 0);
  ASSERT_TRUE(Forward(1, 0.5f).ok());  // lands, and the held 2 and 3 after it
  EXPECT_EQ(BackupVersion("w"), 3);
  ASSERT_TRUE(Forward(4, 3.f).ok());  // the refused one, retried
  EXPECT_EQ(BackupVersion("w"), 4);
  // Promotion applies what was held and nothing that was refused: version 1000000 never came.
  PromoteRequest promote;
  promote.set_lost_ps(0);
  PromoteResponse out;
  ASSERT_TRUE(backup_->Promote(promote, &out).ok());
  EXPECT_EQ(BackupVersion("w"), 4);
}

// Through a real primary: a forward the backup refuses for want of room is retried by the link,
// and every push is answered once its forward is taken.
TEST_F(ReplicationTest, PrimaryRetriesAForwardTheBackupHadNoRoomFor) {
  // Room for one held update per shard.
  Start(absl::Seconds(60), /*backup_defer_bytes=*/0, /*backup_hold_bytes=*/30 * sizeof(float));
  Create("sgd");
  // Version 1's forward is lost until the backup has answered versions 2 and 3 once each:
  // whichever of them came first was held, the other refused, and both land after 1.
  absl::Mutex mu;
  std::set<int64_t> forwards_answered;
  answered_ = [&](const PushRequest& header) {
    absl::MutexLock l(&mu);
    if (header.replica_versions(0) != 1) forwards_answered.insert(header.replica_versions(0));
  };
  fault_on_ = [&](const PushRequest& header) {
    absl::MutexLock l(&mu);
    if (header.replica_versions(0) != 1 || forwards_answered.size() >= 2) return absl::OkStatus();
    return absl::UnavailableError("connection reset");
  };
  std::vector<std::thread> pushes;
  std::atomic<int> pushes_answered{0};
  for (uint32_t seed : {21u, 22u, 23u}) {
    pushes.emplace_back([this, seed, &pushes_answered] {
      std::mt19937 rng(seed);
      PushResponse response;
      absl::Status s = LocalPsClient(primary_.get()).Push(RandomPush(&rng), &response);
      EXPECT_TRUE(s.ok()) << s;
      pushes_answered.fetch_add(1);
    });
  }
  for (std::thread& t : pushes) t.join();
  EXPECT_EQ(pushes_answered.load(), 3);
  EXPECT_GE(refused_.load(), 1);  // the forward that found no room, answered UNAVAILABLE and retried
  EXPECT_EQ(BackupVersion("w"), 3);
  EXPECT_EQ(BackupVersion("emb"), 3);
}

// ps:1 was lost (the primary stopped forwarding), came back empty, and is attached again while
// pushes go on: afterwards it is bit for bit the primary again.
TEST_F(ReplicationTest, ReturnedBackupIsAttachedAgainWhilePushesGoOn) {
  Start();
  Create("adam");
  PromoteRequest promote;
  promote.set_lost_ps(1);
  PromoteResponse out;
  ASSERT_TRUE(primary_->Promote(promote, &out).ok());
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    PushResponse response;
    ASSERT_TRUE(LocalPsClient(primary_.get()).Push(RandomPush(&rng), &response).ok());
  }
  // The returned process: a fresh ps:1 holding empty backups.
  {
    PsServer::Options b;
    b.task = "ps:1";
    b.ps_index = 1;
    auto fresh = std::make_unique<PsServer>(b);
    CreateShardsRequest r = Request("adam");
    r.set_initialize(false);
    CreateShardsResponse created;
    ASSERT_TRUE(fresh->CreateShards(r, &created).ok());
    backup_.swap(fresh);
    // `fresh` (the old ps:1) is no longer reached: the link to it was detached and retired.
    retired_.push_back(std::move(fresh));
  }
  std::atomic<bool> stop{false};
  std::atomic<int> pushed{0};  // by the thread below, every one acknowledged
  std::thread pusher([&] {
    std::mt19937 rng2(8);
    while (!stop.load()) {
      PushResponse response;
      EXPECT_TRUE(LocalPsClient(primary_.get()).Push(RandomPush(&rng2), &response).ok());
      pushed.fetch_add(1);
    }
  });
  // Pushes must be going on while the backup is attached, however the threads are scheduled.
  auto wait_for_pushes = [&](int at_least) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (pushed.load() < at_least && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    ASSERT_GE(pushed.load(), at_least) << "the pushing thread made no progress in 30 s";
  };
  wait_for_pushes(1);
  AttachBackupRequest attach;
  attach.set_backup_ps(1);
  attach.add_shard_names("w");
  attach.add_shard_names("emb");
  AttachBackupResponse attached;
  absl::Status s = primary_->AttachBackup(attach, &attached);
  for (int i = 0; i < 20; ++i) {
    PushResponse response;
    ASSERT_TRUE(LocalPsClient(primary_.get()).Push(RandomPush(&rng), &response).ok());
  }
  wait_for_pushes(pushed.load() + 1);
  stop.store(true);
  pusher.join();
  ASSERT_TRUE(s.ok()) << s;
  PsStatsResponse stats;
  ASSERT_TRUE(backup_->GetStats({}, &stats).ok());
  EXPECT_EQ(stats.total().backup_shards(), 2);
  promote.set_lost_ps(0);
  ASSERT_TRUE(backup_->Promote(promote, &out).ok());
  SaveResponse a, b;
  Checkpoint(primary_.get(), "attach_primary", &a);
  Checkpoint(backup_.get(), "attach_backup", &b);
  ASSERT_EQ(a.shards_size(), 2);
  ASSERT_EQ(b.shards_size(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(a.shards(i).version(), b.shards(i).version());
    EXPECT_EQ(a.shards(i).version(), 40 + pushed.load());  // every acknowledged push
    EXPECT_EQ(a.shards(i).checksum(), b.shards(i).checksum()) << a.shards(i).shard_name();
  }
}

TEST_F(ReplicationTest, ShardOfAnotherPsOrWithoutConnectorIsRefused) {
  PsServer::Options o;
  o.task = "ps:2";
  o.ps_index = 2;
  PsServer other(o);
  CreateShardsResponse out;
  absl::Status s = other.CreateShards(Request("sgd"), &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("neither"));
  o.task = "ps:0";
  o.ps_index = 0;
  PsServer no_connector(o);
  s = no_connector.CreateShards(Request("sgd"), &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("cannot reach other ps tasks"));
}

}  // namespace
}  // namespace pstrain
