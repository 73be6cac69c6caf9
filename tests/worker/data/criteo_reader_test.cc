// The Criteo TSV reader: field transforms and hashing, empty fields, gzip, globs of many files,
// disjoint and covering parts, each class of bad line (file:line and field named; skip mode
// counts), bounded lines and excerpts, huge hex ids, missing and truncated files.
#include "worker/data/criteo_reader.h"

#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/data/data_files.h"
#include "worker/data/criteo_parser.h"
#include "worker/data/ctr_dataset.h"
#include "worker/data/shard_iterator.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string TestDir() { return pstrain::TestDir("criteo"); }

// A small layout (2 numeric, 3 categorical fields) keeps lines readable.
CriteoFormat SmallFormat() {
  CriteoFormat f;
  f.num_numeric = 2;
  f.num_categorical = 3;
  f.table_sizes = {1000, 7, int64_t{1} << 40};
  return f;
}

CriteoOptions SmallOptions(std::vector<std::string> files) {
  CriteoOptions o;
  o.files_or_globs = std::move(files);
  o.num_numeric = 2;
  o.num_categorical = 3;
  o.table_sizes = {1000, 7, int64_t{1} << 40};
  return o;
}

// A Criteo line of the small layout whose third id is `n` (so lines can be told apart).
std::string Line(int label, int64_t n) { return absl::StrCat(label, "\t3\t\t1f\t\t", absl::Hex(n), "\n"); }

TEST(CriteoLineTest, TransformsAndHashesFields) {
  auto data =
      ParseCriteoBuffer("1\t0\t9\t3e8\t10\tdeadbeef\n0\t-1\t1000000\tFF\t6\t0\n", SmallFormat(), "f.txt", false);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->size, 2);
  EXPECT_EQ(data->labels, (std::vector<float>{1, 0}));
  EXPECT_FLOAT_EQ(data->numeric[0], 0.0f);
  EXPECT_FLOAT_EQ(data->numeric[1], std::log1p(9.0f));
  EXPECT_FLOAT_EQ(data->numeric[2], 0.0f);  // -1 -> max(x, 0) = 0
  EXPECT_FLOAT_EQ(data->numeric[3], static_cast<float>(std::log1p(1e6)));
  EXPECT_EQ(data->ids[0], 0x3e8 % 1000);
  EXPECT_EQ(data->ids[1], 0x10 % 7);
  EXPECT_EQ(data->ids[2], 0xdeadbeef);
  EXPECT_EQ(data->ids[3], 0xff % 1000);  // either case
  EXPECT_EQ(data->ids[4], 6);
  EXPECT_EQ(data->ids[5], 0);
}

TEST(CriteoLineTest, DecimalNumbersAreAccepted) {
  auto data = ParseCriteoBuffer("0\t2.5\t1e3\t\t\t\n0\t-3.5\t+4\t\t\t\n", SmallFormat(), "f", false);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_FLOAT_EQ(data->numeric[0], std::log1p(2.5f));
  EXPECT_FLOAT_EQ(data->numeric[1], static_cast<float>(std::log1p(1000.0)));
  EXPECT_FLOAT_EQ(data->numeric[2], 0.0f);
  EXPECT_FLOAT_EQ(data->numeric[3], std::log1p(4.0f));
}

TEST(CriteoLineTest, EmptyFieldsAreZeroAndCrlfAndLastLineWithoutNewline) {
  auto data = ParseCriteoBuffer("1\t\t\t\t\t\r\n0\t\t5\t\ta\t", SmallFormat(), "f", false);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->size, 2);
  EXPECT_EQ(data->numeric, (std::vector<float>{0, 0, 0, std::log1p(5.0f)}));
  EXPECT_EQ(data->ids, (std::vector<int64_t>{0, 0, 0, 0, 10 % 7, 0}));
}

TEST(CriteoLineTest, HugeHexIdsReduceExactlyModuloTheTable) {
  // Expected values from Python: int(h, 16) % size.
  CriteoFormat f = SmallFormat();
  f.table_sizes = {100000, 1000003, (int64_t{1} << 62) + ((int64_t{1} << 62) - 1)};
  const std::string h = "123456789abcdef0123456789abcdef0123456789";
  auto data = ParseCriteoBuffer(absl::StrCat("0\t\t\t", h, "\tffffffffffffffffff\t", h, "\n"), f, "f", false);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->ids[0], 74185);
  EXPECT_EQ(data->ids[1], 775604);
  EXPECT_EQ(data->ids[2], 245953088759125187);
  // 16 digits, all bits set, still exact: 2^64 - 1 mod 1000.
  auto full = ParseCriteoBuffer("0\t\t\tffffffffffffffff\t\t\n", SmallFormat(), "f", false);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->ids[0], static_cast<int64_t>(~uint64_t{0} % 1000));
}

