// A ps given more than it may hold and a diverged model to save (classes: sizes trusted before
// allocating, training garbage in silence). The ps's port (peers that announce more than they
// deliver) is channel_limits_test.cc's.

#include <filesystem>

#include "absl/time/clock.h"
#include "common/wire/protocol_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/ps_server.h"
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

}  // namespace
}  // namespace pstrain
