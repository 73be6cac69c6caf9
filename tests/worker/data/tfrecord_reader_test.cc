// TFRecord of tf.Example: CRC-32C against published vectors (SSE4.2 and table), framing round
// trips across chunk sizes, each class of bad record with its message (file and record named),
// gzip files, the feature mapping and its errors (feature named; skip mode counts), parts, and
// the same CtrData as the Criteo TSV reader for the same examples.
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/data/data_files.h"
#include "proto/example.pb.h"
#include "worker/data/crc32c.h"
#include "worker/data/criteo_reader.h"
#include "worker/data/tf_example_ctr.h"
#include "worker/data/tfrecord_reader.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

std::string TestDir() { return pstrain::TestDir("tfrecord"); }

// RFC 3720 (iSCSI) appendix B.4 and the common check value of "123456789".
TEST(Crc32c, PublishedVectors) {
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  for (int i = 31; i >= 0; --i) descending.push_back(static_cast<char>(i));
  const std::vector<std::pair<std::string, uint32_t>> vectors = {
      {std::string(32, '\0'), 0x8A9136AAu}, {std::string(32, '\xff'), 0x62A8AB43u},
      {ascending, 0x46DD794Eu},             {descending, 0x113FDB5Cu},
      {"123456789", 0xE3069283u},           {"", 0u}};
  for (const auto& [data, crc] : vectors) {
    EXPECT_EQ(Crc32c(data), crc) << data.size();
    EXPECT_EQ(Crc32cExtendPortable(0, data), crc) << data.size();
  }
}

TEST(Crc32c, ExtendEqualsWholeAndMaskInverts) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{500}, data.size()}) {
    EXPECT_EQ(Crc32cExtend(Crc32c(data.substr(0, cut)), data.substr(cut)), Crc32c(data)) << cut;
    EXPECT_EQ(Crc32cExtendPortable(Crc32cExtendPortable(0, data.substr(0, cut)), data.substr(cut)), Crc32c(data));
  }
  for (uint32_t crc : {0u, 1u, 0xffffffffu, Crc32c(data)}) {
    EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(crc)), crc);
    EXPECT_NE(MaskCrc32c(crc), crc);
  }
  EXPECT_EQ(MaskCrc32c(0), 0xa282ead8u);
}

std::vector<std::string> SampleRecords() {
  return {"", "a", std::string(11, 'x'), std::string(12, 'y'), std::string(5000, '\x9c'), "last"};
}

// Feeds `bytes` in chunks of `chunk` and returns the records (or the error).
absl::StatusOr<std::vector<std::string>> ParseInChunks(const std::string& bytes, size_t chunk,
                                                       int64_t max_record_bytes = kDefaultMaxTfRecordBytes) {
  TfRecordParser parser(max_record_bytes);
  parser.BeginFile("mem.tfrecord");
  std::vector<std::string> out;
  auto on_record = [&](const TfRecord& r) {
    if (!r.checksum_ok) return absl::DataLossError(absl::StrCat("record ", r.index, " checksum"));
    EXPECT_EQ(r.index, static_cast<int64_t>(out.size()));
    out.emplace_back(r.data);
    return absl::OkStatus();
  };
  for (size_t i = 0; i < bytes.size(); i += chunk) {
    absl::Status s = parser.Feed(absl::string_view(bytes).substr(i, chunk), on_record);
    if (!s.ok()) return s;
  }
  absl::Status s = parser.EndFile();
  if (!s.ok()) return s;
  return out;
}

TEST(TfRecordFraming, RoundTripInAnyChunks) {
  std::string file;
  for (const std::string& r : SampleRecords()) file += FrameTfRecord(r);
  EXPECT_EQ(FrameTfRecord("").size(), 16u);
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{12}, size_t{13}, size_t{4096}, file.size()}) {
    absl::StatusOr<std::vector<std::string>> got = ParseInChunks(file, chunk);
    ASSERT_TRUE(got.ok()) << chunk << ": " << got.status();
    EXPECT_EQ(*got, SampleRecords()) << chunk;
  }
}