// Table size 0 (a dynamic table) keeps ids whole: int(h, 16) as an int64 bit pattern, the low 64
// bits of a longer id (leading zeros change nothing); empty is 0. Expected values from Python.
TEST(CriteoLineTest, DynamicTablesKeepHexIdsWhole) {
  CriteoFormat f = SmallFormat();
  f.table_sizes = {0, 7, 0};
  auto data = ParseCriteoBuffer(
      "0\t\t\tdeadbeef\t10\tffffffffffffffff\n"
      "1\t\t\t123456789abcdef0123456789abcdef0123456789\t\t8000000000000000\n"
      "0\t\t\t0000000000000000000000ABC\t\t\n",
      f, "f", false);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->size, 3);
  EXPECT_EQ(data->ids[0], 0xdeadbeef);
  EXPECT_EQ(data->ids[1], 0x10 % 7);  // a fixed table beside it still hashes
  EXPECT_EQ(data->ids[2], -1);        // 2^64 - 1 read as int64
  EXPECT_EQ(data->ids[3], static_cast<int64_t>(0xabcdef0123456789ull));  // int(h, 16) % 2^64
  EXPECT_EQ(data->ids[5], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(data->ids[6], 0xabc);
  EXPECT_EQ(data->ids[8], 0);  // empty
  auto bad = ParseCriteoBuffer("0\t\t\t12g4\t\t\n", f, "f", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("C1"));
}

TEST(CriteoLineTest, MemoryIsExactlyTheColumns) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += Line(i % 2, i);
  auto data = ParseCriteoBuffer(text, SmallFormat(), "f", false);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->size, 5000);
  EXPECT_EQ(data->labels.capacity(), 5000u);
  EXPECT_EQ(data->numeric.capacity(), 2u * 5000);
  EXPECT_EQ(data->ids.capacity(), 3u * 5000);
  EXPECT_EQ(data->ExampleBytes(), 5000 * (4 + 4 * 2 + 8 * 3));
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(data->ids[3 * i + 2], i);
}

TEST(CriteoLineTest, FedInAnyChunksGivesTheSameExamples) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += Line(i % 2, i * 7919);
  text += "1\t4\t5\tab\tc\td";  // no final newline
  auto whole = ParseCriteoBuffer(text, SmallFormat(), "f", false);
  ASSERT_TRUE(whole.ok());
  for (size_t chunk : {1, 2, 7, 64, 1000}) {
    CriteoParser parser(SmallFormat(), {});
    parser.BeginFile("f");
    for (size_t at = 0; at < text.size(); at += chunk) {
      ASSERT_TRUE(parser.Feed(absl::string_view(text).substr(at, chunk)).ok());
    }
    ASSERT_TRUE(parser.EndFile().ok());
    CtrData data = parser.Finish();
    EXPECT_EQ(data.size, 301) << chunk;
    EXPECT_EQ(data.labels, whole->labels) << chunk;
    EXPECT_EQ(data.numeric, whole->numeric) << chunk;
    EXPECT_EQ(data.ids, whole->ids) << chunk;
  }
}

struct BadCase {
  std::string line;
  std::string field;  // what the message must name
};

