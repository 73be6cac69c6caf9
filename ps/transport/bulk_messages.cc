#include "ps/transport/bulk_messages.h"

#include "common/wire/message_limits.h"

namespace pstrain {

PushRequest PushHeader(const PushRequest& request) {
  PushRequest header;
  header.set_worker_index(request.worker_index());
  header.set_step(request.step());
  *header.mutable_replica_versions() = request.replica_versions();  // a primary's forward (ps_replicas)
  for (const ShardGradient& g : request.gradients()) {
    ShardGradient* h = header.add_gradients();
    h->set_name(g.name());
    h->mutable_gradient()->set_dtype(g.gradient().dtype());
    *h->mutable_gradient()->mutable_shape() = g.gradient().shape();
  }
  for (const SparseRows& r : request.sparse()) {
    SparseRows* h = header.add_sparse();
    h->set_shard_name(r.shard_name());
    h->set_num_ids(r.num_ids());
  }
  return header;
}

int64_t FloatTensorBytes(const google::protobuf::RepeatedField<int64_t>& shape) {
  int64_t bytes = 4;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && bytes > kMaxMessageBytes / d)) return -1;
    bytes *= d;
  }
  return bytes;
}

std::string* PrepareValue(int index, const std::string& name, int64_t version, DataType dtype,
                          const google::protobuf::RepeatedField<int64_t>& shape, size_t bytes, PullResponse* response) {
  ShardValue* v = index < response->values_size() ? response->mutable_values(index) : response->add_values();
  v->set_name(name);
  v->set_version(version);
  TensorProto* t = v->mutable_value();
  t->set_dtype(dtype);
  *t->mutable_shape() = shape;
  std::string* data = t->mutable_data();
  if (data->size() != bytes) data->resize(bytes);  // the same shards again: the buffer is reused as it is
  return data;
}

std::string* PrepareRows(int index, const SparseRows& in, size_t bytes, PullResponse* response) {
  SparseRows* r = index < response->sparse_size() ? response->mutable_sparse(index) : response->add_sparse();
  r->set_shard_name(in.shard_name());
  r->set_num_ids(in.num_ids());
  r->set_version(in.version());
  r->clear_ids();
  std::string* values = r->mutable_values();
  if (values->size() != bytes) values->resize(bytes);
  return values;
}

}  // namespace pstrain
