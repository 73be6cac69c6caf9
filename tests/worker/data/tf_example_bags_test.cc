// Bag (multi-hot) features of tf.Example: int64 and bytes bags with and without weights read into
// CSR columns, the wire walk against protobuf's parser for bag records (encodings and random
// corruptions), each bad bag named with file, record and feature, skip-and-count leaving no part
// of a skipped record behind, and the bags counted in the memory budget.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/example.pb.h"
#include "tests/worker/data/data_files.h"
#include "worker/data/shard_iterator.h"
#include "worker/data/tf_example_ctr.h"
#include "worker/data/tfrecord_reader.h"
#include "worker/step/batch.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

// label, C1 (one id), tags (int64 bag, mean, weights tag_w), words (bytes bag, sum).
TfExampleFeatureSpec BagFeatures() {
  TfExampleFeatureSpec f{"label", {}, {"C1", "tags", "words"}, {}};
  f.bags.resize(3);
  f.bags[1] = TfExampleBagSpec{"mean", "tag_w", 4};
  f.bags[2] = TfExampleBagSpec{"sum", "", 8};
  return f;
}
const std::vector<int64_t> kTables = {100, 10, 1000};

tfexample::Example MakeExample(int64_t label, int64_t c1, std::vector<int64_t> tags, std::vector<float> weights,
                               std::vector<std::string> words) {
  tfexample::Example e;
  auto& map = *e.mutable_features()->mutable_feature();
  map["label"].mutable_int64_list()->add_value(label);
  map["C1"].mutable_int64_list()->add_value(c1);
  for (int64_t t : tags) map["tags"].mutable_int64_list()->add_value(t);
  for (float w : weights) map["tag_w"].mutable_float_list()->add_value(w);
  for (const std::string& w : words) map["words"].mutable_bytes_list()->add_value(w);
  return e;
}

int64_t Hashed(const std::string& word) { return word.empty() ? 0 : static_cast<int64_t>(Fnv1a64(word) % 1000); }

TEST(TfExampleBags, ReadIntoCsrColumns) {
  const std::string dir = TestDir("tfbags");
  std::string records;
  records += FrameTfRecord(MakeExample(1, 7, {3, 13, 3}, {0.5f, 1.f, 2.f}, {"a", "bc"}).SerializeAsString());
  records += FrameTfRecord(MakeExample(0, 205, {}, {}, {}).SerializeAsString());  // empty bags (missing features)
  records += FrameTfRecord(MakeExample(1, 1, {-1}, {0.f}, {""}).SerializeAsString());
  WriteFile(dir + "/b.tfrecord", records);
  TfRecordCtrOptions o;
  o.files_or_globs = {dir + "/b.tfrecord"};
  o.features = BagFeatures();
  o.table_sizes = kTables;
  o.max_example_bytes = 1 << 20;
  absl::StatusOr<CtrData> got = ReadTfRecordCtr(nullptr, o);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size, 3);
  EXPECT_EQ(got->ids, (std::vector<int64_t>{7, 0, 0, 5, 0, 0, 1, 0, 0}));  // bag columns hold 0
  ASSERT_EQ(got->bags.size(), 2u);
  const IdBags& tags = got->bags[0];
  EXPECT_EQ(tags.field, 1);
  EXPECT_EQ(tags.offsets, (std::vector<int64_t>{0, 3, 3, 4}));
  EXPECT_EQ(tags.ids, (std::vector<int64_t>{3, 3, 3, static_cast<int64_t>(~uint64_t{0} % 10)}));
  EXPECT_EQ(tags.weights, (std::vector<float>{0.5f, 1.f, 2.f, 0.f}));
  const IdBags& words = got->bags[1];
  EXPECT_EQ(words.field, 2);
  EXPECT_EQ(words.offsets, (std::vector<int64_t>{0, 2, 2, 3}));
  EXPECT_EQ(words.ids, (std::vector<int64_t>{Hashed("a"), Hashed("bc"), 0}));
  EXPECT_TRUE(words.weights.empty());
  EXPECT_EQ(got->ExampleBytes(), 3 * (4 + 24) + tags.Bytes() + words.Bytes());
  EXPECT_EQ(tags.Bytes(), 8 * (4 + 4) + 4 * 4);
}