TEST(TfRecordFraming, PlainAndGzipFilesReadTheSame) {
  const std::string dir = TestDir();
  std::string file;
  for (const std::string& r : SampleRecords()) file += FrameTfRecord(r);
  WriteFile(dir + "/plain.tfrecord", file);
  WriteFile(dir + "/zipped.tfrecord.gz", file, /*gzip=*/true);
  for (const char* name : {"/plain.tfrecord", "/zipped.tfrecord.gz"}) {
    std::vector<std::string> got;
    ASSERT_TRUE(ReadTfRecordFile(dir + name, kDefaultMaxTfRecordBytes, [&](const TfRecord& r) {
                  EXPECT_TRUE(r.checksum_ok);
                  got.emplace_back(r.data);
                  return absl::OkStatus();
                }).ok());
    EXPECT_EQ(got, SampleRecords()) << name;
    EXPECT_EQ(*CountTfRecords(dir + name), 6) << name;
  }
}

TEST(TfRecordBadInput, LengthChecksumMismatchNamesFileAndRecord) {
  std::string file = FrameTfRecord("first") + FrameTfRecord("second");
  file[FrameTfRecord("first").size() + 9] ^= 1;  // the second record's length CRC
  absl::StatusOr<std::vector<std::string>> got = ParseInChunks(file, 5);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("TFRecord file mem.tfrecord, record 1: the checksum of the record's length"));
}

TEST(TfRecordBadInput, CorruptLengthCannotAllocateUnbounded) {
  // A length field of 2^62 with a valid CRC: refused at once, nothing of that size held.
  std::string header;
  const uint64_t length = uint64_t{1} << 62;
  for (int i = 0; i < 8; ++i) header.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  const uint32_t masked = MaskCrc32c(Crc32c(header));
  for (int i = 0; i < 4; ++i) header.push_back(static_cast<char>((masked >> (8 * i)) & 0xff));
  absl::StatusOr<std::vector<std::string>> got = ParseInChunks(FrameTfRecord("ok") + header + "data", 7);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("record 1: the record claims 4611686018427387904 bytes, more than"));
  // A lower limit applies the same way.
  got = ParseInChunks(FrameTfRecord(std::string(100, 'z')), 1000, /*max_record_bytes=*/99);
  EXPECT_THAT(got.status().message(), HasSubstr("record 0: the record claims 100 bytes, more than the limit of 99"));
}

TEST(TfRecordBadInput, TruncatedFileNamesTheRecordAndBytes) {
  const std::string file = FrameTfRecord("one") + FrameTfRecord("two-two");
  const size_t first = FrameTfRecord("one").size();
  absl::StatusOr<std::vector<std::string>> got = ParseInChunks(file.substr(0, first + 5), 4);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("record 1: the file is truncated: it ends after 5 bytes"));
  got = ParseInChunks(file.substr(0, file.size() - 1), 4);
  EXPECT_THAT(got.status().message(), HasSubstr("record 1: the file is truncated: it ends after 22 bytes of the "
                                                "record, which needs 23"));
  // A gzip file cut short is DataLoss from zlib, naming the file.
  const std::string dir = TestDir();
  std::string zipped;
  WriteFile(dir + "/whole.gz", file, true);
  std::ifstream in(dir + "/whole.gz", std::ios::binary);
  zipped.assign(std::istreambuf_iterator<char>(in), {});
  WriteFile(dir + "/cut.gz", zipped.substr(0, zipped.size() - 6));
  absl::StatusOr<int64_t> count = CountTfRecords(dir + "/cut.gz");
  ASSERT_EQ(count.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(count.status().message(), HasSubstr(dir + "/cut.gz"));
}

TEST(TfRecordBadInput, DataChecksumMismatchIsMarked) {
  std::string file = FrameTfRecord("good") + FrameTfRecord("flipped") + FrameTfRecord("after");
  file[FrameTfRecord("good").size() + 12 + 2] ^= 0x40;
  TfRecordParser parser;
  parser.BeginFile("f");
  std::vector<bool> ok;
  ASSERT_TRUE(parser.Feed(file, [&](const TfRecord& r) {
                      ok.push_back(r.checksum_ok);
                      return absl::OkStatus();
                    }).ok());
  EXPECT_TRUE(parser.EndFile().ok());
  EXPECT_EQ(ok, (std::vector<bool>{true, false, true}));
}

// --- tf.Example to CTR examples ---

tfexample::Example MakeExample(int64_t label, std::vector<float> numeric, std::vector<int64_t> ids) {
  tfexample::Example e;
  auto* map = e.mutable_features()->mutable_feature();
  (*map)["label"].mutable_int64_list()->add_value(label);
  for (size_t i = 0; i < numeric.size(); ++i) {
    (*map)[absl::StrCat("I", i + 1)].mutable_float_list()->add_value(numeric[i]);
  }
  for (size_t c = 0; c < ids.size(); ++c) (*map)[absl::StrCat("C", c + 1)].mutable_int64_list()->add_value(ids[c]);
  return e;
}

