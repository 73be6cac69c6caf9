// The tensor channel: its framing, the listener that shares the ps's port with gRPC, and the
// client against a real PsGrpcServer on 127.0.0.1, including the failures a worker can meet (a
// deadline, a stopped or restarted ps, a peer that breaks the protocol or speaks another version).
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/config/cluster_spec.h"
#include "common/wire/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/grpc_ps_client.h"
#include "ps/server/ps_grpc_server.h"
#include "ps/store/ps_server.h"
#include "ps/transport/shared_port_listener.h"
#include "ps/transport/tensor_channel_client.h"
#include "ps/transport/tensor_channel_wire.h"
#include "tests/ps/ps_test_util.h"
#include "tests/ps/transport/raw_channel.h"
#include "tests/test_util/fake_clock_env.h"
#include "tests/test_util/loopback.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::ConnectLoopback;
using testing_util::OnePull;
using testing_util::OnePush;
using testing_util::RawChannel;
using testing_util::Spec;
using testing_util::ToFloats;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TransportConfig Plain(const std::string& caller = "worker:0") {
  TransportConfig c;
  c.caller = caller;
  return c;
}

// ---- framing ----

TEST(TensorChannelWire, FrameHeadersRoundTripAndRejectCorruptionAndOversizes) {
  char header[kFrameHeaderBytes];
  EncodeFrameHeader({1234, uint64_t{5} << 28}, header);
  absl::StatusOr<FrameHeader> h = DecodeFrameHeader(header);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->message_bytes, 1234u);
  EXPECT_EQ(h->payload_bytes, uint64_t{5} << 28);

  header[0] ^= 1;
  EXPECT_EQ(DecodeFrameHeader(header).status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(Message(DecodeFrameHeader(header).status()), HasSubstr("frame magic"));

  EncodeFrameHeader({kMaxFrameMessageBytes + 1, 0}, header);
  EXPECT_THAT(Message(DecodeFrameHeader(header).status()), HasSubstr("byte message"));
  // A payload no pull or push may carry (it would be skipped or allocated otherwise).
  EncodeFrameHeader({10, kMaxFramePayloadBytes + 1}, header);
  EXPECT_THAT(Message(DecodeFrameHeader(header).status()), HasSubstr("payload bytes"));
  EncodeFrameHeader({10, ~uint64_t{0}}, header);
  EXPECT_EQ(DecodeFrameHeader(header).status().code(), absl::StatusCode::kInternal);
}