// Bags of a dynamic table (size 0) keep their ids whole: int64 as they are, bytes as FNV-1a 64
// read as int64 (values computed independently of Fnv1a64), an empty string 0.
TEST(TfExampleBags, DynamicTablesKeepBagIdsWhole) {
  TfExampleCtrParser parser(BagFeatures(), {100, 0, 0});
  std::vector<IdBags> bags = MakeBagColumns(BagFeatures());
  float label;
  int64_t ids[3];
  const tfexample::Example e = MakeExample(1, 205, {-1, 1000003}, {1.f, 2.f}, {"abc", "", "a"});
  for (bool protobuf_only : {false, true}) {
    ASSERT_TRUE(parser.Parse(e.SerializeAsString(), &label, nullptr, ids, &bags, protobuf_only).ok());
  }
  EXPECT_EQ(ids[0], 205 % 100);
  ASSERT_EQ(bags.size(), 2u);
  EXPECT_EQ(bags[0].ids, (std::vector<int64_t>{-1, 1000003, -1, 1000003}));
  const std::vector<int64_t> words = {static_cast<int64_t>(0xe71fa2190541574bull), 0,
                                      static_cast<int64_t>(0xaf63dc4c8601ec8cull)};
  EXPECT_EQ(bags[1].ids, (std::vector<int64_t>{words[0], words[1], words[2], words[0], words[1], words[2]}));
}

std::string BagError(const tfexample::Example& e) {
  TfExampleCtrParser parser(BagFeatures(), kTables);
  std::vector<IdBags> bags = MakeBagColumns(BagFeatures());
  float label;
  int64_t ids[3];
  absl::Status s = parser.Parse(e.SerializeAsString(), &label, nullptr, ids, &bags);
  if (!s.ok()) {
    for (const IdBags& b : bags) EXPECT_EQ(b.offsets.size(), 1u) << "a bad record left a bag behind";
  }
  return std::string(s.message());
}

TEST(TfExampleBags, EachBadBagNamesTheFeature) {
  const tfexample::Example good = MakeExample(1, 2, {1, 2}, {1.f, 1.f}, {"x"});
  EXPECT_EQ(BagError(good), "");
  tfexample::Example e = good;
  (*e.mutable_features()->mutable_feature())["tags"].mutable_float_list()->add_value(1);
  EXPECT_THAT(BagError(e), HasSubstr("feature \"tags\" (a bag of ids) is a float_list; want int64_list or bytes_list"));
  e = MakeExample(1, 2, {1, 2}, {1.f}, {"x"});
  EXPECT_THAT(BagError(e),
              HasSubstr("feature \"tag_w\" (the weights of bag \"tags\") has 1 values for the bag's 2 ids"));
  e = MakeExample(1, 2, {1, 2}, {}, {"x"});
  EXPECT_THAT(BagError(e), HasSubstr("feature \"tag_w\" (the weights of bag \"tags\") has 0 values"));
  e = MakeExample(1, 2, {1, 2, 3, 4, 5}, {1, 1, 1, 1, 1}, {"x"});
  EXPECT_THAT(BagError(e), HasSubstr("feature \"tags\" (a bag of ids) has 5 values, more than its max_length 4"));
  e = MakeExample(1, 2, {1, 2}, {1.f, -0.5f}, {"x"});
  EXPECT_THAT(BagError(e), HasSubstr("has weight -0.5; weights must be finite and >= 0"));
  e = MakeExample(1, 2, {1, 2}, {1.f, std::nanf("")}, {"x"});
  EXPECT_THAT(BagError(e), HasSubstr("has weight nan"));
  e = good;
  (*e.mutable_features()->mutable_feature())["tag_w"].mutable_float_list()->Clear();
  (*e.mutable_features()->mutable_feature())["tag_w"].mutable_int64_list()->add_value(1);
  EXPECT_THAT(BagError(e),
              HasSubstr("feature \"tag_w\" (the weights of bag \"tags\") is an int64_list; want float_list"));
  // A bad record after a good bag field: nothing of it is appended (checked in BagError).
  e = good;
  (*e.mutable_features()->mutable_feature())["label"].mutable_int64_list()->set_value(0, 3);
  EXPECT_THAT(BagError(e), HasSubstr("feature \"label\""));
}