TfExampleFeatureSpec SmallFeatures() { return {"label", {"I1", "I2"}, {"C1", "C2", "C3"}, {}}; }
const std::vector<int64_t> kTables = {1000, 7, int64_t{1} << 40};

TfRecordCtrOptions SmallOptions(std::vector<std::string> files) {
  TfRecordCtrOptions o;
  o.files_or_globs = std::move(files);
  o.features = SmallFeatures();
  o.table_sizes = kTables;
  o.max_example_bytes = 1 << 20;
  return o;
}

TEST(TfExampleCtr, SameCtrDataAsCriteoTsv) {
  const std::string dir = TestDir();
  // The same three examples as Criteo TSV (hex ids) and as tf.Example (ids as int64 int(hex, 16)).
  const std::string tsv = "1\t5\t0\t1f\t1a\t2540be3ff\n0\t-3\t1000\t0\t6\t10000000001\n1\t\t2\tffff\t0\t0\n";
  std::string records;
  records += FrameTfRecord(MakeExample(1, {5, 0}, {0x1f, 0x1a, 0x2540be3ff}).SerializeAsString());
  records += FrameTfRecord(MakeExample(0, {-3, 1000}, {0, 6, 0x10000000001}).SerializeAsString());
  records += FrameTfRecord(MakeExample(1, {0, 2}, {0xffff, 0, 0}).SerializeAsString());
  WriteFile(dir + "/d.tsv", tsv);
  WriteFile(dir + "/d.tfrecord", records);
  CriteoOptions criteo;
  criteo.files_or_globs = {dir + "/d.tsv"};
  criteo.num_numeric = 2;
  criteo.num_categorical = 3;
  criteo.table_sizes = kTables;
  absl::StatusOr<CtrData> want = ReadCriteo(criteo);
  absl::StatusOr<CtrData> got = ReadTfRecordCtr(nullptr, SmallOptions({dir + "/d.tfrecord"}));
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size, 3);
  EXPECT_EQ(got->labels, want->labels);
  EXPECT_EQ(got->numeric, want->numeric);
  EXPECT_EQ(got->ids, want->ids);
  EXPECT_EQ(got->ids[2], 0x2540be3ff);
  EXPECT_EQ(got->ids[0], 0x1f % 1000);
  EXPECT_EQ(got->ids[1], 0x1a % 7);
}

TEST(TfExampleCtr, BytesIdsAreFnv1aHashedAndNegativeIdsUnsigned) {
  EXPECT_EQ(Fnv1a64(""), 14695981039346656037ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);  // FNV's published value for "a"
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
  tfexample::Example e = MakeExample(0, {1, 2}, {-1, 3, 4});
  (*e.mutable_features()->mutable_feature())["C2"].mutable_bytes_list()->add_value("foobar");
  float label, numeric[2];
  int64_t ids[3];
  ASSERT_TRUE(ParseTfExampleCtr(e.SerializeAsString(), SmallFeatures(), kTables, &label, numeric, ids).ok());
  EXPECT_EQ(ids[0], static_cast<int64_t>(~uint64_t{0} % 1000));
  EXPECT_EQ(ids[1], static_cast<int64_t>(0x85944171f73967e8ull % 7));
  (*e.mutable_features()->mutable_feature())["C2"].mutable_bytes_list()->set_value(0, "");
  ASSERT_TRUE(ParseTfExampleCtr(e.SerializeAsString(), SmallFeatures(), kTables, &label, numeric, ids).ok());
  EXPECT_EQ(ids[1], 0);
}