TEST(TensorChannelWire, PrefacesTellTheChannelFromGrpcAndOldClients) {
  EXPECT_EQ(ClassifyPreface(kPrefacePlain), PrefaceKind::kPlain);
  EXPECT_EQ(ClassifyPreface(kPrefaceTls), PrefaceKind::kTls);
  EXPECT_EQ(ClassifyPreface(kLegacyPreface), PrefaceKind::kLegacy);
  EXPECT_EQ(ClassifyPreface("PSTR"), PrefaceKind::kIncomplete);
  EXPECT_EQ(ClassifyPreface(""), PrefaceKind::kIncomplete);
  EXPECT_EQ(ClassifyPreface("PRI * HT"), PrefaceKind::kOther);
  EXPECT_EQ(ClassifyPreface(std::string("\x16\x03\x01\x02\x00\x01\x00\x01", 8)), PrefaceKind::kOther);
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

// ---- the shared port ----

class ListenerTest : public ::testing::Test {
 protected:
  void Start(absl::Duration preface_timeout = absl::Seconds(10)) {
    TensorChannelServer::Options channel;
    channel.env = &clock_;
    channel.log = [](const std::string&) {};
    channel_ = *TensorChannelServer::Create(&ps_, channel);
    auto l = SharedPortListener::Bind("127.0.0.1:0");
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = std::move(*l);
    SharedPortListener::Options options;
    options.preface_timeout = preface_timeout;
    options.env = &clock_;
    listener_->Start(
        channel_.get(),
        [this](int, int fd, std::string first_bytes) {
          grpc_first_bytes_ = first_bytes;  // one gRPC client per test: no lock needed
          grpc_seen_.Notify();
          ::close(fd);
        },
        options);
  }
  // Waits (a bounded while) until the listener holds `n` connections.
  bool WaitForConnections(int n) {
    for (int i = 0; i < 3000 && listener_->connections() != n; ++i) absl::SleepFor(absl::Milliseconds(10));
    return listener_->connections() == n;
  }

  testing_util::FakeClockEnv clock_;
  PsServer ps_{PsServer::Options{"ps:0"}};
  std::unique_ptr<TensorChannelServer> channel_;
  std::unique_ptr<SharedPortListener> listener_;
  std::string grpc_first_bytes_;
  absl::Notification grpc_seen_;
};

TEST_F(ListenerTest, SendsEachClientToItsProtocol) {
  Start();
  RawChannel channel(listener_->port());
  TensorCallResponse answer;
  ASSERT_TRUE(channel.Open(&answer));
  EXPECT_EQ(answer.code(), 0) << answer.message();
  EXPECT_EQ(answer.hello().task(), "ps:0");
  EXPECT_EQ(answer.hello().protocol_version(), kProtocolVersion);

  RawChannel grpc(listener_->port());
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  ASSERT_TRUE(grpc.Send(preface));
  ASSERT_TRUE(grpc_seen_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(grpc_first_bytes_, preface.substr(0, kPrefaceBytes));  // handed over with what was read
}

TEST_F(ListenerTest, ASilentClientIsClosedAtThePrefaceDeadlineOfTheEnvClock) {
  Start(absl::Seconds(10));
  RawChannel silent(listener_->port());
  ASSERT_TRUE(WaitForConnections(1));
  clock_.Advance(absl::Seconds(9));  // not yet
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(listener_->connections(), 1);
  // Control: the same look after the same wait sees the close once the deadline has passed.
  clock_.Advance(absl::Seconds(2));
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(listener_->connections(), 0);
  EXPECT_TRUE(silent.ClosedByPeer());
}

TEST_F(ListenerTest, AHelloMustComeWithinThePrefaceDeadlineToo) {
  Start(absl::Seconds(10));
  RawChannel slow(listener_->port());
  ASSERT_TRUE(slow.Send(std::string(kPrefacePlain)));
  EXPECT_EQ(slow.Receive(kPrefaceBytes), kPrefacePlain);
  clock_.Advance(absl::Seconds(11));  // the hello never comes
  EXPECT_TRUE(slow.ClosedByPeer());
}

TEST_F(ListenerTest, ShutdownEndsChannelConnections) {
  Start();
  RawChannel channel(listener_->port());
  ASSERT_TRUE(channel.Open());
  listener_->Shutdown();
  EXPECT_TRUE(channel.ClosedByPeer());
  EXPECT_EQ(listener_->connections(), 0);
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

// ---- versions ----

class ChannelTest : public ::testing::Test {
 protected:
  static constexpr int64_t kRows = 300, kCols = 256;  // 300 KiB

  void SetUp() override { StartServer(0); }

  void StartServer(int port) {
    ps_ = std::make_unique<PsServer>(PsServer::Options{"ps:0"});
    PsGrpcServer::Options options;
    options.log = [this](const std::string& line) {
      absl::MutexLock l(&log_mu_);
      log_ += line + "\n";
    };
    auto server = PsGrpcServer::Start(ps_.get(), "127.0.0.1:" + std::to_string(port), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  absl::Status Create(UpdateMode mode, int workers) {
    CreateShardsResponse resp;
    GrpcPsClient control(address_, "ps:0", absl::Seconds(10), Plain("chief:0"));
    return control.CreateShards(
        testing_util::CreateRequest({Spec("big", {kRows, kCols}, 0, kRows, "ones")}, mode, workers), &resp);
  }
  std::string Log() {
    absl::MutexLock l(&log_mu_);
    return log_;
  }

  std::unique_ptr<PsServer> ps_;
  std::unique_ptr<PsGrpcServer> server_;
  std::string address_;
  absl::Mutex log_mu_;
  std::string log_ ABSL_GUARDED_BY(log_mu_);
};

TEST_F(ChannelTest, AnotherProtocolVersionIsAFailedPreconditionNamingBoth) {
  RawChannel old(server_->port());
  TensorCallResponse answer;
  ASSERT_TRUE(old.Open(&answer, "worker:4", kProtocolVersion - 1));
  EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(answer.message(), HasSubstr("worker:4"));
  EXPECT_THAT(answer.message(), HasSubstr(absl::StrCat("version ", kProtocolVersion - 1)));
  EXPECT_THAT(answer.message(), HasSubstr(absl::StrCat("speaks ", kProtocolVersion)));
  EXPECT_TRUE(old.ClosedByPeer());
}

TEST_F(ChannelTest, AProtocolVersion2ClientReadsARefusalItUnderstands) {
  RawChannel old(server_->port());
  ASSERT_TRUE(old.Send(std::string(kLegacyPreface)));
  TensorCallResponse answer;
  ASSERT_TRUE(old.ReadFrame(&answer));  // version 2's frames have this header and message
  EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(answer.message(), HasSubstr("version 2"));
  EXPECT_THAT(answer.message(), HasSubstr(absl::StrCat("speaks ", kProtocolVersion)));
}

TEST_F(ChannelTest, ACallBeforeTheHelloIsRefused) {
  RawChannel raw(server_->port());
  ASSERT_TRUE(raw.Send(std::string(kPrefacePlain)));
  ASSERT_EQ(raw.Receive(kPrefaceBytes), kPrefacePlain);
  TensorCallRequest pull;
  pull.mutable_pull()->add_shard_names("big");
  ASSERT_TRUE(raw.SendFrame(pull));
  TensorCallResponse answer;
  ASSERT_TRUE(raw.ReadFrame(&answer));
  EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(answer.message(), HasSubstr("first call must be the hello"));
  EXPECT_TRUE(raw.ClosedByPeer());
}

// A fake ps that echoes the preface, then answers the hello with `version`.
TEST(TensorChannelClient, APsOfAnotherVersionIsAFailedPreconditionNotARetry) {
  int port = 0;
  const int listener = testing_util::ListenLoopback(&port);
  ASSERT_GE(listener, 0);
  std::thread fake([listener] {
    const int fd = ::accept(listener, nullptr, nullptr);
    char preface[kPrefaceBytes];
    if (::recv(fd, preface, sizeof(preface), MSG_WAITALL) == sizeof(preface)) {
      ::send(fd, preface, sizeof(preface), MSG_NOSIGNAL);
      char header[kFrameHeaderBytes];
      ::recv(fd, header, sizeof(header), MSG_WAITALL);
      std::string body(DecodeFrameHeader(header)->message_bytes, '\0');
      ::recv(fd, body.data(), body.size(), MSG_WAITALL);
      TensorCallResponse answer;
      answer.mutable_hello()->set_protocol_version(kProtocolVersion + 1);
      const std::string frame = FrameHead(answer, 0);
      ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
    }
    ::close(fd);
  });
  TensorChannelClient client("127.0.0.1:" + std::to_string(port), "ps:9", Plain());
  PullResponse pulled;
  absl::Status s = client.Pull(OnePull("w"), &pulled, absl::Seconds(30));
  fake.join();
  ::close(listener);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Message(s), HasSubstr(absl::StrCat("version ", kProtocolVersion + 1)));
  EXPECT_THAT(Message(s), HasSubstr(absl::StrCat("speaks ", kProtocolVersion)));
  EXPECT_THAT(Message(s), HasSubstr("ps:9"));
}

// ---- calls through a real ps ----

TEST_F(ChannelTest, ARejectedPushLeavesTheShardAndTheConnectionUsable) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  TensorChannelClient client(address_, "ps:0 at " + address_, Plain());
  PushResponse pushed;
  absl::Status s = client.Push(OnePush("big", {kRows + 1, kCols}, std::vector<float>((kRows + 1) * kCols, 1.0f)),
                               &pushed, absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("ps:0 at 127.0.0.1"));
  EXPECT_THAT(Message(s), HasSubstr("shard big: gradient shape"));
  // The rejected gradient's bytes were skipped: the next call on the pooled connection works.
  ASSERT_TRUE(
      client.Push(OnePush("big", {kRows, kCols}, std::vector<float>(kRows * kCols, 0.5f)), &pushed, absl::Seconds(10))
          .ok());
  EXPECT_THAT(pushed.versions(), ::testing::ElementsAre(1));
  PullResponse pulled;
  ASSERT_TRUE(client.Pull(OnePull("big"), &pulled, absl::Seconds(10)).ok());
  EXPECT_EQ(ToFloats(pulled.values(0).value()), std::vector<float>(kRows * kCols, 0.5f));
}

TEST_F(ChannelTest, AWrongPayloadSizeIsRejectedNamingTheShard) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  RawChannel raw(server_->port());
  ASSERT_TRUE(raw.Open());
  TensorCallRequest call;
  *call.mutable_push() = OnePush("big", {kRows, kCols}, {});
  call.add_payload_bytes(8);  // the shard needs kRows * kCols * 4
  ASSERT_TRUE(raw.SendFrame(call, std::string(8, '\0')));
  TensorCallResponse answer;
  ASSERT_TRUE(raw.ReadFrame(&answer));
  EXPECT_EQ(answer.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(answer.message(), HasSubstr("shard big: gradient of 8 bytes"));
  PsStatsResponse stats;
  ASSERT_TRUE(ps_->GetStats(PsStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.total().version(), 0);  // nothing applied
}

// A peer's announced sizes of table rows are checked against num_ids and the shard's row size
// before anything is allocated for them; the bytes are skipped and the connection stays usable.
TEST_F(ChannelTest, RowSizesThatDoNotFitTheIdCountAreRejected) {
  CreateShardsResponse created;
  GrpcPsClient control(address_, "ps:0", absl::Seconds(10), Plain("chief:0"));
  ASSERT_TRUE(control
                  .CreateShards(testing_util::CreateRequest({testing_util::TableShard("t", 100, 4, 0, 100, 1, "t")},
                                                            UPDATE_ASYNC, 1),
                                &created)
                  .ok());
  RawChannel raw(server_->port());
  ASSERT_TRUE(raw.Open());
  auto answer_of = [&](const TensorCallRequest& call, const std::string& payload, size_t answer_bytes = 0) {
    EXPECT_TRUE(raw.SendFrame(call, payload));
    TensorCallResponse answer;
    std::string bytes;
    EXPECT_TRUE(raw.ReadFrame(&answer, &bytes));
    EXPECT_EQ(bytes.size(), answer_bytes);
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
  for (int64_t num_ids : {int64_t{-2}, int64_t{1} << 61, INT64_MIN}) {  // negative, or 8 * num_ids overflows
    rows->set_num_ids(num_ids);
    const TensorCallResponse refused = answer_of(pull, std::string(16, '\0'));
    EXPECT_EQ(refused.code(), static_cast<int>(absl::StatusCode::kInvalidArgument)) << num_ids;
    EXPECT_THAT(refused.message(), HasSubstr(absl::StrCat(num_ids, " row ids arrived as 16 bytes")));
  }
  // Still in step: a well-formed pull of two rows on the same connection.
  rows->set_num_ids(2);
  const TensorCallResponse good = answer_of(pull, std::string(16, '\0'), 2 * 4 * 4);
  EXPECT_EQ(good.code(), 0) << good.message();
  PsStatsResponse stats;
  ASSERT_TRUE(ps_->GetStats(PsStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.total().version(), 0);  // nothing applied
  EXPECT_EQ(stats.total().rows_pulled(), 2);
}

TEST_F(ChannelTest, NegativeOrOverflowingSizesCloseTheConnectionAndAreLogged) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{-1, 1}, {INT64_MAX, INT64_MAX, 2}}) {
    RawChannel raw(server_->port());
    ASSERT_TRUE(raw.Open());
    TensorCallRequest call;
    *call.mutable_push() = OnePush("big", {kRows, kCols}, {});
    for (int64_t s : sizes) call.add_payload_bytes(s);
    ASSERT_TRUE(raw.SendFrame(call));
    EXPECT_TRUE(raw.ClosedByPeer());
  }
  EXPECT_THAT(Log(), HasSubstr("push payload size out of range"));
}

// The ps's end: a frame whose header claims a negative (as int64) or oversized payload, and a
// table pull whose id sizes are negative or add up past any message, close the connection before
// anything is allocated or skipped, with a log line; other clients go on.
TEST_F(ChannelTest, FramesClaimingNegativeOrOverflowingPayloadsCloseTheConnectionAndAreLogged) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  for (uint64_t claimed : {~uint64_t{7}, kMaxFramePayloadBytes + 1}) {
    RawChannel raw(server_->port());
    ASSERT_TRUE(raw.Open());
    TensorCallRequest pull;
    pull.mutable_pull()->add_shard_names("big");
    std::string frame = FrameHead(pull, 0);
    EncodeFrameHeader({static_cast<uint32_t>(frame.size() - kFrameHeaderBytes), claimed}, frame.data());
    // The header alone: the ps reads no further, so its close is a clean one (no unread bytes, no reset).
    ASSERT_TRUE(raw.Send(frame.substr(0, kFrameHeaderBytes)));
    EXPECT_TRUE(raw.ClosedByPeer()) << claimed;
    EXPECT_THAT(Log(), HasSubstr(absl::StrCat("announces ", claimed, " payload bytes")));
  }
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{-8}, {INT64_MAX, INT64_MAX, 2}}) {
    RawChannel raw(server_->port());
    ASSERT_TRUE(raw.Open());
    TensorCallRequest pull;
    for (size_t i = 0; i < sizes.size(); ++i) {
      SparseRows* rows = pull.mutable_pull()->add_sparse();
      rows->set_shard_name("big");
      rows->set_num_ids(1);
      pull.add_payload_bytes(sizes[i]);
    }
    ASSERT_TRUE(raw.SendFrame(pull));
    EXPECT_TRUE(raw.ClosedByPeer());
  }
  EXPECT_THAT(Log(), HasSubstr("pull payload size out of range"));
  TensorChannelClient client(address_, "ps:0", Plain());
  PullResponse pulled;
  EXPECT_TRUE(client.Pull(OnePull("big"), &pulled, absl::Seconds(10)).ok());
}