TEST(CriteoBadLineTest, EachClassNamesFileLineAndField) {
  const std::vector<BadCase> cases = {
      {"1\t2\t3\ta\tb\n", "has 5 tab-separated fields, want 6"},
      {"1\t2\t3\ta\tb\tc\td\n", "has 7 tab-separated fields, want 6"},
      {"\n", "has 1 tab-separated fields, want 6"},
      {"2\t\t\t\t\t\n", "field label (1 bytes): the label must be 0 or 1"},
      {"\t\t\t\t\t\n", "field label (0 bytes)"},
      {"0\t\t12x\t\t\t\n", "field I2 (3 bytes): not a number"},
      {"0\tnan\t\t\t\t\n", "field I1 (3 bytes): not a number"},
      {"0\t1e999\t\t\t\t\n", "field I1 (5 bytes): not a number"},
      {"0\t\t\t\t\tx1\n", "field C3 (2 bytes): not a hexadecimal id"},
      {"0\t\t\t0x1f\t\t\n", "field C1 (4 bytes): not a hexadecimal id"},
      {"0\t\t\t\t-5\t\n", "field C2 (2 bytes): not a hexadecimal id"},
  };
  const std::string dir = TestDir();
  for (const BadCase& c : cases) {
    const std::string path = dir + "/bad.txt";
    WriteFile(path, Line(0, 1) + Line(1, 2) + c.line + Line(0, 3));
    auto data = ReadCriteo(SmallOptions({path}));
    ASSERT_FALSE(data.ok()) << c.line;
    EXPECT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(data.status().message(), HasSubstr(path + ":3: " + c.field)) << data.status();
    EXPECT_THAT(data.status().message(), HasSubstr(" bytes"));
    EXPECT_THAT(data.status().message(), Not(HasSubstr(c.line.substr(0, c.line.size() - 1) + "\""))) << "echoes the line";
    EXPECT_THAT(data.status().message(), HasSubstr("skip_bad_lines"));

    CriteoOptions skip = SmallOptions({path});
    skip.skip_bad_lines = true;
    auto skipped = ReadCriteo(skip);
    ASSERT_TRUE(skipped.ok()) << skipped.status();
    EXPECT_EQ(skipped->size, 3);
    EXPECT_EQ(skipped->bad_lines_skipped, 1);
    EXPECT_THAT(skipped->first_bad_line, HasSubstr(path + ":3: " + c.field));
    EXPECT_EQ(skipped->ids, (std::vector<int64_t>{0x1f % 1000, 0, 1, 0x1f % 1000, 0, 2, 0x1f % 1000, 0, 3}));
  }
}

TEST(CriteoBadLineTest, SkipModeCountsEveryBadLine) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += i % 10 == 3 ? "junk\n" : Line(0, i);
  CriteoFormat f = SmallFormat();
  auto data = ParseCriteoBuffer(text, f, "many.txt", true);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->size, 90);
  EXPECT_EQ(data->bad_lines_skipped, 10);
  EXPECT_THAT(data->first_bad_line, HasSubstr("many.txt:4: has 1 tab-separated fields"));
}

TEST(CriteoBadLineTest, VeryLongLinesAreBoundedAndExcerptsShort) {
  CriteoFormat f = SmallFormat();
  f.max_line_bytes = 1000;
  const std::string huge_field(5000, '7');
  const std::string long_line = absl::StrCat("0\t", huge_field, "\t\t\t\t\n");
  const std::string text = Line(1, 1) + long_line + Line(0, 2);
  auto data = ParseCriteoBuffer(text, f, "long.txt", false);
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(data.status().message(), HasSubstr("long.txt:2: the line is 5006 bytes, longer than the limit of 1000"));
  EXPECT_LT(data.status().message().size(), 400u);
  // Skipped, the lines after it still parse, also when the long line arrives in small chunks.
  CriteoParser::Options skip;
  skip.skip_bad_lines = true;
  CriteoParser parser(f, skip);
  parser.BeginFile("long.txt");
  for (size_t at = 0; at < text.size(); at += 100)
    ASSERT_TRUE(parser.Feed(absl::string_view(text).substr(at, 100)).ok());
  ASSERT_TRUE(parser.EndFile().ok());
  CtrData skipped = parser.Finish();
  EXPECT_EQ(skipped.size, 2);
  EXPECT_EQ(skipped.bad_lines_skipped, 1);
  // A bad field is named with its length, never shown.
  auto bad_number = ParseCriteoBuffer(absl::StrCat("0\t", huge_field, "x\t\t\t\t\n"), SmallFormat(), "f", false);
  ASSERT_FALSE(bad_number.ok());
  EXPECT_THAT(bad_number.status().message(), HasSubstr("field I1 ("));
  EXPECT_THAT(bad_number.status().message(), Not(HasSubstr("7777")));
  EXPECT_LT(bad_number.status().message().size(), 400u);
}

TEST(CriteoBadLineTest, ArbitraryBytesNeverCrash) {
  std::mt19937 rng(1);
  static constexpr char kAlphabet[] = "01\t\n\r-+.e9afAFx \0\xff";
  const std::string alphabet(kAlphabet, sizeof(kAlphabet) - 1);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text(rng() % 300, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    for (bool skip : {false, true}) {
      auto data = ParseCriteoBuffer(text, SmallFormat(), "r", skip);
      if (data.ok()) {
        EXPECT_EQ(data->labels.size(), static_cast<size_t>(data->size));
        for (int64_t id : data->ids) EXPECT_GE(id, 0);
      }
    }
  }
}

