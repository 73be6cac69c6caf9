// The tensor channel: its framing, the listener that shares the ps's port with gRPC, and the
// client against a real PsGrpcServer on 127.0.0.1, including the failures a worker can meet (a
// deadline, a stopped or restarted ps, a peer that breaks the protocol).
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/grpc_ps_client.h"
#include "ps/ps_grpc_server.h"
#include "ps/ps_server.h"
#include "ps/shared_port_listener.h"
#include "ps/tensor_channel_client.h"
#include "ps/tensor_channel_wire.h"
#include "tests/ps/ps_test_util.h"
#include "tests/test_util/loopback.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::ConnectLoopback;
using testing_util::OnePull;
using testing_util::OnePush;
using testing_util::Spec;
using testing_util::ToFloats;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// ---- framing ----

TEST(TensorChannelWire, FrameHeadersRoundTripAndRejectCorruption) {
  char header[kFrameHeaderBytes];
  EncodeFrameHeader(1234, uint64_t{5} << 33, header);
  uint32_t message_bytes = 0;
  uint64_t payload_bytes = 0;
  ASSERT_TRUE(DecodeFrameHeader(header, &message_bytes, &payload_bytes).ok());
  EXPECT_EQ(message_bytes, 1234u);
  EXPECT_EQ(payload_bytes, uint64_t{5} << 33);

  char corrupt[kFrameHeaderBytes];
  std::memcpy(corrupt, header, sizeof(header));
  corrupt[0] ^= 1;
  absl::Status s = DecodeFrameHeader(corrupt, &message_bytes, &payload_bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(Message(s), HasSubstr("frame magic"));

  EncodeFrameHeader(kMaxFrameMessageBytes + 1, 0, header);
  s = DecodeFrameHeader(header, &message_bytes, &payload_bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(Message(s), HasSubstr("byte message"));
}

TEST(TensorChannelWire, SplitsHostAndPort) {
  std::string host, port;
  ASSERT_TRUE(SplitHostPort("ps-0.ps:2222", &host, &port));
  EXPECT_EQ(host, "ps-0.ps");
  EXPECT_EQ(port, "2222");
  ASSERT_TRUE(SplitHostPort("[::1]:7", &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, "7");
  ASSERT_TRUE(SplitHostPort(":8", &host, &port));
  EXPECT_EQ(host, "");
  EXPECT_FALSE(SplitHostPort("no-port", &host, &port));
  EXPECT_FALSE(SplitHostPort("host:", &host, &port));
}

class SocketPair : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  void TearDown() override {
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }
  int fds_[2] = {-1, -1};
};

TEST_F(SocketPair, FramesCarryAMessageAndItsPayload) {
  PullRequest sent;
  sent.add_shard_names("w/part_0");
  sent.set_min_version(7);
  const std::string a(100000, 'a'), b = "tail";
  std::thread writer([&] {
    FrameIo io(fds_[0], absl::Now() + absl::Seconds(10), "closed");
    EXPECT_TRUE(io.WriteFrame(sent, {a, b}).ok());
  });
  FrameIo io(fds_[1], absl::Now() + absl::Seconds(10), "closed");
  PullRequest got;
  uint64_t payload_bytes = 0;
  ASSERT_TRUE(io.ReadFrameStart(&got, &payload_bytes).ok());
  EXPECT_EQ(got.shard_names(0), "w/part_0");
  EXPECT_EQ(got.min_version(), 7);
  ASSERT_EQ(payload_bytes, a.size() + b.size());
  std::string payload(payload_bytes, '\0');
  ASSERT_TRUE(io.Read(payload.data(), payload.size()).ok());
  EXPECT_EQ(payload, a + b);
  writer.join();
}

TEST_F(SocketPair, APeerThatClosesIsUnavailable) {
  ::close(fds_[0]);
  fds_[0] = -1;
  FrameIo io(fds_[1], absl::Now() + absl::Seconds(10), "the ps closed the connection");
  PullRequest got;
  uint64_t payload_bytes = 0;
  absl::Status s = io.ReadFrameStart(&got, &payload_bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Message(s), "the ps closed the connection");
  EXPECT_TRUE(io.closed_between_frames());
}

TEST_F(SocketPair, ASilentPeerHitsTheDeadline) {
  const absl::Time start = absl::Now();
  FrameIo io(fds_[1], start + absl::Milliseconds(200), "closed");
  char byte;
  absl::Status s = io.Read(&byte, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// ---- the shared port ----

class ListenerTest : public ::testing::Test {
 protected:
  void Start(absl::Duration preface_timeout = absl::Seconds(10)) {
    auto l = SharedPortListener::Bind("127.0.0.1:0");
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = std::move(*l);
    SharedPortListener::Handlers h;
    h.grpc = [this](int, int fd, std::string preface) {
      grpc_prefaces_.push_back(preface);  // one gRPC client per test: no lock needed
      grpc_seen_.Notify();
      ::close(fd);
    };
    h.tensor_channel = [this](int fd) {
      char buf[5] = {};
      FrameIo io(fd, absl::InfiniteFuture(), "closed");
      tensor_read_ = io.Read(buf, sizeof(buf));
      tensor_bytes_.assign(buf, sizeof(buf));
      tensor_done_.Notify();
    };
    listener_->Start(std::move(h), preface_timeout);
  }

  std::unique_ptr<SharedPortListener> listener_;
  std::vector<std::string> grpc_prefaces_;
  absl::Notification grpc_seen_, tensor_done_;
  absl::Status tensor_read_;
  std::string tensor_bytes_;
};

TEST_F(ListenerTest, SendsEachClientToItsProtocol) {
  Start();
  const int tensor = ConnectLoopback(listener_->port());
  const std::string hello = std::string(kTensorChannelPreface) + "hello";
  ASSERT_EQ(::send(tensor, hello.data(), hello.size(), 0), static_cast<ssize_t>(hello.size()));
  ASSERT_TRUE(tensor_done_.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(tensor_read_.ok()) << tensor_read_;
  EXPECT_EQ(tensor_bytes_, "hello");

  const int grpc = ConnectLoopback(listener_->port());
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  ASSERT_EQ(::send(grpc, preface.data(), preface.size(), 0), static_cast<ssize_t>(preface.size()));
  ASSERT_TRUE(grpc_seen_.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_EQ(grpc_prefaces_.size(), 1u);
  EXPECT_EQ(grpc_prefaces_[0], preface.substr(0, grpc_prefaces_[0].size()));  // handed over with what was read
  EXPECT_FALSE(grpc_prefaces_[0].empty());
  ::close(tensor);
  ::close(grpc);
}

TEST_F(ListenerTest, ClosesAClientThatSendsNothing) {
  Start(absl::Milliseconds(200));
  const int fd = ConnectLoopback(listener_->port());
  char byte;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0);  // closed by the listener, not left hanging
  ::close(fd);
}

TEST_F(ListenerTest, ShutdownEndsTensorConnections) {
  Start();
  const int fd = ConnectLoopback(listener_->port());
  const std::string partial = std::string(kTensorChannelPreface) + "he";  // the handler waits for 3 more
  ASSERT_EQ(::send(fd, partial.data(), partial.size(), 0), static_cast<ssize_t>(partial.size()));
  absl::SleepFor(absl::Milliseconds(100));
  listener_->Shutdown();  // returns only once the handler's thread ended
  ASSERT_TRUE(tensor_done_.HasBeenNotified());
  EXPECT_EQ(tensor_read_.code(), absl::StatusCode::kUnavailable);
  ::close(fd);
}

TEST(SharedPortListener, BindErrorsNameTheAddress) {
  auto first = SharedPortListener::Bind("127.0.0.1:0");
  ASSERT_TRUE(first.ok());
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = SharedPortListener::Bind(taken);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(second.status()), HasSubstr("cannot listen on " + taken));
  EXPECT_THAT(Message(second.status()), HasSubstr("in use"));
  EXPECT_EQ(SharedPortListener::Bind("no-port").status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- the channel through a real ps ----

constexpr int64_t kRows = 300, kCols = 256;  // 300 KiB

class ChannelTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(0); }

  void StartServer(int port) {
    ps_ = std::make_unique<PsServer>(PsServer::Options{"ps:0"});
    auto server = PsGrpcServer::Start(ps_.get(), "127.0.0.1:" + std::to_string(port));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  absl::Status Create(UpdateMode mode, int workers) {
    CreateShardsResponse resp;
    GrpcPsClient control(address_, "ps:0", absl::Seconds(10));
    return control.CreateShards(
        testing_util::CreateRequest({Spec("big", {kRows, kCols}, 0, kRows, "ones")}, mode, workers), &resp);
  }

  std::unique_ptr<PsServer> ps_;
  std::unique_ptr<PsGrpcServer> server_;
  std::string address_;
};

TEST_F(ChannelTest, ARejectedPushLeavesTheShardAndTheConnectionUsable) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  TensorChannelClient client(address_, "ps:0 at " + address_);
  PushResponse pushed;
  absl::Status s = client.Push(OnePush("big", {kRows + 1, kCols}, std::vector<float>((kRows + 1) * kCols, 1.0f)),
                               &pushed, absl::Now() + absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("ps:0 at 127.0.0.1"));
  EXPECT_THAT(Message(s), HasSubstr("shard big: gradient shape"));
  // The rejected gradient's bytes were drained: the next call on the pooled connection works.
  ASSERT_TRUE(client
                  .Push(OnePush("big", {kRows, kCols}, std::vector<float>(kRows * kCols, 0.5f)), &pushed,
                        absl::Now() + absl::Seconds(10))
                  .ok());
  EXPECT_THAT(pushed.versions(), ::testing::ElementsAre(1));
  PullResponse pulled;
  ASSERT_TRUE(client.Pull(OnePull("big"), &pulled, absl::Now() + absl::Seconds(10)).ok());
  EXPECT_EQ(ToFloats(pulled.values(0).value()), std::vector<float>(kRows * kCols, 0.5f));
}

TEST_F(ChannelTest, AWrongPayloadSizeIsRejectedNamingTheShard) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  const int fd = ConnectLoopback(server_->port());
  FrameIo io(fd, absl::Now() + absl::Seconds(10), "closed");
  ASSERT_TRUE(io.Write({{const_cast<char*>(kTensorChannelPreface.data()), kTensorChannelPreface.size()}}).ok());
  TensorCallRequest call;
  *call.mutable_push() = OnePush("big", {kRows, kCols}, {});
  call.add_payload_bytes(8);  // the shard needs kRows * kCols * 4
  ASSERT_TRUE(io.WriteFrame(call, {std::string(8, '\0')}).ok());
  TensorCallResponse answer;
  uint64_t payload_bytes = 0;
  ASSERT_TRUE(io.ReadFrameStart(&answer, &payload_bytes).ok());
  EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(answer.message(), HasSubstr("shard big: gradient of 8 bytes"));
  ::close(fd);
  PsStatsResponse stats;
  ASSERT_TRUE(ps_->GetStats(PsStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.total().version(), 0);  // nothing applied
}

// A peer's announced sizes of table rows are checked against num_ids and the shard's row size
// before anything is allocated for them; the bytes are drained and the connection stays usable.
TEST_F(ChannelTest, RowSizesThatDoNotFitTheIdCountAreRejected) {
  CreateShardsResponse created;
  GrpcPsClient control(address_, "ps:0", absl::Seconds(10));
  ASSERT_TRUE(control
                  .CreateShards(testing_util::CreateRequest({testing_util::TableShard("t", 100, 4, 0, 100, 1, "t")},
                                                            UPDATE_ASYNC, 1),
                                &created)
                  .ok());
  const int fd = ConnectLoopback(server_->port());
  FrameIo io(fd, absl::Now() + absl::Seconds(10), "closed");
  ASSERT_TRUE(io.Write({{const_cast<char*>(kTensorChannelPreface.data()), kTensorChannelPreface.size()}}).ok());
  auto answer_of = [&](const TensorCallRequest& call, const std::string& payload, uint64_t answer_bytes = 0) {
    EXPECT_TRUE(io.WriteFrame(call, {payload}).ok());
    TensorCallResponse answer;
    uint64_t payload_bytes = 0;
    EXPECT_TRUE(io.ReadFrameStart(&answer, &payload_bytes).ok());
    EXPECT_EQ(payload_bytes, answer_bytes);
    return answer;
  };
  struct Case {
    int64_t num_ids, ids_bytes, values_bytes;
  };
  // Two ids announced with the bytes of one; an id count whose products overflow; a float short.
  for (const Case& c : {Case{2, 8, 32}, Case{int64_t{1} << 60, 8, 16}, Case{1, 8, 12}}) {
    TensorCallRequest push;
    SparseRows* rows = push.mutable_push()->add_sparse();
    rows->set_shard_name("t");
    rows->set_num_ids(c.num_ids);
    push.add_payload_bytes(c.ids_bytes);
    push.add_payload_bytes(c.values_bytes);
    const TensorCallResponse answer = answer_of(push, std::string(c.ids_bytes + c.values_bytes, '\0'));
    EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kInvalidArgument)) << c.num_ids;
    EXPECT_THAT(answer.message(), HasSubstr("shard t: ")) << c.num_ids;
  }
  TensorCallRequest pull;
  SparseRows* rows = pull.mutable_pull()->add_sparse();
  rows->set_shard_name("t");
  rows->set_num_ids(3);
  pull.add_payload_bytes(16);
  const TensorCallResponse answer = answer_of(pull, std::string(16, '\0'));
  EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(answer.message(), HasSubstr("3 row ids arrived as 16 bytes"));
  // Still in step: a well-formed pull of two rows on the same connection.
  rows->set_num_ids(2);
  const TensorCallResponse good = answer_of(pull, std::string(16, '\0'), 2 * 4 * 4);
  ::close(fd);
  EXPECT_EQ(good.code(), 0) << good.message();
  PsStatsResponse stats;
  ASSERT_TRUE(ps_->GetStats(PsStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.total().version(), 0);  // nothing applied
  EXPECT_EQ(stats.total().rows_pulled(), 2);
}

TEST_F(ChannelTest, AClientThatBreaksTheProtocolIsDisconnectedAndOthersGoOn) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  const int fd = ConnectLoopback(server_->port());
  const std::string garbage = std::string(kTensorChannelPreface) + std::string(16, 'x');
  ASSERT_EQ(::send(fd, garbage.data(), garbage.size(), 0), static_cast<ssize_t>(garbage.size()));
  char byte;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0);
  ::close(fd);
  TensorChannelClient client(address_, "ps:0");
  PullResponse pulled;
  EXPECT_TRUE(client.Pull(OnePull("big"), &pulled, absl::Now() + absl::Seconds(10)).ok());
}

TEST_F(ChannelTest, APullPastItsDeadlineFailsAndTheClientRecovers) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 2).ok());
  GrpcPsClient client(address_, "ps:0", absl::Milliseconds(300));
  client.set_bulk_transport(BulkTransport::kTensorChannel);
  client.set_stream_threshold_bytes(0);
  PullResponse pulled;
  absl::Status s = client.Pull(OnePull("big", /*min_version=*/1), &pulled);  // no step completes
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(s), HasSubstr("ps:0 at 127.0.0.1"));
  ASSERT_TRUE(client.Pull(OnePull("big"), &pulled).ok());
  EXPECT_EQ(pulled.values(0).version(), 0);
}