TEST_F(ChannelTest, AClientThatBreaksTheProtocolIsDisconnectedAndOthersGoOn) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  RawChannel raw(server_->port());
  ASSERT_TRUE(raw.Open());
  ASSERT_TRUE(raw.Send(std::string(16, 'x')));
  EXPECT_TRUE(raw.ClosedByPeer());
  TensorChannelClient client(address_, "ps:0", Plain());
  PullResponse pulled;
  EXPECT_TRUE(client.Pull(OnePull("big"), &pulled, absl::Seconds(10)).ok());
}

TEST_F(ChannelTest, APullPastItsDeadlineFailsAndTheClientRecovers) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 2).ok());
  GrpcPsClient client(address_, "ps:0", absl::Milliseconds(300), Plain());
  PullResponse pulled;
  absl::Status s = client.Pull(OnePull("big", /*min_version=*/1), &pulled);  // no step completes
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(s), HasSubstr("ps:0 at 127.0.0.1"));
  ASSERT_TRUE(client.Pull(OnePull("big"), &pulled).ok());
  EXPECT_EQ(pulled.values(0).version(), 0);
}

TEST_F(ChannelTest, AParkedCallFailsWhenThePsStops) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 2).ok());
  TensorChannelClient client(address_, "ps:0", Plain());
  absl::Status s;
  absl::Notification started;
  std::thread waiter([&] {
    PullResponse pulled;
    started.Notify();
    s = client.Pull(OnePull("big", 1), &pulled, absl::Seconds(30));
  });
  started.WaitForNotification();
  // Stops the ps once the pull is parked on it (or, should the pull come later, before it).
  for (int i = 0; i < 300 && server_->listener().connections() == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  server_->Shutdown(absl::Seconds(1));
  waiter.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  PullResponse pulled;
  s = client.Pull(OnePull("big"), &pulled, absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(Message(s), HasSubstr("ps:0"));
}

TEST_F(ChannelTest, APsRestartedOnTheSamePortIsReachedAgain) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  TensorChannelClient client(address_, "ps:0", Plain());
  PullResponse pulled;
  ASSERT_TRUE(client.Pull(OnePull("big"), &pulled, absl::Seconds(10)).ok());
  const int port = server_->port();
  server_->Shutdown(absl::Seconds(1));
  server_.reset();
  StartServer(port);
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  // The pooled connection to the old ps is found closed and replaced.
  absl::Status s = client.Pull(OnePull("big"), &pulled, absl::Seconds(10));
  EXPECT_TRUE(s.ok()) << s;
}