// Table size 0 (a dynamic table): int64 ids as they are (negative too), bytes as FNV-1a 64 read
// as int64 (the hash computed independently: FNV-1a 64 of "abc" is 0xe71fa2190541574b); an empty
// bytes id is 0. A fixed table beside it still hashes.
TEST(TfExampleCtr, DynamicTablesKeepIdsWhole) {
  const std::vector<int64_t> tables = {0, 0, 7};
  tfexample::Example e = MakeExample(1, {1, 2}, {-5, 0, 10});
  (*e.mutable_features()->mutable_feature())["C1"].mutable_int64_list()->set_value(0, -5);
  (*e.mutable_features()->mutable_feature())["C2"].mutable_bytes_list()->add_value("abc");
  float label, numeric[2];
  int64_t ids[3];
  for (bool protobuf_only : {false, true}) {
    TfExampleCtrParser parser(SmallFeatures(), tables);
    ASSERT_TRUE(parser.Parse(e.SerializeAsString(), &label, numeric, ids, nullptr, protobuf_only).ok());
    EXPECT_EQ(ids[0], -5);
    EXPECT_EQ(ids[1], static_cast<int64_t>(0xe71fa2190541574bull));
    EXPECT_LT(ids[1], 0);
    EXPECT_EQ(ids[2], 10 % 7);
  }
  (*e.mutable_features()->mutable_feature())["C1"].mutable_int64_list()->set_value(0, int64_t{1} << 62);
  (*e.mutable_features()->mutable_feature())["C2"].mutable_bytes_list()->set_value(0, "");
  ASSERT_TRUE(ParseTfExampleCtr(e.SerializeAsString(), SmallFeatures(), tables, &label, numeric, ids).ok());
  EXPECT_EQ(ids[0], int64_t{1} << 62);
  EXPECT_EQ(ids[1], 0);
  // A negative size is refused; 0 reads the files.
  TfRecordCtrOptions options = SmallOptions({"/nonexistent.tfrecord"});
  options.table_sizes = {0, -1, 0};
  EXPECT_THAT(ReadTfRecordCtr(nullptr, options).status().message(), HasSubstr("a table of -1 rows"));
}

std::string MappingError(const tfexample::Example& e) {
  float label, numeric[2];
  int64_t ids[3];
  return std::string(
      ParseTfExampleCtr(e.SerializeAsString(), SmallFeatures(), kTables, &label, numeric, ids).message());
}

TEST(TfExampleCtr, EachMappingErrorNamesTheFeature) {
  const tfexample::Example good = MakeExample(1, {1, 2}, {3, 4, 5});
  EXPECT_EQ(MappingError(good), "");
  tfexample::Example e = good;
  e.mutable_features()->mutable_feature()->erase("I2");
  EXPECT_THAT(MappingError(e), HasSubstr("feature \"I2\" (a numeric input) is missing"));
  e = good;
  (*e.mutable_features()->mutable_feature())["C1"].mutable_float_list()->add_value(3);
  EXPECT_THAT(MappingError(e), HasSubstr("feature \"C1\" (a categorical id) is a float_list; want int64_list or bytes_list"));
  e = good;
  (*e.mutable_features()->mutable_feature())["label"].mutable_bytes_list()->add_value("1");
  EXPECT_THAT(MappingError(e), HasSubstr("feature \"label\" (the label) is a bytes_list; want int64_list or float_list"));
  e = good;
  (*e.mutable_features()->mutable_feature())["C3"].mutable_int64_list()->add_value(9);
  EXPECT_THAT(MappingError(e), HasSubstr("feature \"C3\" (a categorical id) has 2 values; want exactly 1"));
  e = good;
  (*e.mutable_features()->mutable_feature())["I1"].mutable_float_list()->Clear();
  EXPECT_THAT(MappingError(e), HasSubstr("feature \"I1\" (a numeric input) has 0 values"));
  e = good;
  (*e.mutable_features()->mutable_feature())["label"].mutable_int64_list()->set_value(0, 2);
  EXPECT_THAT(MappingError(e), HasSubstr("feature \"label\" (the label) is 2; want 0 or 1"));
  e = good;
  (*e.mutable_features()->mutable_feature())["I1"].mutable_float_list()->set_value(0, std::nanf(""));
  EXPECT_THAT(MappingError(e), HasSubstr("feature \"I1\" (a numeric input) is nan"));
  e = good;
  (*e.mutable_features()->mutable_feature())["C2"] = tfexample::Feature();  // no list at all
  EXPECT_THAT(MappingError(e), HasSubstr("feature \"C2\" (a categorical id) is empty (no list)"));
  float label, numeric[2];
  int64_t ids[3];
  EXPECT_THAT(ParseTfExampleCtr("\xff\xff\xff", SmallFeatures(), kTables, &label, numeric, ids).message(),
              HasSubstr("the record is not a tf.Example"));
}

