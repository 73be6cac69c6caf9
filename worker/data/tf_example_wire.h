// The features a CTR mapping asks for in a serialized tf.Example, found by walking protobuf's wire
// format (proto/example.proto) without building the message: no allocation per record, which makes
// reading several times faster than a protobuf parse into a map of 40 features.
//
// The fast path takes the shapes protobuf's parser accepts and writers produce; anything it does not
// decide by itself (groups, a message field repeated where protobuf would merge, a key that is not
// UTF-8, malformed bytes, a wire type other than the schema's) makes it return false, and the caller
// parses with protobuf, whose answer is the reference. The unit tests and the fuzz target check that
// both ways give the same views.
// Thread-safety: pure functions over caller-owned memory.
#ifndef PSTRAIN_WORKER_DATA_TF_EXAMPLE_WIRE_H_
#define PSTRAIN_WORKER_DATA_TF_EXAMPLE_WIRE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace pstrain {

// One wanted feature of one record.
struct FeatureView {
  enum Kind { kNone = 0, kBytes = 1, kFloat = 2, kInt64 = 3 };  // kNone: missing, or a Feature without a list
  bool present = false;
  Kind kind = kNone;
  int64_t count = 0;        // values in the list
  int64_t int64_value = 0;  // the value, when count == 1
  float float_value = 0;
  absl::string_view bytes_value;  // points into the serialized record
  // The list message (BytesList, FloatList or Int64List) the values came from, for reading all of
  // them (ListValues below); points into the serialized record.
  absl::string_view list;
};

// Wanted feature names -> their slot in the views.
using FeatureSlots = absl::flat_hash_map<std::string, int>;

// Fills views[slot] (views.size() == slots' count, reset here) from `serialized`; false when the
// record needs protobuf's parser (see above).
bool FastFeatureViews(absl::string_view serialized, const FeatureSlots& slots, std::vector<FeatureView>* views);

// Appends every value of a serialized list message (FeatureView::list) of `kind` to the vector of
// that kind (the others are not touched; bytes values point into `list`). False when the list
// does not parse as that kind.
bool ListValues(absl::string_view list, FeatureView::Kind kind, std::vector<int64_t>* int64_values,
                std::vector<float>* float_values, std::vector<absl::string_view>* bytes_values);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_TF_EXAMPLE_WIRE_H_
