// CTR examples from TFRecord files of tf.Example (tfrecord_reader.h, proto/example.proto), mapped
// to a CTR model's inputs the way tf.io.parse_example reads fixed-length features of one value:
//
//   label        int64_list or float_list, 0 or 1
//   numeric      float_list or int64_list, finite; transformed as Criteo's: log(1 + max(x, 0))
//   categorical  int64_list: the id as an unsigned 64-bit number % the field's table size (as a
//                Criteo hex id is int(hex, 16) % size); bytes_list: FNV-1a 64 of the bytes % size
//                (an empty string is id 0, as an empty Criteo field). Table size 0 (a dynamic
//                table) keeps ids whole: an int64 as is, bytes as their FNV-1a 64 read as int64
//                (may be negative; an empty string is still 0)
//
//   bag          (TfExampleBagSpec) int64_list or bytes_list of 0..max_length ids, each mapped as
//                a categorical id; weights, when named, a float_list of as many values, each finite
//                and >= 0 (a missing weights feature is an empty list); a missing bag is empty
//
// so the same data as Criteo TSV and as tf.Example (ids written as int64 int(hex, 16)) gives the
// same CtrData. Files, parts and bad data follow criteo_reader.h with records for lines: the
// globs' files sorted, whole files per part when there are at least as many files as parts, else
// record i of all files (counted in order) to part i % num_parts. A bad record (its data checksum,
// a proto that does not parse, a feature missing, of the wrong type or length, or a bad value) is
// an error naming the file, the record index and the feature, or with skip_bad_records is counted
// (CtrData::bad_lines_skipped) and skipped. Broken framing (tfrecord_reader.h) always fails.
// Thread-safety: a TfExampleCtrParser per thread; the free functions are pure.
#ifndef PSTRAIN_WORKER_DATA_TF_EXAMPLE_CTR_H_
#define PSTRAIN_WORKER_DATA_TF_EXAMPLE_CTR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/config/job_spec.h"
#include "worker/data/ctr_data.h"
#include "worker/data/tf_example_wire.h"
#include "worker/data/tfrecord_reader.h"

namespace pstrain {

class Env;

// FNV-1a, 64 bits (offset basis 14695981039346656037, prime 1099511628211): how bytes ids become
// 64-bit ids.
uint64_t Fnv1a64(absl::string_view bytes);

// Parses serialized tf.Examples for one mapping: the wire walk of tf_example_wire.h, protobuf's
// parser where that leaves a record to it. One per thread.
class TfExampleCtrParser {
 public:
  // REQUIRES: table_sizes has one entry >= 0 (0 = dynamic) per categorical feature.
  TfExampleCtrParser(TfExampleFeatureSpec features, std::vector<int64_t> table_sizes);
  // As ParseTfExampleCtr below; `protobuf_only` skips the wire walk (the reference in tests).
  // Bag fields write 0 to their `ids` entry and, only when the whole record is good, append the
  // example to `bags` (one IdBags per bag field, in field order, as MakeBagColumns makes them).
  // REQUIRES: `bags` given when the features have bags.
  absl::Status Parse(absl::string_view serialized, float* label, float* numeric, int64_t* ids,
                     std::vector<IdBags>* bags = nullptr, bool protobuf_only = false);

 private:
  absl::Status ProtobufViews(absl::string_view serialized);
  // Reads bag field `c` (its k-th bag) into bag_ids_[k] / bag_weights_[k].
  absl::Status ReadBag(size_t c, size_t k);

  const TfExampleFeatureSpec features_;
  const std::vector<int64_t> table_sizes_;
  FeatureSlots slots_;          // each distinct name once
  std::vector<int> index_;      // label, numeric..., categorical... -> slot
  std::vector<int> weights_index_;  // per categorical feature: its bag weights' slot, or -1
  std::vector<bool> list_slot_;     // per slot: the protobuf path keeps its whole list (bags, weights)
  std::vector<std::vector<int64_t>> bag_ids_;  // per bag: this record's ids
  std::vector<std::vector<float>> bag_weights_;
  std::vector<absl::string_view> bytes_values_;
  std::vector<FeatureView> views_;
  std::vector<std::string> bytes_;  // bytes values of the protobuf path, alive for one Parse
};

// One empty IdBags per bag field of `features`, in field order (the form Parse appends to).
std::vector<IdBags> MakeBagColumns(const TfExampleFeatureSpec& features);

// Parses one serialized tf.Example into label, numeric[features.numeric.size()] and
// ids[features.categorical.size()]. InvalidArgument naming the feature (`feature "C3" is a
// float_list; ...`) or saying the proto does not parse; the caller adds file and record. REQUIRES:
// table_sizes has one entry >= 0 (0 = dynamic) per categorical feature.
absl::Status ParseTfExampleCtr(absl::string_view serialized, const TfExampleFeatureSpec& features,
                               const std::vector<int64_t>& table_sizes, float* label, float* numeric, int64_t* ids);

struct TfRecordCtrOptions {
  std::vector<std::string> files_or_globs;  // paths or glob(3) patterns
  TfExampleFeatureSpec features;
  std::vector<int64_t> table_sizes;  // one per categorical feature, each >= 0 (0: dynamic, ids kept whole)
  bool skip_bad_records = false;
  int part = 0, num_parts = 1;
  int64_t max_record_bytes = kDefaultMaxTfRecordBytes;
  // Most bytes the examples may take in memory (CtrData::ExampleBytes); 0: the host's default
  // memory budget (memory_budget.h: half its memory) in `env`.
  int64_t max_example_bytes = 0;
};

// Reads this part of the files. InvalidArgument for bad options and (unless skip_bad_records)
// the first bad record; DataLoss for broken framing or a corrupt gzip file; NotFound for a missing
// file or a pattern that matches nothing; ResourceExhausted when the examples pass the memory
// budget. Each names the file (and record). `env` not owned.
absl::StatusOr<CtrData> ReadTfRecordCtr(Env* env, const TfRecordCtrOptions& options);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_TF_EXAMPLE_CTR_H_