TEST_F(ChannelTest, AParkedCallFailsWhenThePsStops) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 2).ok());
  TensorChannelClient client(address_, "ps:0");
  absl::Status s;
  std::thread waiter([&] {
    PullResponse pulled;
    s = client.Pull(OnePull("big", 1), &pulled, absl::Now() + absl::Seconds(30));
  });
  absl::SleepFor(absl::Milliseconds(200));
  server_->Shutdown(absl::Seconds(1));
  waiter.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  PullResponse pulled;
  s = client.Pull(OnePull("big"), &pulled, absl::Now() + absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(Message(s), HasSubstr("ps:0"));
}

TEST_F(ChannelTest, APsRestartedOnTheSamePortIsReachedAgain) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  TensorChannelClient client(address_, "ps:0");
  PullResponse pulled;
  ASSERT_TRUE(client.Pull(OnePull("big"), &pulled, absl::Now() + absl::Seconds(10)).ok());
  const int port = server_->port();
  server_->Shutdown(absl::Seconds(1));
  server_.reset();
  StartServer(port);
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  // The pooled connection to the old ps is found closed and replaced.
  absl::Status s = client.Pull(OnePull("big"), &pulled, absl::Now() + absl::Seconds(10));
  EXPECT_TRUE(s.ok()) << s;
}

