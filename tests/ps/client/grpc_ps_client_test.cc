// GrpcPsClient against an in-process PsGrpcServer on 127.0.0.1: both transports (the tensor
// channel and unary gRPC), each in plaintext and with mutual TLS, give the same answers and the
// same errors.
#include "ps/client/grpc_ps_client.h"

#include <cstring>
#include <limits>
#include <thread>

#include "common/wire/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/server/ps_grpc_server.h"
#include "ps/store/initializers.h"
#include "ps/store/ps_server.h"
#include "tests/ps/ps_test_util.h"
#include "tests/test_util/test_certs.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::OnePull;
using testing_util::OnePush;
using testing_util::RowFloats;
using testing_util::Rows;
using testing_util::Spec;
using testing_util::TableShard;
using testing_util::ToFloats;

// Rows of 1 KiB: 4500 rows is ~4.4 MiB.
constexpr int64_t kRows = 4500, kCols = 256;

struct Path {
  TransportKind kind;
  bool tls;
};

class GrpcPsClientTest : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    PsGrpcServer::Options options;
    if (GetParam().tls) options.tls = ca_.For("ps:0");
    auto server = PsGrpcServer::Start(&ps_, "127.0.0.1:0", options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = NewClient("chief:0");
  }

  // A client of the ps speaking for `task` (its certificate when the test runs with TLS).
  std::unique_ptr<GrpcPsClient> NewClient(const std::string& task) {
    TransportConfig config;
    config.kind = GetParam().kind;
    config.caller = task;
    if (GetParam().tls) config.tls = ca_.For(task);
    return std::make_unique<GrpcPsClient>("127.0.0.1:" + std::to_string(server_->port()), "ps:0", absl::Seconds(30),
                                          config);
  }

  absl::Status Create(UpdateMode mode, int workers, NonFinitePolicy non_finite = NON_FINITE_REJECT) {
    CreateShardsResponse resp;
    return client_->CreateShards(
        testing_util::CreateRequest({Spec("big", {kRows, kCols}, 0, kRows, "glorot_uniform"),
                                     Spec("small", {3}, 0, 3, "ones"), Spec("empty", {0, 4}, 0, 0, "ones")},
                                    mode, workers, non_finite),
        &resp);
  }

  testing_util::TestCa ca_;
  PsServer ps_{PsServer::Options{"ps:0"}};
  std::unique_ptr<PsGrpcServer> server_;
  std::unique_ptr<GrpcPsClient> client_;
};

TEST_P(GrpcPsClientTest, PullAndPushSeveralShardsAcrossChunks) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  PullRequest pull;
  for (const char* n : {"small", "big", "empty"}) pull.add_shard_names(n);
  PullResponse before;
  ASSERT_TRUE(client_->Pull(pull, &before).ok());
  ASSERT_EQ(before.values_size(), 3);
  EXPECT_EQ(before.values(0).name(), "small");
  EXPECT_EQ(ToFloats(before.values(0).value()), std::vector<float>(3, 1.0f));
  EXPECT_EQ(before.values(1).value().data().size(), static_cast<size_t>(kRows * kCols * 4));
  EXPECT_THAT(before.values(1).value().shape(), ::testing::ElementsAre(kRows, kCols));
  EXPECT_EQ(before.values(2).value().data().size(), 0u);

  std::vector<float> grad(kRows * kCols);
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = static_cast<float>(i % 1000) * 1e-3f;
  PushRequest push = OnePush("big", {kRows, kCols}, grad);
  *push.add_gradients() = OnePush("small", {3}, {1, 2, 3}).gradients(0);
  *push.add_gradients() = OnePush("empty", {0, 4}, {}).gradients(0);
  PushResponse pushed;
  ASSERT_TRUE(client_->Push(push, &pushed).ok());
  EXPECT_THAT(pushed.versions(), ::testing::ElementsAre(1, 1, 1));

  PullResponse after = before;  // reused response object: buffers are recycled
  ASSERT_TRUE(client_->Pull(pull, &after).ok());
  std::vector<float> b0 = ToFloats(before.values(1).value()), b1 = ToFloats(after.values(1).value());
  for (size_t i = 0; i < grad.size(); i += 997) ASSERT_EQ(b1[i], b0[i] - grad[i]) << i;
  EXPECT_EQ(b1.back(), b0.back() - grad.back());
  EXPECT_EQ(ToFloats(after.values(0).value()), (std::vector<float>{0, -1, -2}));
  EXPECT_EQ(after.values(1).version(), 1);
}

