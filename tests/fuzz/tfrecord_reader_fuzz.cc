// libFuzzer target for the TFRecord reader and the tf.Example mapping (bash deploy/fuzz.sh SECONDS
// tfrecord_reader_fuzz builds and runs it). The first input byte picks a chunk size; the rest is a
// file's bytes. Checks, beyond "no crash, no sanitizer report, no
// unbounded allocation": framing the bytes whole and in chunks gives the same records or the same
// error, every error names the file and a record, the tf.Example wire walk gives what protobuf's
// parser gives (bags too), and every mapped value is in its range.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "worker/data/tf_example_ctr.h"
#include "worker/data/tfrecord_reader.h"

namespace {

using pstrain::fuzz::Check;

// Small limits keep the fuzzer's allocations small; the checks do not depend on them.
constexpr int64_t kMaxRecordBytes = 1 << 16;

struct Parsed {
  absl::Status status;
  std::vector<std::string> records;
  std::vector<bool> checksum_ok;
};

Parsed Frame(absl::string_view bytes, size_t chunk) {
  Parsed out;
  pstrain::TfRecordParser parser(kMaxRecordBytes);
  parser.BeginFile("fuzz.tfrecord");
  auto on_record = [&out](const pstrain::TfRecord& r) {
    Check(r.index == static_cast<int64_t>(out.records.size()));
    Check(static_cast<int64_t>(r.data.size()) <= kMaxRecordBytes);
    out.records.emplace_back(r.data);
    out.checksum_ok.push_back(r.checksum_ok);
    return absl::OkStatus();
  };
  for (size_t at = 0; at < bytes.size() && out.status.ok(); at += chunk) {
    out.status = parser.Feed(bytes.substr(at, chunk), on_record);
  }
  if (out.status.ok()) out.status = parser.EndFile();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t chunk = 1 + data[0];
  const absl::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Parsed whole = Frame(bytes, bytes.size() + 1);
  const Parsed chunked = Frame(bytes, chunk);
  Check(whole.status == chunked.status);
  Check(whole.records == chunked.records && whole.checksum_ok == chunked.checksum_ok);
  if (!whole.status.ok()) {
    Check(whole.status.code() == absl::StatusCode::kDataLoss);
    Check(absl::string_view(whole.status.message()).find("TFRecord file fuzz.tfrecord, record ") == 0);
  }

  // Each framed record through the mapping: two numeric inputs, two fields (one small table).
  const pstrain::TfExampleFeatureSpec features{"label", {"I1", "I2"}, {"C1", "C2"}, {}};
  const std::vector<int64_t> tables = {3, int64_t{1} << 40};
  pstrain::TfExampleCtrParser parser(features, tables);
  for (const std::string& record : whole.records) {
    float label = -1, numeric[2], ref_label = -1, ref_numeric[2];
    int64_t ids[2], ref_ids[2];
    absl::Status s = parser.Parse(record, &label, numeric, ids);
    // The wire walk agrees with protobuf's parser, the reference.
    absl::Status ref = parser.Parse(record, &ref_label, ref_numeric, ref_ids, nullptr, /*protobuf_only=*/true);
    Check(s == ref);
    if (s.ok()) {
      Check(label == ref_label && ids[0] == ref_ids[0] && ids[1] == ref_ids[1]);
      Check(numeric[0] == ref_numeric[0] && numeric[1] == ref_numeric[1]);
    }
    if (!s.ok()) {
      Check(s.code() == absl::StatusCode::kInvalidArgument && s.message().size() < 512);
      continue;
    }
    Check(label == 0.0f || label == 1.0f);
    for (float x : numeric) Check(std::isfinite(x) && x >= 0.0f);
    for (int c = 0; c < 2; ++c) Check(ids[c] >= 0 && ids[c] < tables[c]);
  }

  // The same records with C2 a weighted bag: the wire walk's lists against protobuf's.
  pstrain::TfExampleFeatureSpec bag_features = features;
  bag_features.bags.resize(2);
  bag_features.bags[1] = pstrain::TfExampleBagSpec{"mean", "W", 16};
  pstrain::TfExampleCtrParser bag_parser(bag_features, tables);
  for (const std::string& record : whole.records) {
    float label = -1, numeric[2], ref_label = -1, ref_numeric[2];
    int64_t ids[2], ref_ids[2];
    std::vector<pstrain::IdBags> bags = pstrain::MakeBagColumns(bag_features), ref_bags = bags;
    absl::Status s = bag_parser.Parse(record, &label, numeric, ids, &bags);
    absl::Status ref = bag_parser.Parse(record, &ref_label, ref_numeric, ref_ids, &ref_bags, /*protobuf_only=*/true);
    Check(s == ref);
    Check(bags[0].offsets == ref_bags[0].offsets && bags[0].ids == ref_bags[0].ids);
    Check(bags[0].weights == ref_bags[0].weights);
    if (!s.ok()) {
      Check(bags[0].offsets.size() == 1);  // nothing of a bad record appended
      continue;
    }
    Check(bags[0].offsets.size() == 2 && bags[0].offsets[1] <= 16);
    Check(bags[0].weights.size() == bags[0].ids.size());
    for (int64_t id : bags[0].ids) Check(id >= 0 && id < tables[1]);
    for (float w : bags[0].weights) Check(std::isfinite(w) && w >= 0.0f);
  }
  return 0;
}