TEST_F(ChannelTest, ConcurrentPullsAndPushesAreNeverTorn) {
  CreateShardsResponse created;
  GrpcPsClient control(address_, "ps:0", absl::Seconds(10));
  ASSERT_TRUE(
      control
          .CreateShards(testing_util::CreateRequest({Spec("z", {kRows, kCols}, 0, kRows, "zeros")}, UPDATE_ASYNC, 1),
                        &created)
          .ok());
  TensorChannelClient client(address_, "ps:0");  // shared: concurrent calls get their own connections
  constexpr int kPushers = 3, kPushes = 30;
  std::atomic<bool> torn{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kPushers; ++t) {
    threads.emplace_back([&] {
      const PushRequest push = OnePush("z", {kRows, kCols}, std::vector<float>(kRows * kCols, 1.0f));
      for (int i = 0; i < kPushes; ++i) {
        PushResponse r;
        EXPECT_TRUE(client.Push(push, &r, absl::Now() + absl::Seconds(30)).ok());
      }
    });
  }
  threads.emplace_back([&] {
    PullResponse p;  // reused, as a worker does
    for (int i = 0; i < 60; ++i) {
      ASSERT_TRUE(client.Pull(OnePull("z"), &p, absl::Now() + absl::Seconds(30)).ok());
      const std::vector<float> v = ToFloats(p.values(0).value());
      // Every element moved by the same number of updates, equal to the version read with it.
      for (float f : v) {
        if (f != v[0]) torn = true;
      }
      if (v[0] != -static_cast<float>(p.values(0).version())) torn = true;
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(torn.load());
  PullResponse p;
  ASSERT_TRUE(client.Pull(OnePull("z"), &p, absl::Now() + absl::Seconds(10)).ok());
  EXPECT_EQ(p.values(0).version(), kPushers * kPushes);
  EXPECT_EQ(ToFloats(p.values(0).value())[4321], -static_cast<float>(kPushers * kPushes));
}

TEST_F(ChannelTest, APsThatBreaksTheProtocolIsInternal) {
  // A fake ps: reads the preface and one frame header, then answers garbage.
  auto listener = SharedPortListener::Bind("127.0.0.1:0");
  ASSERT_TRUE(listener.ok());
  SharedPortListener::Handlers h;
  h.grpc = [](int, int fd, std::string) { ::close(fd); };
  h.tensor_channel = [](int fd) {
    FrameIo io(fd, absl::Now() + absl::Seconds(10), "closed");
    TensorCallRequest call;
    uint64_t payload_bytes = 0;
    if (!io.ReadFrameStart(&call, &payload_bytes).ok()) return;
    const std::string garbage(kFrameHeaderBytes, 'z');
    (void)io.Write({{const_cast<char*>(garbage.data()), garbage.size()}});
  };
  (*listener)->Start(std::move(h));
  TensorChannelClient client("127.0.0.1:" + std::to_string((*listener)->port()), "ps:9");
  PullResponse pulled;
  absl::Status s = client.Pull(OnePull("big"), &pulled, absl::Now() + absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(Message(s), HasSubstr("ps:9: tensor channel out of step"));
}

TEST(TensorChannelClient, AnIpv6WildcardPsServesBothFamilies) {
  PsServer ps(PsServer::Options{"ps:0"});
  auto server = PsGrpcServer::Start(&ps, "[::]:0");
  if (!server.ok()) GTEST_SKIP() << "no IPv6 on this machine: " << server.status();
  const std::string port = std::to_string((*server)->port());
  GrpcPsClient control("127.0.0.1:" + port, "ps:0", absl::Seconds(10));
  CreateShardsResponse created;
  ASSERT_TRUE(
      control.CreateShards(testing_util::CreateRequest({Spec("w", {4}, 0, 4, "ones")}, UPDATE_ASYNC, 1), &created)
          .ok());
  for (const std::string host : {"127.0.0.1", "[::1]"}) {
    TensorChannelClient client(host + ":" + port, "ps:0");
    PullResponse pulled;
    absl::Status s = client.Pull(OnePull("w"), &pulled, absl::Now() + absl::Seconds(10));
    ASSERT_TRUE(s.ok()) << host << ": " << s;
    EXPECT_EQ(ToFloats(pulled.values(0).value()), std::vector<float>(4, 1.0f));
  }
}

TEST(TensorChannelClient, UnreachablePsIsUnavailable) {
  const int port = testing_util::FreeLoopbackPort();
  TensorChannelClient client("127.0.0.1:" + std::to_string(port), "ps:3 at 127.0.0.1");
  PullResponse pulled;
  absl::Status s = client.Pull(OnePull("w"), &pulled, absl::Now() + absl::Seconds(5));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(s), HasSubstr("ps:3 at 127.0.0.1: cannot connect"));
}

}  // namespace
}  // namespace pstrain