TEST_P(GrpcPsClientTest, ErrorsNameTheShardAndPeer) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  PushResponse pushed;
  absl::Status s = client_->Push(OnePush("big", {kRows, kCols + 1}, std::vector<float>(kRows * (kCols + 1))), &pushed);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("shard big: gradient shape"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("ps:0 at 127.0.0.1"));
  s = client_->Push(OnePush("nope", {kRows, kCols}, std::vector<float>(kRows * kCols)), &pushed);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  PullResponse pulled;
  s = client_->Pull(OnePull("nope"), &pulled);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("shard nope is not held by ps:0"));
  ASSERT_TRUE(client_->Pull(OnePull("big"), &pulled).ok());
  EXPECT_EQ(pulled.values(0).version(), 0);  // nothing was applied
}

TEST_P(GrpcPsClientTest, NonFiniteGradientsAreRejectedOrSkipped) {
  std::vector<float> grad(kRows * kCols, 1e-3f);
  grad[kRows * kCols - 5] = std::numeric_limits<float>::quiet_NaN();  // in the last piece
  grad[7] = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  PushResponse pushed;
  absl::Status s = client_->Push(OnePush("big", {kRows, kCols}, grad), &pushed);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("has 2 non-finite values"));
  PullResponse pulled;
  ASSERT_TRUE(client_->Pull(OnePull("big"), &pulled).ok());
  EXPECT_EQ(pulled.values(0).version(), 0);

  ASSERT_TRUE(Create(UPDATE_ASYNC, 1, NON_FINITE_SKIP).ok());
  ASSERT_TRUE(client_->Push(OnePush("big", {kRows, kCols}, grad), &pushed).ok());
  EXPECT_EQ(pushed.skipped_non_finite(), 1);
  grad[7] = grad[kRows * kCols - 5] = 1e-3f;
  ASSERT_TRUE(client_->Push(OnePush("big", {kRows, kCols}, grad), &pushed).ok());
  EXPECT_EQ(pushed.skipped_non_finite(), 0);
  EXPECT_THAT(pushed.versions(), ::testing::ElementsAre(1));  // the skipped push applied nothing
}

TEST_P(GrpcPsClientTest, SyncStepOverTheNetwork) {
  ASSERT_TRUE(Create(UPDATE_SYNC, 2).ok());
  auto second = NewClient("worker:1");
  absl::Status s0, s1;
  PullResponse waited;
  absl::Status pull_status;
  std::thread waiter([&] { pull_status = client_->Pull(OnePull("small", 1), &waited); });
  std::thread w0([&] {
    PushResponse r;
    s0 = client_->Push(OnePush("small", {3}, {1, 1, 1}, 0, 0), &r);
  });
  std::thread w1([&] {
    PushResponse r;
    s1 = second->Push(OnePush("small", {3}, {2, 2, 2}, 1, 0), &r);
  });
  w0.join();
  w1.join();
  waiter.join();
  EXPECT_TRUE(s0.ok()) << s0;
  EXPECT_TRUE(s1.ok()) << s1;
  ASSERT_TRUE(pull_status.ok()) << pull_status;
  EXPECT_EQ(waited.values(0).version(), 1);
  EXPECT_EQ(ToFloats(waited.values(0).value()), std::vector<float>(3, -2.0f));
  PushResponse r;
  s0 = client_->Push(OnePush("small", {3}, {1, 1, 1}, 0, 0), &r);
  EXPECT_EQ(s0.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s0.message()), HasSubstr("stale push from part 0 for step 0"));
}

