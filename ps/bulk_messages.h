// The protobuf pieces both bulk transports (the gRPC streams and the tensor channel) build around
// raw tensor bytes: a push's header without the bytes, and a pulled value written in place into a
// reused PullResponse.
// Thread-safety: pure functions.
#ifndef PSTRAIN_PS_BULK_MESSAGES_H_
#define PSTRAIN_PS_BULK_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "google/protobuf/repeated_field.h"
#include "proto/ps.pb.h"

namespace pstrain {

// `request` with every gradient's name, dtype and shape, and every sparse entry's shard and
// num_ids, but none of their bytes.
PushRequest PushHeader(const PushRequest& request);

// Sets value `index` of `response` (an existing entry is reused, with its data buffer) to the
// given name, version, dtype and shape, sizes its data to `bytes`, and returns the data to fill.
// REQUIRES: index <= response->values_size().
std::string* PrepareValue(int index, const std::string& name, int64_t version, DataType dtype,
                          const google::protobuf::RepeatedField<int64_t>& shape, size_t bytes, PullResponse* response);

// Sets sparse entry `index` of `response` (an existing entry is reused, with its buffer) to the
// shard, num_ids and version of `in`, sizes its values to `bytes`, and returns them to fill.
// REQUIRES: index <= response->sparse_size().
std::string* PrepareRows(int index, const SparseRows& in, size_t bytes, PullResponse* response);

}  // namespace pstrain

#endif  // PSTRAIN_PS_BULK_MESSAGES_H_