TEST(TfExampleBags, BadRecordsNameFileAndRecordOrAreSkippedAndCounted) {
  const std::string dir = TestDir("tfbags");
  const std::string file = FrameTfRecord(MakeExample(1, 2, {1}, {1.f}, {"x"}).SerializeAsString()) +
                           FrameTfRecord(MakeExample(1, 2, {1, 2}, {1.f}, {"x"}).SerializeAsString()) +
                           FrameTfRecord(MakeExample(0, 3, {4, 5}, {2.f, 3.f}, {}).SerializeAsString());
  WriteFile(dir + "/bad.tfrecord", file);
  TfRecordCtrOptions o;
  o.files_or_globs = {dir + "/bad.tfrecord"};
  o.features = BagFeatures();
  o.table_sizes = kTables;
  o.max_example_bytes = 1 << 20;
  absl::StatusOr<CtrData> got = ReadTfRecordCtr(nullptr, o);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(),
              HasSubstr(absl::StrCat("TFRecord file ", dir, "/bad.tfrecord, record 1: feature \"tag_w\"")));
  o.skip_bad_records = true;
  got = ReadTfRecordCtr(nullptr, o);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size, 2);
  EXPECT_EQ(got->bad_lines_skipped, 1);
  EXPECT_EQ(got->bags[0].offsets, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(got->bags[0].ids, (std::vector<int64_t>{1, 4, 5}));
  EXPECT_EQ(got->bags[0].weights, (std::vector<float>{1.f, 2.f, 3.f}));
  EXPECT_EQ(got->bags[1].offsets, (std::vector<int64_t>{0, 1, 1}));
  // The bags count in the memory budget: 2 examples of 28 fixed bytes fit, their bags do not.
  o.max_example_bytes = 2 * 28 + 8;
  o.skip_bad_records = true;
  EXPECT_EQ(ReadTfRecordCtr(nullptr, o).status().code(), absl::StatusCode::kResourceExhausted);
}

// Fast path and protobuf agree on bag records: status, ids and weights.
void ExpectSameAsProtobuf(const std::string& bytes, const std::string& what) {
  TfExampleCtrParser parser(BagFeatures(), kTables);
  std::vector<IdBags> fast_bags = MakeBagColumns(BagFeatures()), slow_bags = fast_bags;
  float label[2] = {-1, -1};
  int64_t ids[2][3] = {};
  absl::Status fast = parser.Parse(bytes, &label[0], nullptr, ids[0], &fast_bags);
  absl::Status slow = parser.Parse(bytes, &label[1], nullptr, ids[1], &slow_bags, /*protobuf_only=*/true);
  ASSERT_EQ(fast, slow) << what;
  if (!fast.ok()) return;
  EXPECT_EQ(label[0], label[1]) << what;
  for (int c = 0; c < 3; ++c) EXPECT_EQ(ids[0][c], ids[1][c]) << what;
  for (size_t k = 0; k < fast_bags.size(); ++k) {
    EXPECT_EQ(fast_bags[k].offsets, slow_bags[k].offsets) << what;
    EXPECT_EQ(fast_bags[k].ids, slow_bags[k].ids) << what;
    EXPECT_EQ(fast_bags[k].weights, slow_bags[k].weights) << what;
  }
}

