// A ps given more than it may hold, a diverged model to save, and tensor-channel peers that announce
// more than they deliver (classes: sizes trusted before allocating, training garbage in silence,
// the ps's port).
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/local_ps_client.h"
#include "ps/ps_server.h"
#include "ps/tensor_channel_server.h"
#include "ps/tensor_channel_wire.h"
#include "tests/ps/ps_test_util.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::CreateRequest;
using testing_util::OnePush;
using testing_util::Spec;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

PsServer::Options Budget(int64_t bytes) {
  PsServer::Options o;
  o.task = "ps:3";
  o.memory_budget_bytes = bytes;
  return o;
}

TEST(PsMemoryBudgetTest, ShardsBeyondTheBudgetAreRefusedBeforeAllocating) {
  PsServer ps(Budget(1000));
  CreateShardsResponse r;
  // 100 x 2 floats: 800 bytes of values (SGD without momentum keeps no slot) fit 1000.
  ASSERT_TRUE(ps.CreateShards(CreateRequest({Spec("a", {100, 2}, 0, 100)}, UPDATE_ASYNC, 1), &r).ok());
  // Another 400 bytes would make 1200: refused, naming the ps, the bytes and the flag.
  absl::Status s = ps.CreateShards(CreateRequest({Spec("b", {50, 2}, 0, 50)}, UPDATE_ASYNC, 1), &r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("ps:3 would hold 1.2 KiB (1200 bytes)"));
  EXPECT_THAT(Message(s), HasSubstr("--memory_budget_bytes"));
  // Replacing "a" by a smaller shard frees its bytes.
  EXPECT_TRUE(ps.CreateShards(CreateRequest({Spec("a", {50, 2}, 0, 50), Spec("b", {50, 2}, 0, 50)}, UPDATE_ASYNC, 1),
                              &r)
                  .ok());
  // Many shards each small, 4 TB together (each under any per-shard cap): refused at once, nothing
  // allocated (this would exhaust the host otherwise).
  PsServer big(Budget(int64_t{8} << 30));
  std::vector<ShardSpecProto> shards;
  for (int i = 0; i < 4000; ++i) {
    shards.push_back(Spec("v", {int64_t{4000} << 18, 1024}, int64_t{i} << 18, int64_t{1} << 18, "zeros",
                          "v/part_" + std::to_string(i)));
  }
  s = big.CreateShards(CreateRequest(shards, UPDATE_ASYNC, 1), &r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("3.9 TiB"));
  // A shard spec whose full shape overflows is refused as such.
  s = big.CreateShards(CreateRequest({Spec("x", {int64_t{1} << 40, int64_t{1} << 40}, 0, 1)}, UPDATE_ASYNC, 1), &r);
  EXPECT_THAT(Message(s), HasSubstr("more than pstrain can hold"));
}

TEST(PsMemoryBudgetTest, ADivergedShardIsNeverSaved) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/ps_bad_input_save_", ::getpid());
  for (NonFinitePolicy policy : {NON_FINITE_REJECT, NON_FINITE_SKIP}) {
    std::filesystem::remove_all(dir);
    PsServer ps(PsServer::Options{"ps:0"});
    LocalPsClient client(&ps);
    CreateShardsRequest create = CreateRequest({Spec("w", {2}, 0, 2, "ones")}, UPDATE_ASYNC, 1, policy);
    *create.mutable_optimizer() = testing_util::Sgd(1e30);  // finite gradients, infinite weights
    CreateShardsResponse created;
    ASSERT_TRUE(client.CreateShards(create, &created).ok());
    PushResponse pushed;
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(client.Push(OnePush("w", {2}, {-1e10f, 1e10f}), &pushed).ok());
    }
    SaveRequest save;
    save.set_checkpoint_dir(dir);
    SaveResponse saved;
    absl::Status s = client.Save(save, &saved);
    if (policy == NON_FINITE_REJECT) {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_THAT(Message(s), HasSubstr("does not save shard w: it holds 2 non-finite values"));
      EXPECT_EQ(saved.shards_size(), 0);
    } else {
      EXPECT_TRUE(s.ok()) << s;  // the job said to go on: saved as it is
    }
  }
  std::filesystem::remove_all(dir);
}

// ---- the tensor channel's server end ----