// A table in two mod shards beside the dense shards: rows by id and dense shards in ONE pull and
// ONE push, on every path.
TEST_P(GrpcPsClientTest, TableRowsTravelWithDenseShardsInOneCall) {
  ASSERT_TRUE(Create(UPDATE_ASYNC, 1).ok());
  constexpr int64_t kVocab = 1000, kDim = 64;
  CreateShardsResponse created;
  ASSERT_TRUE(client_
                  ->CreateShards(testing_util::CreateRequest({TableShard("emb", kVocab, kDim, 0, 500, 2, "emb/part_0"),
                                                              TableShard("emb", kVocab, kDim, 1, 500, 2, "emb/part_1")},
                                                             UPDATE_ASYNC, 1),
                                 &created)
                  .ok());
  Tensor whole;
  ASSERT_TRUE(InitializeRows(Spec("emb", {kVocab, kDim}, 0, kVocab, "random_uniform"), &whole).ok());
  const std::vector<int64_t> ids = {999, 1, 501};
  PullRequest pull = OnePull("small");
  *pull.add_sparse() = Rows("emb/part_1", ids);
  *pull.add_sparse() = Rows("emb/part_0", {});
  PullResponse before;
  ASSERT_TRUE(client_->Pull(pull, &before).ok());
  ASSERT_EQ(before.values_size(), 1);
  ASSERT_EQ(before.sparse_size(), 2);
  EXPECT_EQ(before.sparse(0).shard_name(), "emb/part_1");
  EXPECT_EQ(before.sparse(0).num_ids(), 3);
  EXPECT_EQ(before.sparse(1).num_ids(), 0);
  std::vector<float> rows = RowFloats(before.sparse(0));
  ASSERT_EQ(rows.size(), ids.size() * kDim);
  for (size_t j = 0; j < ids.size(); ++j) {
    EXPECT_EQ(std::memcmp(&rows[j * kDim], whole.data<float>() + ids[j] * kDim, kDim * 4), 0) << ids[j];
  }

  std::vector<float> grad(4 * kDim);
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = static_cast<float>(i % 7) * 0.01f;
  PushRequest push = OnePush("small", {3}, {1, 2, 3});
  *push.add_sparse() = Rows("emb/part_1", {501, 1, 999, 501}, grad);  // 501 twice: summed
  PushResponse pushed;
  ASSERT_TRUE(client_->Push(push, &pushed).ok());
  EXPECT_THAT(pushed.versions(), ::testing::ElementsAre(1, 1));  // dense first, then the sparse entry

  PullResponse after = before;  // a reused response: its buffers are recycled
  ASSERT_TRUE(client_->Pull(pull, &after).ok());
  EXPECT_EQ(ToFloats(after.values(0).value()), (std::vector<float>{0, -1, -2}));
  EXPECT_EQ(after.sparse(0).version(), 1);
  const std::vector<float> updated = RowFloats(after.sparse(0));
  for (int64_t e = 0; e < kDim; ++e) {                                          // SGD with learning rate 1
    EXPECT_EQ(updated[0 * kDim + e], rows[0 * kDim + e] - grad[2 * kDim + e]);  // 999
    EXPECT_EQ(updated[1 * kDim + e], rows[1 * kDim + e] - grad[1 * kDim + e]);  // 1
    EXPECT_FLOAT_EQ(updated[2 * kDim + e], rows[2 * kDim + e] - (grad[e] + grad[3 * kDim + e]));  // 501
  }

  *push.mutable_sparse(0) = Rows("emb/part_1", {4}, std::vector<float>(kDim));
  absl::Status s = client_->Push(push, &pushed);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("shard emb/part_1 of table emb does not hold row id 4"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("ps:0 at 127.0.0.1"));
}

INSTANTIATE_TEST_SUITE_P(AllPaths, GrpcPsClientTest,
                         ::testing::Values(Path{TransportKind::kGrpc, false},
                                           Path{TransportKind::kTensorChannel, false}, Path{TransportKind::kGrpc, true},
                                           Path{TransportKind::kTensorChannel, true}),
                         [](const ::testing::TestParamInfo<Path>& info) {
                           return std::string(info.param.kind == TransportKind::kGrpc ? "Unary" : "TensorChannel") +
                                  (info.param.tls ? "Tls" : "Plain");
                         });

TEST(GrpcPsClient, UnreachablePsIsUnavailable) {
  GrpcPsClient client("127.0.0.1:1", "ps:3", absl::Seconds(5), TransportConfig());
  HandshakeRequest r;
  r.set_protocol_version(kProtocolVersion);
  HandshakeResponse resp;
  absl::Status s = client.Handshake(r, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("ps:3 at 127.0.0.1:1"));
}

}  // namespace
}  // namespace pstrain