TEST(TfExampleBags, WireWalkAgreesWithProtobuf) {
  const tfexample::Example e = MakeExample(1, 2, {5, -7, 1 << 30, 3}, {0.5f, 1.f, 0.f, 4.f}, {"a", "", "long word"});
  const std::string good = e.SerializeAsString();
  ExpectSameAsProtobuf(good, "good");
  FeatureSlots slots{{"tags", 0}, {"words", 1}};
  std::vector<FeatureView> views;
  ASSERT_TRUE(FastFeatureViews(good, slots, &views));
  std::vector<int64_t> ints;
  std::vector<absl::string_view> words;
  ASSERT_TRUE(ListValues(views[0].list, views[0].kind, &ints, nullptr, nullptr));
  ASSERT_TRUE(ListValues(views[1].list, views[1].kind, nullptr, nullptr, &words));
  EXPECT_EQ(ints, (std::vector<int64_t>{5, -7, 1 << 30, 3}));
  EXPECT_EQ(words, (std::vector<absl::string_view>{"a", "", "long word"}));
  // Unpacked int64 and float lists (protobuf accepts both encodings).
  const std::string unpacked_tags = std::string("\x0a\x0e") +
                                    "\x0a\x04"
                                    "tags"
                                    "\x12\x06\x1a\x04\x08\x03\x08\x04";
  const std::string unpacked_w = std::string("\x0a\x15") +
                                 "\x0a\x05"
                                 "tag_w"
                                 "\x12\x0c\x12\x0a\x0d" +
                                 std::string("\x00\x00\x80\x3f", 4) + "\x0d" + std::string("\x00\x00\x00\x40", 4);
  tfexample::Example base = MakeExample(0, 1, {}, {}, {"z"});
  std::string features = base.features().SerializeAsString() + unpacked_tags + unpacked_w;
  std::string bytes = "\x0a" + std::string(1, static_cast<char>(features.size())) + features;
  ASSERT_LT(features.size(), 128u);
  ExpectSameAsProtobuf(bytes, "unpacked");
  {
    TfExampleCtrParser parser(BagFeatures(), kTables);
    std::vector<IdBags> bags = MakeBagColumns(BagFeatures());
    float label;
    int64_t ids[3];
    ASSERT_TRUE(parser.Parse(bytes, &label, nullptr, ids, &bags).ok());
    EXPECT_EQ(bags[0].ids, (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(bags[0].weights, (std::vector<float>{1.f, 2.f}));
  }
  uint64_t state = 7;
  auto next = [&state] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  for (int i = 0; i < 5000; ++i) {
    std::string m = good;
    for (int k = 0, n = 1 + static_cast<int>(next() % 3); k < n; ++k) {
      const size_t at = next() % m.size();
      switch (next() % 3) {
        case 0:
          m[at] = static_cast<char>(next());
          break;
        case 1:
          m.erase(at, 1);
          break;
        default:
          m.insert(at, 1, static_cast<char>(next()));
      }
    }
    ExpectSameAsProtobuf(m, absl::StrCat("mutation ", i));
    if (::testing::Test::HasFailure()) break;
  }
}

// Batches carry each example's bag with it: shuffled batches (ShardIterator), ranges (FillRange)
// and slices of a batch (SliceBatch, positions included) hold the bags of the examples they hold.
TEST(TfExampleBags, BatchesAndSlicesCarryTheExamplesBags) {
  auto data = std::make_shared<Dataset>();
  data->size = 7;
  data->example_shape = {1};
  data->ids_per_example = 2;
  IdBags bag;
  bag.field = 1;
  bag.offsets = {0};
  for (int e = 0; e < 7; ++e) {
    data->features.push_back(static_cast<float>(e));  // the example's index
    data->targets.push_back(0.f);
    data->ids.insert(data->ids.end(), {e, 0});
    for (int i = 0; i < e % 3; ++i) {  // example e: e % 3 ids 10 e + i, weighing e + i
      bag.ids.push_back(10 * e + i);
      bag.weights.push_back(static_cast<float>(e + i));
    }
    bag.offsets.push_back(static_cast<int64_t>(bag.ids.size()));
  }
  data->target_width = 1;
  data->bags.push_back(bag);
  auto expect_bags = [](const Batch& batch, const std::string& what) {
    ASSERT_EQ(batch.bags.size(), 1u) << what;
    const IdBags& b = batch.bags[0];
    EXPECT_EQ(b.field, 1) << what;
    ASSERT_EQ(b.examples(), batch.size()) << what;
    for (int64_t k = 0; k < batch.size(); ++k) {
      const int e = static_cast<int>(batch.inputs.data<float>()[k]);
      ASSERT_EQ(b.offsets[k + 1] - b.offsets[k], e % 3) << what << " example " << e;
      for (int i = 0; i < e % 3; ++i) {
        EXPECT_EQ(b.ids[b.offsets[k] + i], 10 * e + i) << what;
        EXPECT_EQ(b.weights[b.offsets[k] + i], static_cast<float>(e + i)) << what;
      }
    }
  };
  ShardIterator it(data, 0, 1, 3);
  Batch batch;
  for (int step = 0; step < 6; ++step) {  // past an epoch: reshuffled, reused buffers
    it.Next(3, &batch);
    expect_bags(batch, absl::StrCat("step ", step));
  }
  FillRange(*data, 2, 7, &batch);
  expect_bags(batch, "range");
  batch.bag_positions = {std::vector<int32_t>(batch.bags[0].ids.size())};
  for (size_t i = 0; i < batch.bag_positions[0].size(); ++i) batch.bag_positions[0][i] = static_cast<int32_t>(100 + i);
  Batch slice;
  SliceBatch(batch, 2, 4, &slice);  // examples 4 and 5: 1 and 2 ids, entries 2..4 of the range
  expect_bags(slice, "slice");
  EXPECT_EQ(slice.bag_positions, (std::vector<std::vector<int32_t>>{{102, 103, 104}}));
}

}  // namespace
}  // namespace pstrain
