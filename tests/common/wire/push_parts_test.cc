// A push split into a header and its bytes, and put back together (common/wire/push_parts.h).
#include "common/wire/push_parts.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

PushRequest TwoPartPush() {
  PushRequest r;
  r.set_worker_index(3);
  r.add_replica_versions(7);
  r.add_replica_versions(9);
  ShardGradient* g = r.add_gradients();
  g->set_name("w");
  g->mutable_gradient()->set_dtype(DT_FLOAT);
  g->mutable_gradient()->add_shape(2);
  g->mutable_gradient()->set_data(std::string(8, 'g'));
  SparseRows* s = r.add_sparse();
  s->set_shard_name("emb");
  s->set_num_ids(1);
  s->set_ids(std::string(8, 'i'));
  s->set_values(std::string(16, 'v'));
  return r;
}

TEST(PushPartsTest, PayloadAliasesTheRequestInSendingOrder) {
  const PushRequest r = TwoPartPush();
  std::vector<absl::string_view> payload = PushPayload(r);
  ASSERT_EQ(payload.size(), 3u);
  EXPECT_EQ(payload[0].data(), r.gradients(0).gradient().data().data());
  EXPECT_EQ(payload[1].data(), r.sparse(0).ids().data());
  EXPECT_EQ(payload[2].data(), r.sparse(0).values().data());
}

TEST(PushPartsTest, AssembledFromHeaderAndPayloadIsTheRequest) {
  const PushRequest r = TwoPartPush();
  PushRequest header = r;
  header.mutable_gradients(0)->mutable_gradient()->clear_data();
  header.mutable_sparse(0)->clear_ids();
  header.mutable_sparse(0)->clear_values();
  absl::StatusOr<PushRequest> whole = AssemblePush(header, PushPayload(r));
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->SerializeAsString(), r.SerializeAsString());
}

TEST(PushPartsTest, WrongNumberOfPartsIsRefused) {
  const PushRequest r = TwoPartPush();
  std::vector<absl::string_view> payload = PushPayload(r);
  payload.pop_back();
  absl::StatusOr<PushRequest> whole = AssemblePush(r, payload);
  EXPECT_EQ(whole.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(whole.status().message(), ::testing::HasSubstr("needs 3 payload parts, not 2"));
}

}  // namespace
}  // namespace pstrain
