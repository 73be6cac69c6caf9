// Data input: IDX/CSV loading and its errors (each naming the file), sharding, shuffling and
// exact-once evaluation ranges.
#include "worker/data/dataset.h"

#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/platform/env.h"
#include "gtest/gtest.h"
#include "worker/data/shard_iterator.h"

namespace pstrain {
namespace {

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                      "_", name);
}

void WriteFile(const std::string& path, const std::string& bytes, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
}

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
}

// n images of 2x3 pixels (pixel value = image index * 10 + pixel) and labels i % 10.
std::string Images(uint32_t n) {
  std::string s = Be32(0x803) + Be32(n) + Be32(2) + Be32(3);
  for (uint32_t i = 0; i < n; ++i) {
    for (int p = 0; p < 6; ++p) s.push_back(static_cast<char>(i * 10 + p));
  }
  return s;
}
std::string Labels(uint32_t n) {
  std::string s = Be32(0x801) + Be32(n);
  for (uint32_t i = 0; i < n; ++i) s.push_back(static_cast<char>(i % 10));
  return s;
}

TEST(IdxTest, LoadsPlainAndGzipped) {
  for (bool gz : {false, true}) {
    const std::string images = TempPath(gz ? "i.gz" : "i"), labels = TempPath(gz ? "l.gz" : "l");
    WriteFile(images, Images(4), gz);
    WriteFile(labels, Labels(4), gz);
    auto d = LoadIdxDataset(Env::Default(), images, labels);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->size, 4);
    EXPECT_EQ(d->example_shape, (std::vector<int64_t>{2, 3, 1}));
    EXPECT_FLOAT_EQ(d->features[3 * 6 + 5], 35.f / 255.f);
    EXPECT_EQ(d->labels[3], 3);
  }
}

void ExpectErrorNaming(const absl::StatusOr<Dataset>& d, const std::string& path, absl::StatusCode code) {
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), code) << d.status();
  EXPECT_NE(d.status().message().find(path), std::string::npos) << d.status();
}

TEST(IdxTest, MissingFileIsNamed) {
  const std::string labels = TempPath("l");
  WriteFile(labels, Labels(4), false);
  ExpectErrorNaming(LoadIdxDataset(Env::Default(), TempPath("nope"), labels), TempPath("nope"),
                    absl::StatusCode::kNotFound);
}

TEST(IdxTest, BadMagicIsNamed) {
  const std::string images = TempPath("i"), labels = TempPath("l");
  WriteFile(images, Labels(4), false);  // a labels file where images are expected
  WriteFile(labels, Labels(4), false);
  ExpectErrorNaming(LoadIdxDataset(Env::Default(), images, labels), images, absl::StatusCode::kInvalidArgument);
}

TEST(IdxTest, TruncatedPlainFileIsNamed) {
  const std::string images = TempPath("i"), labels = TempPath("l");
  const std::string full = Images(4);
  WriteFile(images, full.substr(0, full.size() - 5), false);
  WriteFile(labels, Labels(4), false);
  ExpectErrorNaming(LoadIdxDataset(Env::Default(), images, labels), images, absl::StatusCode::kDataLoss);
  WriteFile(images, full.substr(0, 7), false);  // inside the header
  ExpectErrorNaming(LoadIdxDataset(Env::Default(), images, labels), images, absl::StatusCode::kDataLoss);
}

