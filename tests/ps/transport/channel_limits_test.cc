// The ps's port under hostile load, in process on 127.0.0.1 with a fake clock: thousands of idle
// and stalled connections cost no threads and do not stop a real client; stalled frames are closed
// at their deadline; announced-but-undelivered bytes stay within the shared bounds; connections
// beyond the cap are refused with a log line.
#include <dirent.h>
#include <sys/resource.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/grpc_ps_client.h"
#include "ps/server/ps_grpc_server.h"
#include "ps/transport/tensor_channel_client.h"
#include "tests/ps/ps_test_util.h"
#include "tests/ps/transport/raw_channel.h"
#include "tests/test_util/fake_clock_env.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::OnePull;
using testing_util::OnePush;
using testing_util::RawChannel;
using testing_util::Spec;

int ThreadCount() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/task");
  while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

int64_t ResidentBytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// Raises the open-files limit to at least `n`; false when the hard limit is lower.
bool AllowOpenFiles(rlim_t n) {
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  if (r.rlim_cur >= n) return true;
  if (r.rlim_max < n) return false;
  r.rlim_cur = n;
  return ::setrlimit(RLIMIT_NOFILE, &r) == 0;
}

class ChannelLimitsTest : public ::testing::Test {
 protected:
  static constexpr int64_t kRows = 256, kCols = 256;  // 256 KiB

  void Start(int max_connections, int64_t message_budget = int64_t{64} << 20) {
    PsServer::Options ps;
    ps.task = "ps:0";
    ps.env = &clock_;
    ps_ = std::make_unique<PsServer>(ps);
    PsGrpcServer::Options options;
    options.env = &clock_;
    options.listener.max_connections = max_connections;
    options.listener.io_threads = 4;
    options.channel.frame_timeout = absl::Seconds(120);
    options.channel.max_pending_message_bytes = message_budget;
    options.log = [this](const std::string& line) {
      absl::MutexLock l(&mu_);
      log_ += line + "\n";
    };
    auto server = PsGrpcServer::Start(ps_.get(), "127.0.0.1:0", options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    address_ = "127.0.0.1:" + std::to_string(server_->port());
    TransportConfig chief;
    chief.caller = "chief:0";
    GrpcPsClient control(address_, "ps:0", absl::Seconds(30), chief);
    CreateShardsResponse created;
    ASSERT_TRUE(
        control
            .CreateShards(testing_util::CreateRequest({Spec("w", {kRows, kCols}, 0, kRows, "zeros")}, UPDATE_ASYNC, 1),
                          &created)
            .ok());
    TransportConfig worker;
    worker.caller = "worker:0";
    client_ = std::make_unique<TensorChannelClient>(address_, "ps:0", worker);
  }

  // A real worker's pull and push: true when both worked.
  bool PullAndPush() {
    PullResponse pulled;
    PushResponse pushed;
    absl::Status pull = client_->Pull(OnePull("w"), &pulled, absl::Seconds(30));
    absl::Status push = client_->Push(OnePush("w", {kRows, kCols}, std::vector<float>(kRows * kCols, 1.0f)), &pushed,
                                      absl::Seconds(30));
    EXPECT_TRUE(pull.ok()) << pull;
    EXPECT_TRUE(push.ok()) << push;
    return pull.ok() && push.ok() && pulled.values_size() == 1;
  }

  bool WaitForConnections(const std::function<bool(int)>& ok, int tries = 3000) {
    for (int i = 0; i < tries && !ok(server_->listener().connections()); ++i) absl::SleepFor(absl::Milliseconds(10));
    return ok(server_->listener().connections());
  }

  std::string Log() {
    absl::MutexLock l(&mu_);
    return log_;
  }

  // The log once it holds `text` (the ps may close a socket before it writes the line about it),
  // or as it is after 30 s.
  std::string WaitForLog(const std::string& text) {
    for (int i = 0; i < 3000 && Log().find(text) == std::string::npos; ++i) absl::SleepFor(absl::Milliseconds(10));
    return Log();
  }

  testing_util::FakeClockEnv clock_;
  std::unique_ptr<PsServer> ps_;
  std::unique_ptr<PsGrpcServer> server_;
  std::unique_ptr<TensorChannelClient> client_;
  std::string address_;
  absl::Mutex mu_;
  std::string log_ ABSL_GUARDED_BY(mu_);
};

TEST_F(ChannelLimitsTest, IdleAndStalledConnectionsCostNoThreadsAndStalledOnesCloseAtTheirDeadline) {
  constexpr int kIdle = 2000, kStalled = 500;
  // Both ends of every connection live in this process.
  if (!AllowOpenFiles(2 * (kIdle + kStalled) + 512)) GTEST_SKIP() << "the open-files hard limit is too low";
  Start(/*max_connections=*/kIdle + kStalled + 16);
  ASSERT_TRUE(PullAndPush());
  const int threads_before = ThreadCount();

  std::vector<std::unique_ptr<RawChannel>> idle, stalled;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<RawChannel>(server_->port()));
    ASSERT_TRUE(idle.back()->Open()) << "idle connection " << i;
  }
  TensorCallRequest pull;
  pull.mutable_pull()->add_shard_names("w");
  const std::string frame = FrameHead(pull, 0);
  for (int i = 0; i < kStalled; ++i) {
    stalled.push_back(std::make_unique<RawChannel>(server_->port()));
    ASSERT_TRUE(stalled.back()->Open()) << "stalled connection " << i;
    ASSERT_TRUE(stalled.back()->Send(frame.substr(0, kFrameHeaderBytes + 2)));  // and never the rest
  }
  ASSERT_TRUE(WaitForConnections([](int n) { return n >= kIdle + kStalled; }));
  // A fixed set of threads serves them all: none was started for them.
  EXPECT_LE(ThreadCount(), threads_before + 2) << "threads before: " << threads_before;
  EXPECT_EQ(server_->listener().threads(), 5);  // the event loop and 4 io threads
  ASSERT_TRUE(PullAndPush());

  // The frame deadline passes on the ps's clock: every stalled connection is closed, the idle stay.
  // A loaded host may read a stalled connection's first bytes only after the clock moved (its
  // deadline then 120 s past that), so the clock moves again while some are left.
  bool closed = false;
  for (int round = 0; round < 3 && !closed; ++round) {
    clock_.Advance(absl::Seconds(121));
    closed = WaitForConnections([](int n) { return n <= kIdle + 1; }, /*tries=*/1000);
  }
  ASSERT_TRUE(closed);
  for (auto& s : stalled) EXPECT_TRUE(s->ClosedByPeer());
  EXPECT_GE(server_->listener().connections(), kIdle);
  EXPECT_TRUE(PullAndPush());
  EXPECT_LE(ThreadCount(), threads_before + 2);
  // An idle connection is still served.
  TensorCallResponse answer;
  ASSERT_TRUE(idle.front()->SendFrame(pull));
  ASSERT_TRUE(idle.front()->ReadFrame(&answer));
  EXPECT_EQ(answer.code(), 0) << answer.message();
}