class TensorChannelBoundsTest : public ::testing::Test {
 protected:
  void Start(int64_t message_budget) {
    ps_ = std::make_unique<PsServer>(PsServer::Options{"ps:0"});
    CreateShardsResponse r;
    ASSERT_TRUE(ps_->CreateShards(CreateRequest({Spec("w", {4}, 0, 4)}, UPDATE_ASYNC, 1), &r).ok());
    server_ = std::make_unique<TensorChannelServer>(ps_.get(), message_budget, int64_t{1} << 20);
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    client_ = fds[0];
    server_fd_ = fds[1];
    serving_ = std::thread([this] {
      server_->Serve(server_fd_);
      ::shutdown(server_fd_, SHUT_RDWR);  // as the listener closes it
      served_.Notify();
    });
  }
  void TearDown() override {
    ::shutdown(client_, SHUT_RDWR);
    if (serving_.joinable()) serving_.join();
    ::close(client_);
    ::close(server_fd_);
    for (Extra& e : extra_) {
      ::shutdown(e.client, SHUT_RDWR);
      e.serving.join();
      ::close(e.client);
      ::close(e.server);
    }
  }
  // One more connection to the same server; returns the client's end.
  int Connect() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    extra_.push_back({fds[0], fds[1], std::thread([this, fd = fds[1]] {
                        server_->Serve(fd);
                        ::shutdown(fd, SHUT_RDWR);
                      })});
    return fds[0];
  }
  // Waits (bounded) until the server has given `bytes` of room to announced payloads.
  bool PendingReaches(int64_t bytes) {
    for (int i = 0; i < 6000 && server_->pending_payload_bytes() != bytes; ++i) absl::SleepFor(absl::Milliseconds(10));
    return server_->pending_payload_bytes() == bytes;
  }
  // Sends what it can of `bytes`; false once the server closed the connection.
  bool Send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(client_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  std::string Header(uint32_t message_bytes, uint64_t payload_bytes) {
    char h[kFrameHeaderBytes];
    EncodeFrameHeader(message_bytes, payload_bytes, h);
    return std::string(h, sizeof(h));
  }

  // A push frame for shard "w" whose message announces `sizes` as its gradients' byte sizes.
  std::string PushFrame(const std::vector<int64_t>& sizes) {
    TensorCallRequest request;
    *request.mutable_push() = OnePush("w", {4}, {});
    request.mutable_push()->mutable_gradients(0)->mutable_gradient()->clear_data();
    for (int64_t s : sizes) request.add_payload_bytes(s);
    const std::string body = request.SerializeAsString();
    return Header(static_cast<uint32_t>(body.size()), 0) + body;
  }

  // A table pull of `num_ids` row ids of shard "t", announcing them as its payload.
  std::string SparsePullFrame(int64_t num_ids) {
    TensorCallRequest request;
    SparseRows* rows = request.mutable_pull()->add_sparse();
    rows->set_shard_name("t");
    rows->set_num_ids(num_ids);
    request.add_payload_bytes(num_ids * 8);
    const std::string body = request.SerializeAsString();
    return Header(static_cast<uint32_t>(body.size()), static_cast<uint64_t>(num_ids * 8)) + body;
  }

  std::unique_ptr<PsServer> ps_;
  std::unique_ptr<TensorChannelServer> server_;
  int client_ = -1, server_fd_ = -1;
  std::thread serving_;
  absl::Notification served_;
  struct Extra {
    int client, server;
    std::thread serving;
  };
  std::vector<Extra> extra_;
};

// Table pulls announce their row ids before sending them. The ids' buffers are allocated only
// once the payload bound shared by all connections has room, so peers that announce 1 MiB of ids
// each and send none hold the ps at that bound, however many connect.
TEST_F(TensorChannelBoundsTest, AnnouncedTablePullIdsWaitForRoomBeforeTheyAreAllocated) {
  Start(kMaxPendingMessageBytes);  // payload bound: 1 MiB
  constexpr int64_t kIds = (1 << 20) / 8;
  ASSERT_TRUE(Send(SparsePullFrame(kIds) + std::string(1000, '\0')));
  ASSERT_TRUE(PendingReaches(1 << 20)) << server_->pending_payload_bytes();
  std::vector<int> stalled;
  for (int i = 0; i < 8; ++i) {
    stalled.push_back(Connect());
    const std::string frame = SparsePullFrame(kIds);
    ASSERT_EQ(::send(stalled.back(), frame.data(), frame.size(), MSG_NOSIGNAL), static_cast<ssize_t>(frame.size()));
  }
  // The eight wait for room: nothing more is given (the bound holds), whatever the scheduling.
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(server_->pending_payload_bytes(), 1 << 20);
  // The first connection goes away: its room passes to one of the others, never to two at once.
  ::shutdown(client_, SHUT_RDWR);
  EXPECT_TRUE(served_.WaitForNotificationWithTimeout(absl::Seconds(60)));
  ASSERT_TRUE(PendingReaches(1 << 20));
  for (int fd : stalled) ::shutdown(fd, SHUT_RDWR);
  EXPECT_TRUE(PendingReaches(0)) << server_->pending_payload_bytes();
}