TEST_F(ChannelTest, ConcurrentPullsAndPushesAreNeverTorn) {
  CreateShardsResponse created;
  GrpcPsClient control(address_, "ps:0", absl::Seconds(10), Plain("chief:0"));
  ASSERT_TRUE(
      control
          .CreateShards(testing_util::CreateRequest({Spec("z", {kRows, kCols}, 0, kRows, "zeros")}, UPDATE_ASYNC, 1),
                        &created)
          .ok());
  TensorChannelClient client(address_, "ps:0", Plain());  // shared: concurrent calls get their own connections
  constexpr int kPushers = 3, kPushes = 30;
  std::atomic<bool> torn{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kPushers; ++t) {
    threads.emplace_back([&] {
      const PushRequest push = OnePush("z", {kRows, kCols}, std::vector<float>(kRows * kCols, 1.0f));
      for (int i = 0; i < kPushes; ++i) {
        PushResponse r;
        EXPECT_TRUE(client.Push(push, &r, absl::Seconds(30)).ok());
      }
    });
  }
  threads.emplace_back([&] {
    PullResponse p;  // reused, as a worker does
    for (int i = 0; i < 60; ++i) {
      ASSERT_TRUE(client.Pull(OnePull("z"), &p, absl::Seconds(30)).ok());
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
  ASSERT_TRUE(client.Pull(OnePull("z"), &p, absl::Seconds(10)).ok());
  EXPECT_EQ(p.values(0).version(), kPushers * kPushes);
  EXPECT_EQ(ToFloats(p.values(0).value())[4321], -static_cast<float>(kPushers * kPushes));
}

// A fake ps on a new loopback listener: it takes one connection, echoes the preface, answers the
// hello, then answers the next call with `answer` (raw bytes: a frame, or what claims to be one)
// and waits until the client closes. Join `thread` and close `listener` at the end.
struct FakePs {
  explicit FakePs(std::string answer) {
    listener = testing_util::ListenLoopback(&port);
    if (listener < 0) return;
    thread = std::thread([this, answer = std::move(answer)] {
      const int fd = ::accept(listener, nullptr, nullptr);
      auto read_frame = [fd] {
        char header[kFrameHeaderBytes];
        ::recv(fd, header, sizeof(header), MSG_WAITALL);
        absl::StatusOr<FrameHeader> h = DecodeFrameHeader(header);
        std::string rest(h.ok() ? h->message_bytes + h->payload_bytes : 0, '\0');
        ::recv(fd, rest.data(), rest.size(), MSG_WAITALL);
      };
      char preface[kPrefaceBytes];
      ::recv(fd, preface, sizeof(preface), MSG_WAITALL);
      ::send(fd, preface, sizeof(preface), MSG_NOSIGNAL);
      read_frame();
      TensorCallResponse hello;
      hello.mutable_hello()->set_protocol_version(kProtocolVersion);
      const std::string out = FrameHead(hello, 0);
      ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      read_frame();
      ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
      char byte;
      ::recv(fd, &byte, 1, 0);  // until the client closes
      ::close(fd);
    });
  }
  ~FakePs() {
    if (thread.joinable()) thread.join();
    if (listener >= 0) ::close(listener);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }

  int port = 0;
  int listener = -1;
  std::thread thread;
};

// A ps that answers a pull with sizes that do not fit what was asked: INTERNAL, no allocation.
TEST(TensorChannelClient, APsThatAnnouncesWrongSizesIsInternal) {
  for (int64_t announced : {int64_t{-8}, int64_t{1} << 40, int64_t{12}}) {
    TensorCallResponse pulled;  // a 4-float shard announced as `announced` bytes
    ShardValue* v = pulled.mutable_pull()->add_values();
    v->set_name("w");
    v->mutable_value()->add_shape(4);
    pulled.add_payload_bytes(announced);
    FakePs fake(FrameHead(pulled, 16));
    ASSERT_GE(fake.listener, 0);
    TensorChannelClient client(fake.address(), "ps:9", Plain());
    PullResponse got;
    absl::Status s = client.Pull(OnePull("w"), &got, absl::Seconds(30));
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << announced;
    EXPECT_THAT(Message(s), HasSubstr("ps:9: tensor channel protocol violation")) << announced;
    EXPECT_EQ(got.values_size(), 0);
    // The client closes the connection it no longer trusts: the fake's read ends (its join).
  }
}

// A frame whose header claims a payload of a negative size (as int64) or beyond any message:
// the client gives up on the connection before allocating, INTERNAL naming the size.
TEST(TensorChannelClient, AnAnswerFrameClaimingANegativeOrOverflowingPayloadIsInternal) {
  for (uint64_t claimed : {~uint64_t{7}, kMaxFramePayloadBytes + 1, ~uint64_t{0}}) {
    TensorCallResponse pulled;
    ShardValue* v = pulled.mutable_pull()->add_values();
    v->set_name("w");
    v->mutable_value()->add_shape(4);
    pulled.add_payload_bytes(16);
    std::string frame = FrameHead(pulled, 0);
    EncodeFrameHeader({static_cast<uint32_t>(frame.size() - kFrameHeaderBytes), claimed}, frame.data());
    FakePs fake(frame);
    ASSERT_GE(fake.listener, 0);
    TensorChannelClient client(fake.address(), "ps:9", Plain());
    PullResponse got;
    absl::Status s = client.Pull(OnePull("w"), &got, absl::Seconds(30));
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << claimed;
    EXPECT_THAT(Message(s), HasSubstr(absl::StrCat("announces ", claimed, " payload bytes"))) << claimed;
    EXPECT_EQ(got.values_size(), 0);
  }
}

// A table pull answered with rows that do not fit the ids asked for (another count, a size that
// is no whole number of rows, a negative size): INTERNAL, nothing allocated for them.
TEST(TensorChannelClient, ATablePullAnswerWhoseRowsDoNotFitTheIdsIsInternal) {
  PullRequest request;
  *request.add_sparse() = testing_util::Rows("t", {3, 5});
  struct Case {
    int64_t num_ids, bytes;
  };
  for (const Case& c : {Case{3, 24}, Case{2, 12}, Case{2, -8}, Case{int64_t{1} << 62, 16}}) {
    TensorCallResponse answer;
    SparseRows* rows = answer.mutable_pull()->add_sparse();
    rows->set_shard_name("t");
    rows->set_num_ids(c.num_ids);
    answer.add_payload_bytes(c.bytes);
    FakePs fake(FrameHead(answer, 0));
    ASSERT_GE(fake.listener, 0);
    TensorChannelClient client(fake.address(), "ps:9", Plain());
    PullResponse got;
    absl::Status s = client.Pull(request, &got, absl::Seconds(30));
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << c.num_ids << " " << c.bytes;
    EXPECT_THAT(Message(s), HasSubstr("do not fit the shard or rows asked for")) << c.num_ids << " " << c.bytes;
    EXPECT_EQ(got.sparse_size(), 0);
  }
}

// Rows whose id count does not match their id bytes never leave the client: INVALID_ARGUMENT
// naming the table shard (nothing listens at the address: nothing is sent).
TEST(TensorChannelClient, RowsWhoseIdCountDoesNotMatchTheirIdsAreRefusedBeforeSending) {
  TensorChannelClient client("127.0.0.1:1", "ps:9", Plain());
  for (int64_t num_ids : {int64_t{3}, int64_t{-1}, int64_t{1} << 61, INT64_MIN}) {
    SparseRows rows = testing_util::Rows("t", {3, 5}, std::vector<float>(8, 1.0f));
    rows.set_num_ids(num_ids);
    PullRequest pull;
    *pull.add_sparse() = rows;
    PullResponse pulled;
    absl::Status s = client.Pull(pull, &pulled, absl::Seconds(5));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << num_ids;
    EXPECT_THAT(Message(s), HasSubstr(absl::StrCat("table shard t: num_ids ", num_ids, " does not match 16 bytes")));
    PushRequest push;
    *push.add_sparse() = rows;
    PushResponse pushed;
    s = client.Push(push, &pushed, absl::Seconds(5));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << num_ids;
    EXPECT_THAT(Message(s), HasSubstr("table shard t: num_ids"));
  }
  SparseRows ragged = testing_util::Rows("t", {3, 5});
  ragged.mutable_ids()->resize(12);  // an id and a half
  PullRequest pull;
  *pull.add_sparse() = ragged;
  PullResponse pulled;
  EXPECT_EQ(client.Pull(pull, &pulled, absl::Seconds(5)).code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorChannelClient, AnIpv6WildcardPsServesBothFamilies) {
  PsServer ps(PsServer::Options{"ps:0"});
  auto server = PsGrpcServer::Start(&ps, "[::]:0");
  if (!server.ok()) GTEST_SKIP() << "no IPv6 on this machine: " << server.status();
  const std::string port = std::to_string((*server)->port());
  GrpcPsClient control("127.0.0.1:" + port, "ps:0", absl::Seconds(10), Plain("chief:0"));
  CreateShardsResponse created;
  ASSERT_TRUE(
      control.CreateShards(testing_util::CreateRequest({Spec("w", {4}, 0, 4, "ones")}, UPDATE_ASYNC, 1), &created)
          .ok());
  for (const std::string host : {"127.0.0.1", "[::1]"}) {
    TensorChannelClient client(host + ":" + port, "ps:0", Plain());
    PullResponse pulled;
    absl::Status s = client.Pull(OnePull("w"), &pulled, absl::Seconds(10));
    ASSERT_TRUE(s.ok()) << host << ": " << s;
    EXPECT_EQ(ToFloats(pulled.values(0).value()), std::vector<float>(4, 1.0f));
  }
}

TEST(TensorChannelClient, UnreachablePsIsUnavailable) {
  const int port = testing_util::FreeLoopbackPort();
  TensorChannelClient client("127.0.0.1:" + std::to_string(port), "ps:3 at 127.0.0.1", Plain());
  PullResponse pulled;
  absl::Status s = client.Pull(OnePull("w"), &pulled, absl::Seconds(5));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(s), HasSubstr("ps:3 at 127.0.0.1: cannot connect"));
}

}  // namespace
}  // namespace pstrain