TEST(CriteoReaderTest, GzipReadsLikePlain) {
  const std::string dir = TestDir();
  std::string text;
  for (int i = 0; i < 1000; ++i) text += Line(i % 3 == 0, i);
  WriteFile(dir + "/a.txt", text);
  WriteFile(dir + "/a.txt.gz", text, true);
  auto plain = ReadCriteo(SmallOptions({dir + "/a.txt"}));
  auto gz = ReadCriteo(SmallOptions({dir + "/a.txt.gz"}));
  ASSERT_TRUE(plain.ok() && gz.ok());
  EXPECT_EQ(plain->size, 1000);
  EXPECT_EQ(plain->labels, gz->labels);
  EXPECT_EQ(plain->ids, gz->ids);
}

TEST(CriteoReaderTest, TruncatedGzipIsDataLossNamingTheFile) {
  const std::string dir = TestDir();
  std::string text;
  for (int i = 0; i < 20000; ++i) text += Line(0, i * 31);
  WriteFile(dir + "/t.gz", text, true);
  std::ifstream in(dir + "/t.gz", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  WriteFile(dir + "/cut.gz", bytes.substr(0, bytes.size() / 2));
  auto data = ReadCriteo(SmallOptions({dir + "/cut.gz"}));
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(data.status().message(), HasSubstr(dir + "/cut.gz"));
}

TEST(CriteoReaderTest, MissingFilesAndEmptyGlobsAreNotFound) {
  const std::string dir = TestDir();
  auto missing = ReadCriteo(SmallOptions({dir + "/nope.txt"}));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("data file " + dir + "/nope.txt does not exist"));
  auto empty_glob = ReadCriteo(SmallOptions({dir + "/day_*.gz"}));
  EXPECT_EQ(empty_glob.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(empty_glob.status().message(), HasSubstr("no file matches the data pattern " + dir + "/day_*.gz"));
  EXPECT_THAT(empty_glob.status().message(), HasSubstr("quote it"));
  auto directory = ReadCriteo(SmallOptions({dir}));
  EXPECT_EQ(directory.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(directory.status().message(), HasSubstr("is a directory"));
  EXPECT_EQ(ReadCriteo(SmallOptions({})).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CriteoReaderTest, BadOptionsAreInvalidArgument) {
  const std::string dir = TestDir();
  WriteFile(dir + "/a.txt", Line(0, 1));
  CriteoOptions sizes = SmallOptions({dir + "/a.txt"});
  sizes.table_sizes = {10, 10};
  EXPECT_THAT(ReadCriteo(sizes).status().message(), HasSubstr("3 fields, 2 table sizes"));
  sizes.table_sizes = {10, -1, 10};
  EXPECT_THAT(ReadCriteo(sizes).status().message(), HasSubstr("the table of field C2 has -1 rows"));
  sizes.table_sizes = {10, 0, 10};  // 0: a dynamic table
  EXPECT_TRUE(ReadCriteo(sizes).ok());
  CriteoOptions part = SmallOptions({dir + "/a.txt"});
  part.part = 2;
  part.num_parts = 2;
  EXPECT_THAT(ReadCriteo(part).status().message(), HasSubstr("data part 2 of 2 is out of range"));
}

TEST(CriteoReaderTest, GlobsReadSortedUniqueFiles) {
  const std::string dir = TestDir();
  WriteFile(dir + "/day_1.txt", Line(0, 10) + Line(0, 11));
  WriteFile(dir + "/day_0.txt.gz", Line(1, 0) + Line(1, 1), true);
  WriteFile(dir + "/day_2.txt", Line(0, 20));
  WriteFile(dir + "/other.txt", Line(0, 99));
  auto files = ExpandDataFiles({dir + "/day_*", dir + "/day_1.txt"});
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, (std::vector<std::string>{dir + "/day_0.txt.gz", dir + "/day_1.txt", dir + "/day_2.txt"}));
  auto data = ReadCriteo(SmallOptions({dir + "/day_*", dir + "/day_1.txt"}));
  ASSERT_TRUE(data.ok()) << data.status();
  std::vector<int64_t> third;
  for (int64_t i = 0; i < data->size; ++i) third.push_back(data->ids[3 * i + 2]);
  EXPECT_EQ(third, (std::vector<int64_t>{0, 1, 10, 11, 20}));
}

// Reads every part and checks each line went to exactly one.
void ExpectPartsCover(const std::vector<std::string>& patterns, int num_parts, int64_t lines, bool expect_by_line) {
  auto files = ExpandDataFiles(patterns);
  ASSERT_TRUE(files.ok());
  std::multiset<int64_t> seen;
  for (int part = 0; part < num_parts; ++part) {
    EXPECT_EQ(AssignPart(*files, part, num_parts).by_line, expect_by_line);
    CriteoOptions o = SmallOptions(patterns);
    o.part = part;
    o.num_parts = num_parts;
    auto data = ReadCriteo(o);
    ASSERT_TRUE(data.ok()) << data.status();
    for (int64_t i = 0; i < data->size; ++i) seen.insert(data->ids[3 * i + 2]);
  }
  ASSERT_EQ(static_cast<int64_t>(seen.size()), lines) << num_parts << " parts";
  int64_t expected = 0;
  for (int64_t id : seen) EXPECT_EQ(id, expected++);
}

TEST(CriteoReaderTest, PartsAreDisjointAndCoverEveryLine) {
  const std::string dir = TestDir();
  // 5 files of 7, 0, 13, 1 and 9 lines (ids 0..29 across them).
  int64_t next = 0;
  const std::vector<int> sizes = {7, 0, 13, 1, 9};
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::string text;
    for (int i = 0; i < sizes[k]; ++i) text += Line(0, next++);
    WriteFile(absl::StrCat(dir, "/part-", k, k % 2 ? ".txt.gz" : ".txt"), text, k % 2 == 1);
  }
  for (int parts : {1, 2, 3, 5}) ExpectPartsCover({dir + "/part-*"}, parts, next, false);
  for (int parts : {6, 7, 31}) ExpectPartsCover({dir + "/part-*"}, parts, next, true);
  // By file: file k to part k % n, so part 0 of 2 reads files 0, 2 and 4.
  CriteoOptions o = SmallOptions({dir + "/part-*"});
  o.num_parts = 2;
  auto part0 = ReadCriteo(o);
  ASSERT_TRUE(part0.ok());
  EXPECT_EQ(part0->size, 7 + 13 + 9);
  // By line over one file: line i to part i % n.
  o = SmallOptions({dir + "/part-2.txt"});
  o.part = 1;
  o.num_parts = 3;
  auto lines = ReadCriteo(o);
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ(lines->size, 4);
  EXPECT_EQ(lines->ids[2], 7 + 1);
  EXPECT_EQ(lines->ids[5], 7 + 4);
}

TEST(CriteoReaderTest, BadLinesOfOtherPartsAreNotThisPartsErrors) {
  const std::string dir = TestDir();
  WriteFile(dir + "/a.txt", Line(0, 0) + "junk\n" + Line(0, 2) + "more junk\n");
  CriteoOptions o = SmallOptions({dir + "/a.txt"});
  o.num_parts = 2;
  auto even = ReadCriteo(o);
  ASSERT_TRUE(even.ok()) << even.status();
  EXPECT_EQ(even->size, 2);
  o.part = 1;
  auto odd = ReadCriteo(o);
  ASSERT_FALSE(odd.ok());
  EXPECT_THAT(odd.status().message(), HasSubstr(dir + "/a.txt:2: "));
}

TEST(ShuffleForEpochTest, DeterministicPermutationPerSeedShardAndEpoch) {
  std::vector<int64_t> a(1000), b;
  for (int i = 0; i < 1000; ++i) a[i] = i;
  b = a;
  ShuffleForEpoch(42, 1, 3, &a);
  ShuffleForEpoch(42, 1, 3, &b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), 1000u);
  std::vector<int64_t> c = b;
  ShuffleForEpoch(42, 1, 4, &c);
  EXPECT_NE(c, a);
}

