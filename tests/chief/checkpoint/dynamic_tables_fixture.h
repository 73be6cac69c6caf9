// Shared by the chief's dynamic table tests: a plan with a dense variable and a dynamic table,
// in-process ps tasks (real PsServers) holding it, and keys to push.
// Thread-safety: test code, one thread.
#ifndef PSTRAIN_TESTS_CHIEF_CHECKPOINT_DYNAMIC_TABLES_FIXTURE_H_
#define PSTRAIN_TESTS_CHIEF_CHECKPOINT_DYNAMIC_TABLES_FIXTURE_H_

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "chief/coordinator/job_protos.h"
#include "common/config/job_spec.h"
#include "common/plan/dynamic_shards.h"
#include "common/platform/env.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "common/plan/dynamic_key_owner.h"
#include "ps/store/ps_server.h"

namespace pstrain {
namespace dynamic_tables_testing {

inline constexpr char kTable[] = "user/embeddings";
inline constexpr int64_t kDim = 4;

// A plan with a dense variable split over the ps (div) and one dynamic table, one shard per ps.
inline VariablePlanProto Plan(int num_ps) {
  VariablePlanProto plan;
  plan.set_num_ps(num_ps);
  VariablePlanProto::Variable* dense = plan.add_variables();
  dense->set_name("dense/kernel");
  dense->add_shape(6);
  dense->add_shape(2);
  dense->set_dtype(DT_FLOAT);
  for (int i = 0; i < num_ps; ++i) {
    ShardSpecProto* s = dense->add_shards();
    s->set_shard_name(absl::StrCat("dense/kernel/part_", i));
    s->set_variable_name("dense/kernel");
    s->add_full_shape(6);
    s->add_full_shape(2);
    s->set_row_offset(i * 6 / num_ps);
    s->set_rows((i + 1) * 6 / num_ps - i * 6 / num_ps);
    s->set_row_stride(1);
    s->set_dtype(DT_FLOAT);
    s->mutable_initializer()->set_type("zeros");
    s->set_ps_task(i);
  }
  VariablePlanProto::Variable* table = plan.add_variables();
  table->set_name(kTable);
  table->add_shape(3000);
  table->add_shape(kDim);
  table->set_dtype(DT_FLOAT);
  table->set_sparse(true);
  table->mutable_dynamic()->set_max_rows(3000);
  table->mutable_dynamic()->set_ttl_steps(50);
  for (int i = 0; i < num_ps; ++i) {
    ShardSpecProto* s = table->add_shards();
    s->set_shard_name(DynamicShardName(kTable, i, num_ps));
    s->set_variable_name(kTable);
    s->add_full_shape(3000);
    s->add_full_shape(kDim);
    s->set_row_offset(i);
    s->set_rows(DynamicShardCap(3000, num_ps));
    s->set_row_stride(num_ps);
    s->set_dtype(DT_FLOAT);
    s->set_sparse(true);
    s->mutable_initializer()->set_type("random_uniform");
    s->mutable_initializer()->set_minval(-0.05);
    s->mutable_initializer()->set_maxval(0.05);
    s->set_seed(7);
    s->set_ps_task(i);
  }
  return plan;
}

inline JobSpec Spec() {
  JobSpec spec;
  spec.optimizer.type = "adagrad";
  return spec;
}

inline std::string TempDir(const std::string& name) {
  std::string dir = absl::StrCat(::testing::TempDir(), "/dynamic_tables_test_", name, "_", ::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

inline std::set<std::string> DtabFilesUnder(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".dtab") out.insert(e.path().string());
  }
  return out;
}

// In-process ps tasks holding the plan's shards.
class Cluster {
 public:
  explicit Cluster(int num_ps) {
    for (int i = 0; i < num_ps; ++i) {
      PsServer::Options o;
      o.task = absl::StrCat("ps:", i);
      servers_.push_back(std::make_unique<PsServer>(o));
      clients_.push_back(std::make_unique<LocalPsClient>(servers_.back().get()));
    }
  }
  std::vector<PsClient*> clients() const {
    std::vector<PsClient*> out;
    for (const auto& c : clients_) out.push_back(c.get());
    return out;
  }
  PsClient* ps(int i) { return clients_[static_cast<size_t>(i)].get(); }
  // Ps task `i` as a new process: no shards, as after a crash and restart.
  void Restart(int i) {
    PsServer::Options o;
    o.task = absl::StrCat("ps:", i);
    auto server = std::make_unique<PsServer>(o);
    clients_[static_cast<size_t>(i)] = std::make_unique<LocalPsClient>(server.get());
    servers_[static_cast<size_t>(i)] = std::move(server);
  }
  int size() const { return static_cast<int>(clients_.size()); }

  // Pushes a gradient for each of `keys` to the shard that owns it, at `step`.
  void PushKeys(const std::vector<int64_t>& keys, int64_t step) {
    const int n = size();
    for (int i = 0; i < n; ++i) {
      std::vector<int64_t> mine;
      for (int64_t k : keys) {
        if (DynamicKeyOwner(static_cast<uint64_t>(k), n) == i) mine.push_back(k);
      }
      PushKeysRequest request;
      request.set_step(step);
      KeyedRows* rows = request.add_tables();
      rows->set_shard_name(DynamicShardName(kTable, i, n));
      rows->set_num_keys(static_cast<int64_t>(mine.size()));
      rows->set_keys(std::string(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(int64_t)));
      rows->set_values(std::string(mine.size() * kDim * sizeof(float), '\0'));
      std::vector<float> grads(mine.size() * kDim, 0.25f);
      std::memcpy(rows->mutable_values()->data(), grads.data(), grads.size() * sizeof(float));
      PushKeysResponse response;
      ASSERT_TRUE(ps(i)->PushKeys(request, &response).ok());
    }
  }
  // Rows of the table held by each ps (GetStats' dynamic part).
  std::vector<int64_t> Rows() {
    std::vector<int64_t> out;
    for (int i = 0; i < size(); ++i) {
      PsStatsResponse stats;
      EXPECT_TRUE(ps(i)->GetStats(PsStatsRequest(), &stats).ok());
      int64_t rows = 0;
      for (const DynamicShardStats& s : stats.dynamic_shards()) rows += s.rows();
      out.push_back(rows);
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<PsServer>> servers_;
  std::vector<std::unique_ptr<LocalPsClient>> clients_;
};

inline std::vector<int64_t> Keys(int64_t first, int64_t count) {
  std::vector<int64_t> keys;
  // Spread over the int64 range, negative ones too (ids hashed from bytes are).
  for (int64_t k = first; k < first + count; ++k) {
    keys.push_back(static_cast<int64_t>(static_cast<uint64_t>(k) * 0x9E3779B97F4A7C15ull - 12345u));
  }
  return keys;
}

class DynamicCheckpointTest : public ::testing::Test {
 protected:
  void Create(Cluster* cluster, const VariablePlanProto& plan) {
    for (int i = 0; i < cluster->size(); ++i) {
      CreateShardsResponse created;
      absl::StatusOr<CreateShardsRequest> request = MakeCreateShardsRequest(Spec(), plan, i, cluster->size(), true);
      ASSERT_TRUE(request.ok()) << request.status();
      ASSERT_TRUE(cluster->ps(i)->CreateShards(*request, &created).ok());
    }
  }
  Env* env_ = Env::Default();
};

}  // namespace dynamic_tables_testing
}  // namespace pstrain

#endif  // PSTRAIN_TESTS_CHIEF_CHECKPOINT_DYNAMIC_TABLES_FIXTURE_H_