// The wire walk against protobuf's parser (the reference): the same status and values for valid
// examples in every encoding protobuf accepts, and for many random corruptions of them.
void ExpectSameAsProtobuf(TfExampleCtrParser& parser, const std::string& bytes, const std::string& what) {
  float label[2] = {-1, -1}, numeric[2][2] = {};
  int64_t ids[2][3] = {};
  absl::Status fast = parser.Parse(bytes, &label[0], numeric[0], ids[0]);
  absl::Status slow = parser.Parse(bytes, &label[1], numeric[1], ids[1], nullptr, /*protobuf_only=*/true);
  ASSERT_EQ(fast, slow) << what;
  if (!fast.ok()) return;
  EXPECT_EQ(label[0], label[1]) << what;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(numeric[0][i], numeric[1][i]) << what;
  for (int c = 0; c < 3; ++c) EXPECT_EQ(ids[0][c], ids[1][c]) << what;
}

TEST(TfExampleCtr, WireWalkAgreesWithProtobuf) {
  TfExampleCtrParser parser(SmallFeatures(), kTables);
  tfexample::Example e = MakeExample(1, {3.5f, 0}, {-5, 6, int64_t{1} << 50});
  auto& map = *e.mutable_features()->mutable_feature();
  map["C2"].mutable_bytes_list()->add_value("a b");
  map["unwanted"].mutable_float_list()->add_value(1);
  map["I2"].mutable_int64_list()->add_value(12);  // I2 as int64 (replaces the float list)
  const std::string good = e.SerializeAsString();
  ExpectSameAsProtobuf(parser, good, "good");
  // The wire walk decides such records itself (protobuf is the fallback, not the common path).
  FeatureSlots slots{{"label", 0}, {"C2", 1}, {"I2", 2}};
  std::vector<FeatureView> views;
  ASSERT_TRUE(FastFeatureViews(good, slots, &views));
  EXPECT_EQ(views[0].kind, FeatureView::kInt64);
  EXPECT_EQ(views[0].int64_value, 1);
  EXPECT_EQ(views[1].bytes_value, "a b");
  EXPECT_EQ(views[2].int64_value, 12);
  EXPECT_FALSE(FastFeatureViews(good + "\x0a\x00", slots, &views));  // a second Features: left to protobuf
  // Encodings protobuf accepts that writers rarely use: an unpacked float and int64, a duplicate
  // key (the later wins), unknown fields at every level.
  const std::string unpacked_float = std::string("\x0a\x0d") + "\x0a\x02" "I1" "\x12\x07\x12\x05\x0d" + std::string("\x00\x00\x80\x3f", 4);
  const std::string unpacked_int = std::string("\x0a\x0a") + "\x0a\x02" "C1" "\x12\x04\x1a\x02\x08\x07";
  const std::string unknowns = std::string("\x0a\x10") + "\x0a\x02" "C3" "\x18\x05" +
                               "\x12\x08\x1a\x04\x08\x09\x10\x01\x28\x02";
  for (const std::string& extra : {unpacked_float, unpacked_int, unknowns}) {
    // Appended inside Features: a second Features field would merge, so rebuild one Features.
    std::string features = e.features().SerializeAsString() + extra;
    std::string bytes = "\x0a" + std::string(1, static_cast<char>(features.size() & 0x7f)) +
                        std::string(1, static_cast<char>(features.size() >> 7)) + features;
    bytes[1] = static_cast<char>((features.size() & 0x7f) | 0x80);
    ExpectSameAsProtobuf(parser, bytes, "extra");
    ExpectSameAsProtobuf(parser, bytes + "\x10\x01", "unknown field in Example");
  }
  // Random corruptions: flipped, dropped and inserted bytes.
  uint64_t state = 42;
  auto next = [&state] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  for (int i = 0; i < 20000; ++i) {
    std::string bytes = good;
    for (int k = 0, n = 1 + static_cast<int>(next() % 3); k < n; ++k) {
      const size_t at = next() % bytes.size();
      switch (next() % 3) {
        case 0:
          bytes[at] = static_cast<char>(next());
          break;
        case 1:
          bytes.erase(at, 1);
          break;
        default:
          bytes.insert(at, 1, static_cast<char>(next()));
      }
    }
    ExpectSameAsProtobuf(parser, bytes, absl::StrCat("mutation ", i));
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(TfExampleCtr, BadRecordsNameFileRecordAndFeatureOrAreSkippedAndCounted) {
  const std::string dir = TestDir();
  tfexample::Example missing = MakeExample(1, {1, 2}, {3, 4, 5});
  missing.mutable_features()->mutable_feature()->erase("C2");
  std::string corrupt = FrameTfRecord(MakeExample(0, {1, 1}, {1, 1, 1}).SerializeAsString());
  corrupt[14] ^= 0x10;
  const std::string file = FrameTfRecord(MakeExample(1, {1, 2}, {3, 4, 5}).SerializeAsString()) +
                           FrameTfRecord(missing.SerializeAsString()) + FrameTfRecord("not a proto \xff\xff") +
                           corrupt + FrameTfRecord(MakeExample(0, {7, 8}, {9, 9, 9}).SerializeAsString());
  WriteFile(dir + "/bad.tfrecord", file);
  TfRecordCtrOptions options = SmallOptions({dir + "/bad.tfrecord"});
  absl::StatusOr<CtrData> got = ReadTfRecordCtr(nullptr, options);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(),
              HasSubstr(absl::StrCat("TFRecord file ", dir, "/bad.tfrecord, record 1: feature \"C2\" (a categorical id) is missing")));
  options.skip_bad_records = true;
  got = ReadTfRecordCtr(nullptr, options);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size, 2);
  EXPECT_EQ(got->labels, (std::vector<float>{1, 0}));
  EXPECT_EQ(got->bad_lines_skipped, 3);
  EXPECT_THAT(got->first_bad_line, HasSubstr("record 1: feature \"C2\""));
  // The unparsable and the corrupt record, when first.
  WriteFile(dir + "/bad2.tfrecord", FrameTfRecord("not a proto \xff\xff") + corrupt);
  options.files_or_globs = {dir + "/bad2.tfrecord"};
  options.skip_bad_records = false;
  EXPECT_THAT(ReadTfRecordCtr(nullptr, options).status().message(), HasSubstr("record 0: the record is not a tf.Example"));
  WriteFile(dir + "/bad3.tfrecord", corrupt);
  options.files_or_globs = {dir + "/bad3.tfrecord"};
  absl::Status s = ReadTfRecordCtr(nullptr, options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("record 0: the checksum of the record's data does not match"));
}