TEST_F(ChannelLimitsTest, ConnectionsBeyondTheCapAreRefusedWithALogLine) {
  Start(/*max_connections=*/20);
  std::vector<std::unique_ptr<RawChannel>> held;
  for (int i = 0; i < 20; ++i) held.push_back(std::make_unique<RawChannel>(server_->port()));
  ASSERT_TRUE(WaitForConnections([](int n) { return n == 20; }));
  RawChannel refused(server_->port());
  EXPECT_TRUE(refused.ClosedByPeer());
  const std::string refused_line = "refused 1 connection(s): 20 are open, the most this ps takes";
  EXPECT_THAT(WaitForLog(refused_line), HasSubstr(refused_line));
  held.clear();  // room again: a real client gets in
  ASSERT_TRUE(WaitForConnections([](int n) { return n == 0; }));
  EXPECT_TRUE(PullAndPush());
}

// 40 connections announce 16 MiB messages and deliver 1 KiB: the ps holds a few KiB for each, not
// the 640 MiB announced. Two that deliver 15 MiB each pass a 20 MiB bound: at least one is closed
// at once, the other at its deadline, and a real client is served throughout.
TEST_F(ChannelLimitsTest, AnnouncedButUndeliveredBytesStayWithinTheSharedBound) {
  Start(/*max_connections=*/100, /*message_budget=*/int64_t{20} << 20);
  const int64_t rss_before = ResidentBytes();
  std::string announce(kFrameHeaderBytes, '\0');
  EncodeFrameHeader({uint32_t{16} << 20, 0}, announce.data());
  std::vector<std::unique_ptr<RawChannel>> stalled;
  for (int i = 0; i < 40; ++i) {
    stalled.push_back(std::make_unique<RawChannel>(server_->port()));
    ASSERT_TRUE(stalled.back()->Open());
    ASSERT_TRUE(stalled.back()->Send(announce + std::string(1024, '\x0a')));
  }
  ASSERT_TRUE(PullAndPush());
  EXPECT_LT(ResidentBytes() - rss_before, int64_t{64} << 20);
  EXPECT_EQ(server_->listener().connections(), 41);  // the 40 and the real client's

  std::vector<std::unique_ptr<RawChannel>> big;
  for (int i = 0; i < 2; ++i) {
    big.push_back(std::make_unique<RawChannel>(server_->port()));
    ASSERT_TRUE(big.back()->Open());
  }
  std::vector<std::thread> senders;
  for (auto& b : big) {
    senders.emplace_back([&b, &announce] { b->Send(announce + std::string(size_t{15} << 20, '\x0a')); });
  }
  ASSERT_TRUE(WaitForConnections([](int n) { return n <= 42; }));  // one of the two is gone
  EXPECT_THAT(WaitForLog("announced and not yet delivered"), HasSubstr("announced and not yet delivered"));
  EXPECT_TRUE(PullAndPush());
  clock_.Advance(absl::Seconds(121));  // the rest stalled mid-frame: closed at the deadline
  ASSERT_TRUE(WaitForConnections([](int n) { return n <= 1; }));
  for (auto& b : big) b->ClosedByPeer();
  for (std::thread& t : senders) t.join();
  EXPECT_TRUE(PullAndPush());
}

}  // namespace
}  // namespace pstrain