// Announced ids that disagree with the rows' count, or more than a message may hold, are refused
// before any room is taken or anything is allocated.
TEST_F(TensorChannelBoundsTest, TablePullIdSizesThatDisagreeAreRefusedUnread) {
  Start(kMaxPendingMessageBytes);
  TensorCallRequest request;
  SparseRows* rows = request.mutable_pull()->add_sparse();
  rows->set_shard_name("t");
  rows->set_num_ids(3);
  request.add_payload_bytes(int64_t{1} << 40);  // 3 ids announced as 1 TiB
  std::string body = request.SerializeAsString();
  ASSERT_TRUE(Send(Header(static_cast<uint32_t>(body.size()), uint64_t{1} << 40) + body));
  EXPECT_TRUE(served_.WaitForNotificationWithTimeout(absl::Seconds(60)));  // out of step: closed
  EXPECT_EQ(server_->pending_payload_bytes(), 0);
}

TEST_F(TensorChannelBoundsTest, MessagesBeyondTheSharedBoundCloseTheConnection) {
  Start(/*message_budget=*/1 << 20);
  // Announces 2 MiB and delivers 1.5 MiB: the connection is closed at the 1 MiB bound.
  std::thread sender([this] { Send(Header(2 << 20, 0) + std::string(3 << 19, 'x')); });
  EXPECT_TRUE(served_.WaitForNotificationWithTimeout(absl::Seconds(60)));
  sender.join();
}

TEST_F(TensorChannelBoundsTest, AnAnnouncedMessageThatNeverComesEndsWithTheConnection) {
  Start(kMaxPendingMessageBytes);
  ASSERT_TRUE(Send(Header(kMaxFrameMessageBytes, 0) + std::string(1000, 'x')));
  ::shutdown(client_, SHUT_WR);
  EXPECT_TRUE(served_.WaitForNotificationWithTimeout(absl::Seconds(60)));
}

TEST_F(TensorChannelBoundsTest, NegativePayloadSizesCloseTheConnection) {
  Start(kMaxPendingMessageBytes);
  ASSERT_TRUE(Send(PushFrame({-1, 1})));
  EXPECT_TRUE(served_.WaitForNotificationWithTimeout(absl::Seconds(60)));
}

TEST_F(TensorChannelBoundsTest, OverflowingPayloadSizesCloseTheConnection) {
  Start(kMaxPendingMessageBytes);
  ASSERT_TRUE(Send(PushFrame({INT64_MAX, INT64_MAX, 2})));
  EXPECT_TRUE(served_.WaitForNotificationWithTimeout(absl::Seconds(60)));
}

TEST(ByteBudgetTest, TakesWhatFitsAndWaitsForRoom) {
  ByteBudget budget(100);
  EXPECT_TRUE(budget.TryTake(60).ok());
  EXPECT_EQ(budget.TryTake(41).code(), absl::StatusCode::kResourceExhausted);
  absl::Notification taken;
  std::thread waiter([&] {
    budget.Take(50);  // waits until the 60 come back
    taken.Notify();
  });
  EXPECT_FALSE(taken.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  budget.Give(60);
  EXPECT_TRUE(taken.WaitForNotificationWithTimeout(absl::Seconds(60)));
  waiter.join();
  EXPECT_EQ(budget.taken(), 50);
  budget.Give(50);
  budget.Take(1000);  // larger than the bound, but alone: proceeds
  EXPECT_EQ(budget.taken(), 1000);
}

}  // namespace
}  // namespace pstrain