// A training glob that also matches the test file would train on the test set without a word:
// refused naming the file, unless the job spec allows it.
TEST(CtrSplitFilesTest, TrainingGlobThatMatchesTheTestFileIsRefused) {
  const std::string dir = TestDir();
  for (const char* name : {"day_0.tsv", "day_1.tsv", "day_2.tsv"}) WriteFile(dir + "/" + name, Line(1, 7));
  DataSpec data;
  data.dataset = "criteo";
  data.train_files = {dir + "/day_*.tsv"};
  data.test_files = {dir + "/./day_2.tsv"};  // another spelling of the same file
  for (Split split : {Split::kTrain, Split::kTest}) {
    absl::StatusOr<std::vector<std::string>> files = CtrSplitFiles(Env::Default(), data, split, "");
    ASSERT_FALSE(files.ok());
    EXPECT_EQ(files.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(files.status().message(), HasSubstr(dir + "/day_2.tsv, which is a test file too"));
    EXPECT_THAT(files.status().message(), HasSubstr("data.allow_test_in_train"));
  }
  data.train_files = {dir + "/day_[01].tsv"};
  EXPECT_TRUE(CtrSplitFiles(Env::Default(), data, Split::kTrain, "").ok());
  data.train_files = {dir + "/day_*.tsv"};
  data.allow_test_in_train = true;
  EXPECT_TRUE(CtrSplitFiles(Env::Default(), data, Split::kTrain, "").ok());
}

}  // namespace
}  // namespace pstrain