TEST(TfExampleCtr, PartsAreDisjointAndCoverByFileOrByRecord) {
  const std::string dir = TestDir();
  int label = 0;
  for (int f = 0; f < 3; ++f) {  // 3 files of 4 records; numeric I1 numbers the records 0..11
    std::string records;
    for (int r = 0; r < 4; ++r, ++label) {
      records += FrameTfRecord(MakeExample(label % 2, {static_cast<float>(label), 0}, {1, 2, 3}).SerializeAsString());
    }
    WriteFile(absl::StrCat(dir, "/part-", f, ".tfrecord"), records, /*gzip=*/f == 1);
  }
  for (int num_parts : {1, 2, 3, 5}) {
    std::vector<float> all;
    for (int part = 0; part < num_parts; ++part) {
      TfRecordCtrOptions options = SmallOptions({dir + "/part-*.tfrecord"});
      options.part = part;
      options.num_parts = num_parts;
      absl::StatusOr<CtrData> got = ReadTfRecordCtr(nullptr, options);
      ASSERT_TRUE(got.ok()) << got.status();
      for (int64_t i = 0; i < got->size; ++i) all.push_back(got->numeric[2 * i]);
    }
    std::sort(all.begin(), all.end());
    ASSERT_EQ(all.size(), 12u) << num_parts;
    for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(all[i], std::log1p(static_cast<float>(i))) << num_parts;
  }
}

TEST(TfExampleCtr, MemoryBudgetAndMissingFiles) {
  const std::string dir = TestDir();
  std::string records;
  for (int r = 0; r < 10; ++r) records += FrameTfRecord(MakeExample(1, {1, 2}, {3, 4, 5}).SerializeAsString());
  WriteFile(dir + "/d.tfrecord", records);
  TfRecordCtrOptions options = SmallOptions({dir + "/d.tfrecord"});
  options.max_example_bytes = 5 * (4 + 8 + 24);  // five examples fit
  absl::Status s = ReadTfRecordCtr(nullptr, options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("record 5: the examples read so far pass the memory budget"));
  options.files_or_globs = {dir + "/nothing-*.tfrecord"};
  EXPECT_EQ(ReadTfRecordCtr(nullptr, options).status().code(), absl::StatusCode::kNotFound);
  options.files_or_globs = {dir + "/d.tfrecord"};
  options.table_sizes = {1, 2};
  EXPECT_THAT(ReadTfRecordCtr(nullptr, options).status().message(), HasSubstr("3 categorical features for 2 tables"));
}

}  // namespace
}  // namespace pstrain
