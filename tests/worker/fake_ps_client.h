// FakePsClient: an in-memory ps for worker unit tests. Holds shards created from a plan, answers
// pulls, applies pushes as plain SGD and records every request so tests can inspect them.
// Thread-safety: all methods lock one mutex.
#ifndef PSTRAIN_TESTS_WORKER_FAKE_PS_CLIENT_H_
#define PSTRAIN_TESTS_WORKER_FAKE_PS_CLIENT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "ps/client/ps_client.h"

namespace pstrain {

class FakePsClient : public PsClient {
 public:
  struct Shard {
    std::vector<int64_t> shape;
    std::vector<float> value;
    int64_t version = 0;
  };

  explicit FakePsClient(int index, float learning_rate = 0.1f) : index_(index), lr_(learning_rate) {}

  // Creates this ps's shards of `plan` with values filled by fill(variable name, row, column).
  template <typename Fill>
  void CreateFromPlan(const VariablePlanProto& plan, Fill fill) {
    absl::MutexLock lock(&mu_);
    for (const auto& v : plan.variables()) {
      for (const auto& s : v.shards()) {
        if (s.ps_task() != index_) continue;
        Shard& shard = shards_[s.shard_name()];
        shard.shape.assign(s.full_shape().begin(), s.full_shape().end());
        if (!shard.shape.empty()) shard.shape[0] = s.rows();
        int64_t row_floats = 1;
        for (size_t d = 1; d < shard.shape.size(); ++d) row_floats *= shard.shape[d];
        for (int64_t r = 0; r < s.rows(); ++r) {
          for (int64_t c = 0; c < row_floats; ++c) shard.value.push_back(fill(v.name(), s.row_offset() + r, c));
        }
      }
    }
  }

  std::string peer() const override { return absl::StrCat("ps:", index_, " (fake)"); }
  absl::Status Handshake(const HandshakeRequest&, HandshakeResponse*) override { return absl::OkStatus(); }
  absl::Status CreateShards(const CreateShardsRequest&, CreateShardsResponse*) override { return absl::OkStatus(); }
  absl::Status Save(const SaveRequest&, SaveResponse*) override { return absl::UnimplementedError("fake"); }
  absl::Status Restore(const RestoreRequest&, RestoreResponse*) override { return absl::UnimplementedError("fake"); }
  absl::Status GetStats(const PsStatsRequest&, PsStatsResponse*) override { return absl::OkStatus(); }

  absl::Status Pull(const PullRequest& request, PullResponse* response) override {
    absl::MutexLock lock(&mu_);
    if (!fail_.ok()) return fail_;
    pulls_.push_back(request);
    for (const std::string& name : request.shard_names()) {
      auto it = shards_.find(name);
      if (it == shards_.end()) return absl::NotFoundError(absl::StrCat(peer(), ": no shard ", name));
      ShardValue* v = response->add_values();
      v->set_name(name);
      v->set_version(it->second.version);
      v->mutable_value()->set_dtype(DT_FLOAT);
      for (int64_t d : it->second.shape) v->mutable_value()->add_shape(d);
      v->mutable_value()->set_data(it->second.value.data(), it->second.value.size() * sizeof(float));
    }
    return absl::OkStatus();
  }

  absl::Status Push(const PushRequest& request, PushResponse* response) override {
    absl::MutexLock lock(&mu_);
    if (!fail_.ok()) return fail_;
    pushes_.push_back(request);
    for (const ShardGradient& g : request.gradients()) {
      Shard& shard = shards_.at(g.name());
      const float* grad = reinterpret_cast<const float*>(g.gradient().data().data());
      for (size_t i = 0; i < shard.value.size(); ++i) shard.value[i] -= lr_ * grad[i];
      shard.version += 1 + extra_updates_per_push_;  // extra: updates by "other workers"
      response->add_versions(shard.version);
    }
    return absl::OkStatus();
  }

  void set_fail(absl::Status s) { absl::MutexLock lock(&mu_); fail_ = std::move(s); }
  void set_extra_updates_per_push(int n) { absl::MutexLock lock(&mu_); extra_updates_per_push_ = n; }
  std::vector<PullRequest> pulls() { absl::MutexLock lock(&mu_); return pulls_; }
  std::vector<PushRequest> pushes() { absl::MutexLock lock(&mu_); return pushes_; }
  Shard shard(const std::string& name) { absl::MutexLock lock(&mu_); return shards_.at(name); }

 private:
  const int index_;
  const float lr_;
  absl::Mutex mu_;
  std::map<std::string, Shard> shards_ ABSL_GUARDED_BY(mu_);
  std::vector<PullRequest> pulls_ ABSL_GUARDED_BY(mu_);
  std::vector<PushRequest> pushes_ ABSL_GUARDED_BY(mu_);
  absl::Status fail_ ABSL_GUARDED_BY(mu_);
  int extra_updates_per_push_ ABSL_GUARDED_BY(mu_) = 0;
};

// Forwards every call to a PsClient owned by the test, for factories whose result the worker owns.
class BorrowedPsClient : public PsClient {
 public:
  explicit BorrowedPsClient(PsClient* ps) : ps_(ps) {}
  std::string peer() const override { return ps_->peer(); }
  absl::Status Handshake(const HandshakeRequest& q, HandshakeResponse* r) override { return ps_->Handshake(q, r); }
  absl::Status CreateShards(const CreateShardsRequest& q, CreateShardsResponse* r) override {
    return ps_->CreateShards(q, r);
  }
  absl::Status Pull(const PullRequest& q, PullResponse* r) override { return ps_->Pull(q, r); }
  absl::Status Push(const PushRequest& q, PushResponse* r) override { return ps_->Push(q, r); }
  absl::Status Save(const SaveRequest& q, SaveResponse* r) override { return ps_->Save(q, r); }
  absl::Status Restore(const RestoreRequest& q, RestoreResponse* r) override { return ps_->Restore(q, r); }
  absl::Status GetStats(const PsStatsRequest& q, PsStatsResponse* r) override { return ps_->GetStats(q, r); }

 private:
  PsClient* ps_;  // not owned
};

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_WORKER_FAKE_PS_CLIENT_H_