TEST(IdxTest, TruncatedGzipFileIsNamed) {
  const std::string whole = TempPath("whole.gz"), cut = TempPath("cut.gz"), labels = TempPath("l");
  std::string big = Images(200);
  WriteFile(whole, big, true);
  std::ifstream in(whole, std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  WriteFile(cut, gz.substr(0, gz.size() / 2), false);
  WriteFile(labels, Labels(200), false);
  auto d = LoadIdxDataset(Env::Default(), cut, labels);
  ExpectErrorNaming(d, cut, absl::StatusCode::kDataLoss);
}

TEST(IdxTest, CountMismatchNamesBothFiles) {
  const std::string images = TempPath("i"), labels = TempPath("l");
  WriteFile(images, Images(4), false);
  WriteFile(labels, Labels(5), false);
  auto d = LoadIdxDataset(Env::Default(), images, labels);
  ExpectErrorNaming(d, images, absl::StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find(labels), std::string::npos);
}

TEST(IdxTest, FashionMnistFromDebianPackage) {
  auto job = LoadJobSpec("cnn");
  ASSERT_TRUE(job.ok());
  std::ifstream probe(job->data.dir + "/t10k-labels-idx1-ubyte.gz");
  if (!probe) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto test = LoadDataset(Env::Default(), *job, Split::kTest);
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(test->size, 10000);
  EXPECT_EQ(test->example_shape, (std::vector<int64_t>{28, 28, 1}));
  float lo = 1, hi = 0;
  for (float v : test->features) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_EQ(lo, 0.f);
  EXPECT_EQ(hi, 1.f);
  std::set<int32_t> classes(test->labels.begin(), test->labels.end());
  EXPECT_EQ(classes.size(), 10u);
  auto missing = LoadDataset(Env::Default(), *job, Split::kTest, TempPath("no_such_dir"));
  ExpectErrorNaming(missing, TempPath("no_such_dir") + "/t10k-images-idx3-ubyte.gz", absl::StatusCode::kNotFound);
}

TEST(CsvTest, LoadsAndNamesBadLines) {
  const std::string path = TempPath("t.csv");
  WriteFile(path, "a,b,y\n1,2,0\n3, 4,1\n\n5,6,2\n", false);
  auto d = LoadCsvDataset(Env::Default(), path, -1, true, true);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->size, 3);
  EXPECT_EQ(d->example_shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(d->features, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(d->labels, (std::vector<int32_t>{0, 1, 2}));
  auto reg = LoadCsvDataset(Env::Default(), path, 0, true, false);
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(reg->targets, (std::vector<float>{1, 3, 5}));
  WriteFile(path, "1,2,0\n3,x,1\n", false);
  auto bad = LoadCsvDataset(Env::Default(), path, -1, false, true);
  ExpectErrorNaming(bad, path + ":2", absl::StatusCode::kInvalidArgument);
  WriteFile(path, "1,2,0\n3,1\n", false);
  ExpectErrorNaming(LoadCsvDataset(Env::Default(), path, -1, false, true), path + ":2",
                    absl::StatusCode::kInvalidArgument);
  ExpectErrorNaming(LoadCsvDataset(Env::Default(), TempPath("none.csv"), -1, false, true), TempPath("none.csv"),
                    absl::StatusCode::kNotFound);
}

std::shared_ptr<const Dataset> Numbered(int64_t n) {
  auto d = std::make_shared<Dataset>();
  d->size = n;
  d->example_shape = {1};
  for (int64_t i = 0; i < n; ++i) {
    d->features.push_back(static_cast<float>(i));
    d->labels.push_back(static_cast<int32_t>(i % 10));
  }
  return d;
}

std::vector<int64_t> Epoch(ShardIterator* it, int64_t batch_size) {
  std::vector<int64_t> seen;
  Batch b;
  for (int64_t k = 0; k < it->BatchesPerEpoch(batch_size); ++k) {
    it->Next(batch_size, &b);
    for (float v : b.inputs.flat()) seen.push_back(static_cast<int64_t>(v));
  }
  return seen;
}

TEST(ShardIteratorTest, ShardsAreDisjointAndCoverEverything) {
  auto data = Numbered(23);
  std::multiset<int64_t> all;
  for (int shard = 0; shard < 3; ++shard) {
    ShardIterator it(data, shard, 3, 7);
    for (int64_t v : Epoch(&it, 4)) {
      EXPECT_EQ(v % 3, shard);
      all.insert(v);
    }
  }
  ASSERT_EQ(all.size(), 23u);
  for (int64_t i = 0; i < 23; ++i) EXPECT_EQ(all.count(i), 1u);
}

TEST(ShardIteratorTest, ReshufflesEveryEpochDeterministically) {
  auto data = Numbered(50);
  ShardIterator a(data, 0, 1, 11), b(data, 0, 1, 11), c(data, 0, 1, 12);
  const auto a1 = Epoch(&a, 8), a2 = Epoch(&a, 8);
  EXPECT_EQ(a.epoch(), 1);
  EXPECT_EQ(a1, Epoch(&b, 8));
  EXPECT_NE(a1, a2);
  EXPECT_NE(a1, Epoch(&c, 8));
  EXPECT_EQ(std::set<int64_t>(a1.begin(), a1.end()), std::set<int64_t>(a2.begin(), a2.end()));
  EXPECT_EQ(a1.size(), 50u);  // the short last batch (50 = 6 * 8 + 2) is kept
}

// Batch k of the stream, read by Seek(k) on a fresh iterator, equals the k-th Next() of another:
// any worker can produce any part's batch, across epochs and in any order.
TEST(ShardIteratorTest, SeekMatchesNextSequence) {
  auto data = Numbered(23);
  for (int64_t batch : {1, 3, 4}) {
    ShardIterator sequential(data, 1, 3, 5);
    ShardIterator seeking(data, 1, 3, 5);
    std::vector<std::vector<float>> stream;
    Batch b;
    const int64_t total = 3 * sequential.BatchesPerEpoch(batch) + 2;  // into a fourth epoch
    for (int64_t k = 0; k < total; ++k) {
      sequential.Next(batch, &b);
      stream.emplace_back(b.inputs.flat().begin(), b.inputs.flat().end());
    }
    for (int64_t k : {total - 1, int64_t{0}, int64_t{5}, total - 3, int64_t{2}, int64_t{1}}) {
      seeking.Seek(k, batch);
      seeking.Next(batch, &b);
      EXPECT_EQ(std::vector<float>(b.inputs.flat().begin(), b.inputs.flat().end()), stream[k])
          << "batch " << k << " of size " << batch;
    }
    // A seek followed by plain Next() calls goes on with the same stream.
    seeking.Seek(2, batch);
    for (int64_t k = 2; k < total; ++k) {
      seeking.Next(batch, &b);
      ASSERT_EQ(std::vector<float>(b.inputs.flat().begin(), b.inputs.flat().end()), stream[k]) << "batch " << k;
    }
  }
}

TEST(EvalRangeTest, EveryExampleExactlyOnce) {
  for (int64_t size : {1, 10, 10000}) {
    for (int n : {1, 3, 7}) {
      int64_t next = 0;
      for (int s = 0; s < n; ++s) {
        auto [begin, end] = EvalRange(size, s, n);
        EXPECT_EQ(begin, next);
        EXPECT_GE(end, begin);
        next = end;
      }
      EXPECT_EQ(next, size);
    }
  }
  auto data = Numbered(10);
  Batch b;
  FillRange(*data, 3, 6, &b);
  EXPECT_EQ(b.size(), 3);
  EXPECT_EQ(b.inputs.flat()[0], 3.f);
  EXPECT_EQ(b.labels[2], 5);
}

TEST(SyntheticLinearTest, DeterministicAndNearlyLinear) {
  const Dataset a = SyntheticLinearDataset(100, 2, 5, Split::kTrain);
  const Dataset b = SyntheticLinearDataset(100, 2, 5, Split::kTrain);
  const Dataset t = SyntheticLinearDataset(100, 2, 5, Split::kTest);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.targets, b.targets);
  EXPECT_EQ(t.size, 25);
  EXPECT_NE(a.features[0], t.features[0]);
}

}  // namespace
}  // namespace pstrain
