// Helpers shared by the ps tests: shard specs, gradients and requests in one line each.
// Thread-safety: pure functions.
#ifndef PSTRAIN_TESTS_PS_PS_TEST_UTIL_H_
#define PSTRAIN_TESTS_PS_PS_TEST_UTIL_H_

#include <cstring>
#include <string>
#include <vector>

#include "common/wire/protocol_version.h"
#include "proto/ps.pb.h"

namespace pstrain {
namespace testing_util {

inline ShardSpecProto Spec(const std::string& variable, std::vector<int64_t> full_shape, int64_t row_offset,
                           int64_t rows, const std::string& init = "zeros", const std::string& shard_name = "") {
  ShardSpecProto s;
  s.set_shard_name(shard_name.empty() ? variable : shard_name);
  s.set_variable_name(variable);
  for (int64_t d : full_shape) s.add_full_shape(d);
  s.set_row_offset(row_offset);
  s.set_rows(rows);
  s.set_dtype(DT_FLOAT);
  s.mutable_initializer()->set_type(init);
  s.mutable_initializer()->set_stddev(0.05);
  s.mutable_initializer()->set_minval(-0.05);
  s.mutable_initializer()->set_maxval(0.05);
  s.set_seed(42);
  return s;
}

inline OptimizerProto Sgd(double lr) {
  OptimizerProto o;
  o.set_type("sgd");
  o.mutable_learning_rate()->set_initial(lr);
  return o;
}

// Creates `shards`, initialised, with SGD at learning rate 1.
inline CreateShardsRequest CreateRequest(std::vector<ShardSpecProto> shards, UpdateMode mode, int workers,
                                         NonFinitePolicy non_finite = NON_FINITE_REJECT) {
  CreateShardsRequest r;
  r.set_protocol_version(kProtocolVersion);
  for (ShardSpecProto& s : shards) *r.add_shards() = std::move(s);
  *r.mutable_optimizer() = Sgd(1.0);
  r.set_mode(mode);
  r.set_num_workers(workers);
  r.set_sync_timeout_ms(10000);
  r.set_non_finite(non_finite);
  r.set_initialize(true);
  return r;
}

inline TensorProto Floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  TensorProto t;
  t.set_dtype(DT_FLOAT);
  for (int64_t d : shape) t.add_shape(d);
  t.set_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

inline std::vector<float> ToFloats(const TensorProto& t) {
  std::vector<float> v(t.data().size() / sizeof(float));
  std::memcpy(v.data(), t.data().data(), v.size() * sizeof(float));
  return v;
}

inline PushRequest OnePush(const std::string& shard, std::vector<int64_t> shape, const std::vector<float>& grad,
                           int worker = 0, int64_t step = 0) {
  PushRequest r;
  r.set_worker_index(worker);
  r.set_step(step);
  ShardGradient* g = r.add_gradients();
  g->set_name(shard);
  *g->mutable_gradient() = Floats(std::move(shape), grad);
  return r;
}

inline PullRequest OnePull(const std::string& shard, int64_t min_version = 0) {
  PullRequest r;
  r.add_shard_names(shard);
  r.set_min_version(min_version);
  return r;
}

// Shard `shard_name` of embedding table `table` [rows, dim] holding `shard_rows` rows from global
// row `row_offset` in steps of `stride` (div: 1; mod: the table's shard count).
inline ShardSpecProto TableShard(const std::string& table, int64_t rows, int64_t dim, int64_t row_offset,
                                 int64_t shard_rows, int64_t stride, const std::string& shard_name,
                                 const std::string& init = "random_uniform") {
  ShardSpecProto s = Spec(table, {rows, dim}, row_offset, shard_rows, init, shard_name);
  s.set_row_stride(stride);
  s.set_sparse(true);
  return s;
}

inline std::string IdBytes(const std::vector<int64_t>& ids) {
  return std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t));
}

// A sparse entry of `shard` with `ids` and (pushes) gradient rows `values`.
inline SparseRows Rows(const std::string& shard, const std::vector<int64_t>& ids,
                       const std::vector<float>& values = {}) {
  SparseRows r;
  r.set_shard_name(shard);
  r.set_num_ids(static_cast<int64_t>(ids.size()));
  r.set_ids(IdBytes(ids));
  r.set_values(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return r;
}

inline std::vector<float> RowFloats(const SparseRows& r) {
  std::vector<float> v(r.values().size() / sizeof(float));
  std::memcpy(v.data(), r.values().data(), v.size() * sizeof(float));
  return v;
}

}  // namespace testing_util
}  // namespace pstrain

#endif  // PSTRAIN_TESTS_PS_PS_TEST_UTIL_H_
