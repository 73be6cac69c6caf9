// The synthetic CTR generator: Zipf draws against the exact law, scattered ids, byte-identical
// files for a seed (different for another), labels drawn at the planted probabilities, files the
// Criteo reader reads back as the model drew them, a sane Bayes AUC, and the default set's cache
// under concurrent first use.
#include "worker/data/ctr_synthetic.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/metrics/binary_metrics.h"
#include "common/platform/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/data/criteo_reader.h"
#include "worker/data/ctr_default_data.h"
#include "worker/data/ctr_planted_model.h"
#include "worker/data/zipf_sampler.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

std::string TestDir() {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/ctr_synthetic_",
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The file's bytes, "" when it cannot be read.
std::string Slurp(const std::string& path) { return Env::Default()->ReadFile(path).value_or(""); }

TEST(ZipfSamplerTest, FrequenciesFollowTheExactLaw) {
  for (double exponent : {0.7, 1.0, 1.1, 2.0}) {
    const int64_t n = 40;
    ZipfSampler zipf(n, exponent);
    double norm = 0.0;
    for (int64_t k = 1; k <= n; ++k) norm += std::pow(static_cast<double>(k), -exponent);
    const int draws = 200000;
    std::vector<int> counts(n, 0);
    RandomStream random(17);
    for (int i = 0; i < draws; ++i) {
      const int64_t r = zipf.Sample(random);
      ASSERT_GE(r, 0);
      ASSERT_LT(r, n);
      ++counts[r];
    }
    for (int64_t r = 0; r < n; ++r) {
      const double p = std::pow(static_cast<double>(r + 1), -exponent) / norm;
      const double sd = std::sqrt(draws * p * (1 - p));
      EXPECT_NEAR(counts[r], draws * p, 5 * sd + 1) << "exponent " << exponent << " rank " << r;
    }
  }
  RandomStream random(1);
  ZipfSampler one(1, 1.3);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(one.Sample(random), 0);
  ZipfSampler huge(int64_t{1} << 32, 1.05);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(huge.Sample(random), int64_t{1} << 32);
}

TEST(ScrambleIdTest, IsABijectionThatScattersHotIds) {
  std::set<uint32_t> ids;
  for (uint32_t r = 0; r < 200000; ++r) ids.insert(ScrambleId(1, 3, r));
  EXPECT_EQ(ids.size(), 200000u);
  int small = 0;
  for (uint32_t r = 0; r < 100; ++r) small += ScrambleId(1, 3, r) < 1000000;
  EXPECT_LT(small, 3);  // the hottest ranks are not 0, 1, 2...
  EXPECT_NE(ScrambleId(1, 3, 0), ScrambleId(1, 4, 0));
  EXPECT_NE(ScrambleId(1, 3, 0), ScrambleId(2, 3, 0));
}

CtrSyntheticOptions Small(uint64_t seed) {
  CtrSyntheticOptions o;
  o.train_examples = 3000;
  o.test_examples = 1000;
  o.seed = seed;
  return o;
}

TEST(CtrSyntheticTest, SameSeedWritesByteIdenticalFilesAnotherSeedDifferent) {
  const std::string dir = TestDir();
  auto a = WriteCtrSyntheticSet(Env::Default(), Small(5), dir + "/a");
  auto b = WriteCtrSyntheticSet(Env::Default(), Small(5), dir + "/b");
  auto c = WriteCtrSyntheticSet(Env::Default(), Small(6), dir + "/c");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status() << b.status() << c.status();
  for (const char* file : {kCtrTrainFile, kCtrTestFile, kCtrBayesFile}) {
    const std::string bytes = Slurp(absl::StrCat(dir, "/a/", file));
    EXPECT_GT(bytes.size(), 1000u);
    EXPECT_EQ(bytes, Slurp(absl::StrCat(dir, "/b/", file))) << file;
    EXPECT_NE(bytes, Slurp(absl::StrCat(dir, "/c/", file))) << file;
  }
  EXPECT_EQ(a->test.bayes_auc, b->test.bayes_auc);
  // Example i does not depend on how many are drawn: a longer set starts with the shorter one.
  CtrSyntheticOptions longer = Small(5);
  longer.train_examples = 4000;
  ASSERT_TRUE(WriteCtrSyntheticSet(Env::Default(), longer, dir + "/d").ok());
  const std::string short_train = Slurp(dir + "/a/train.txt");
  EXPECT_EQ(Slurp(dir + "/d/train.txt").substr(0, short_train.size()), short_train);
}

TEST(CtrSyntheticTest, LabelsFollowThePlantedProbabilities) {
  CtrSyntheticOptions o;
  const CtrPlantedModel model(o);
  const int n = 100000;
  // Ten buckets of predicted probability; in each the click rate must match the mean probability.
  std::vector<double> sum_p(10, 0.0), sum_y(10, 0.0), count(10, 0.0);
  double all_p = 0.0, all_y = 0.0;
  CtrExample e;
  for (int i = 0; i < n; ++i) {
    model.Draw(CtrSplit::kTrain, i, &e);
    ASSERT_NEAR(e.probability, 1.0 / (1.0 + std::exp(-e.logit)), 1e-15);
    const int bucket = std::min(9, static_cast<int>(e.probability * 10));
    sum_p[bucket] += e.probability;
    sum_y[bucket] += e.label;
    count[bucket] += 1;
    all_p += e.probability;
    all_y += e.label;
  }
  for (int b = 0; b < 10; ++b) {
    if (count[b] < 200) continue;
    const double p = sum_p[b] / count[b];
    EXPECT_NEAR(sum_y[b] / count[b], p, 4 * std::sqrt(p * (1 - p) / count[b]) + 1e-3) << "bucket " << b;
  }
  EXPECT_NEAR(all_y / n, all_p / n, 0.006);
  EXPECT_NEAR(all_p / n, 0.25, 0.01);  // the bias is solved for Criteo's click rate
}

TEST(CtrSyntheticTest, TheReaderSeesWhatTheModelDrew) {
  const std::string dir = TestDir();
  auto set = WriteCtrSyntheticSet(Env::Default(), Small(9), dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CriteoOptions read;
  read.files_or_globs = {set->test_path};
  read.table_sizes.assign(kCtrCategoricalFields, int64_t{1} << 32);  // no folding: the raw ids
  auto data = ReadCriteo(read);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->size, 1000);
  const CtrPlantedModel model(Small(9));
  CtrExample e;
  int empty_numeric = 0, empty_categorical = 0, minus_one = 0;
  for (int64_t i = 0; i < data->size; ++i) {
    model.Draw(CtrSplit::kTest, i, &e);
    ASSERT_EQ(data->labels[i], e.label);
    for (int j = 0; j < kCtrNumericFields; ++j) {
      const double t = e.numeric_present[j] ? std::log1p(std::max<double>(e.numeric[j], 0)) : 0.0;
      ASSERT_NEAR(data->numeric[i * kCtrNumericFields + j], t, 1e-5 * (1 + t));
      empty_numeric += !e.numeric_present[j];
      minus_one += e.numeric_present[j] && e.numeric[j] == -1;
    }
    for (int f = 0; f < kCtrCategoricalFields; ++f) {
      ASSERT_EQ(data->ids[i * kCtrCategoricalFields + f], e.categorical_present[f] ? e.id[f] : 0);
      empty_categorical += !e.categorical_present[f];
    }
  }
  EXPECT_GT(empty_numeric, 0);  // like Criteo: some fields empty, some I2 = -1
  EXPECT_GT(empty_categorical, 0);
  EXPECT_GT(minus_one, 0);
}

TEST(CtrSyntheticTest, BayesFiguresAreSaneAndReadBack) {
  const std::string dir = TestDir();
  CtrSyntheticOptions o;
  o.train_examples = 2000;
  o.test_examples = 20000;
  auto set = WriteCtrSyntheticSet(Env::Default(), o, dir);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_GT(set->test.bayes_auc, 0.78);
  EXPECT_LT(set->test.bayes_auc, 0.9);
  EXPECT_GT(set->test.bayes_logloss, 0.3);
  EXPECT_LT(set->test.bayes_logloss, 0.5);  // a constant 25% guess scores 0.562
  EXPECT_NEAR(set->test.positive_rate, 0.25, 0.02);
  auto back = ReadCtrSyntheticSummary(Env::Default(), dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_DOUBLE_EQ(back->test.bayes_auc, set->test.bayes_auc);
  EXPECT_DOUBLE_EQ(back->test.bayes_logloss, set->test.bayes_logloss);
  EXPECT_EQ(back->train.examples, 2000);
  EXPECT_EQ(back->test_path, dir + "/test.txt");
  EXPECT_EQ(ReadCtrSyntheticSummary(Env::Default(), dir + "/none").status().code(), absl::StatusCode::kNotFound);
}

TEST(CtrSyntheticTest, BadOptionsNameTheFlag) {
  CtrSyntheticOptions o;
  o.vocabulary = 0;
  EXPECT_THAT(ValidateCtrSyntheticOptions(o).message(), HasSubstr("--vocabulary must be in 1..4294967296"));
  o = CtrSyntheticOptions();
  o.zipf = 0;
  EXPECT_THAT(ValidateCtrSyntheticOptions(o).message(), HasSubstr("--zipf"));
  o = CtrSyntheticOptions();
  o.test_examples = 0;
  EXPECT_THAT(ValidateCtrSyntheticOptions(o).message(), HasSubstr("--test"));
  o = CtrSyntheticOptions();
  o.train_examples = -1;
  EXPECT_THAT(ValidateCtrSyntheticOptions(o).message(), HasSubstr("--train"));
  for (double bad : {-0.1, 1.0, 2.0, std::nan("")}) {
    o = CtrSyntheticOptions();
    o.drift_at = bad;
    EXPECT_THAT(ValidateCtrSyntheticOptions(o).message(), HasSubstr("--drift_at")) << bad;
  }
}

TEST(CtrSyntheticTest, WithoutCriteoCardinalitiesEveryFieldDrawsFromTheWholeVocabulary) {
  CtrSyntheticOptions o;
  o.vocabulary = 100000000;
  o.criteo_cardinalities = false;
  const CtrPlantedModel wide(o);
  o.criteo_cardinalities = true;
  const CtrPlantedModel criteo(o);
  for (int f = 0; f < kCtrCategoricalFields; ++f) EXPECT_EQ(wide.vocabulary(f), 100000000) << f;
  EXPECT_EQ(criteo.vocabulary(8), 3);  // C9 keeps Criteo's 3 ids
  // Ranks far beyond every Criteo cardinality (10^7) appear in a field that has 3 ids in Criteo.
  CtrExample e;
  int64_t max_rank = 0;
  for (int i = 0; i < 20000; ++i) {
    wide.Draw(CtrSplit::kTrain, i, &e);
    max_rank = std::max(max_rank, e.rank[8]);
  }
  EXPECT_GT(max_rank, 10000000);
}

TEST(CtrSyntheticTest, DriftGivesTheSecondEraNewIdsAndEffectsAndLeavesTheFirstAsBefore) {
  CtrSyntheticOptions o;
  o.train_examples = 1000;
  const CtrPlantedModel plain(o);
  o.drift_at = 0.5;
  const CtrPlantedModel drifting(o);
  CtrExample a, b;
  for (int i = 0; i < 500; ++i) {  // before the drift point: exactly the set without drift
    plain.Draw(CtrSplit::kTrain, i, &a);
    drifting.Draw(CtrSplit::kTrain, i, &b);
    ASSERT_EQ(b.era, 0);
    ASSERT_EQ(a.id, b.id) << i;
    ASSERT_EQ(a.logit, b.logit) << i;
  }
  // After it (and in the test set): the same ranks are other ids with other effects.
  std::set<uint32_t> old_hot, new_hot;
  int different_logits = 0;
  for (int i = 500; i < 1000; ++i) {
    plain.Draw(CtrSplit::kTrain, i, &a);
    drifting.Draw(CtrSplit::kTrain, i, &b);
    ASSERT_EQ(b.era, 1);
    ASSERT_EQ(a.rank, b.rank);
    if (a.rank[0] == 0) old_hot.insert(a.id[0]);
    if (b.rank[0] == 0) new_hot.insert(b.id[0]);
    different_logits += a.logit != b.logit;
  }
  ASSERT_EQ(old_hot.size(), 1u);
  ASSERT_EQ(new_hot.size(), 1u);
  EXPECT_NE(*old_hot.begin(), *new_hot.begin());  // the most popular id of C1 changed
  EXPECT_GT(different_logits, 450);
  drifting.Draw(CtrSplit::kTest, 0, &b);
  EXPECT_EQ(b.era, 1);
  plain.Draw(CtrSplit::kTest, 0, &a);
  EXPECT_EQ(a.era, 0);
}

TEST(CtrDefaultDataTest, CacheDirFollowsXdgThenHome) {
  EXPECT_EQ(DefaultCacheDir("/x", "/home/u", 7), "/x/pstrain");
  EXPECT_EQ(DefaultCacheDir("", "/home/u", 7), "/home/u/.cache/pstrain");
  EXPECT_EQ(DefaultCacheDir("", "", 7), "/tmp/pstrain-cache-7");
}

TEST(CtrDefaultDataTest, ConcurrentFirstUseAgreesAndLeavesNoTemporaries) {
  const std::string root = TestDir(), cache = root + "/cache";
  // A generator that died earlier left a temporary directory behind.
  std::filesystem::create_directories(absl::StrCat(cache, "/", kDefaultCtrDataName, ".tmp-1-dead"));
  std::vector<std::thread> threads;
  std::vector<absl::StatusOr<CtrSyntheticSummary>> results(4, absl::UnknownError("not run"));
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { results[t] = EnsureDefaultCtrData(Env::Default(), cache); });
  }
  for (std::thread& t : threads) t.join();
  const std::string dir = absl::StrCat(cache, "/", kDefaultCtrDataName);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->train_path, dir + "/train.txt");
    EXPECT_EQ(r->test.examples, CtrSyntheticOptions().test_examples);
    EXPECT_EQ(r->test.bayes_auc, results[0]->test.bayes_auc);
  }
  std::vector<std::string> entries;
  for (const auto& entry : std::filesystem::directory_iterator(cache)) entries.push_back(entry.path().filename());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{kDefaultCtrDataName, absl::StrCat(kDefaultCtrDataName, ".lock")}));
  // The default set is the default options' set: what `pstrain datagen ctr` writes by default.
  const std::string by_hand = root + "/by_hand";
  ASSERT_TRUE(WriteCtrSyntheticSet(Env::Default(), CtrSyntheticOptions(), by_hand).ok());
  EXPECT_TRUE(Slurp(by_hand + "/test.txt") == Slurp(dir + "/test.txt"));
  // A set missing its bayes.json is incomplete: generated again.
  std::filesystem::remove(dir + "/bayes.json");
  std::filesystem::remove(dir + "/train.txt");
  auto again = EnsureDefaultCtrData(Env::Default(), cache);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(std::filesystem::exists(dir + "/train.txt"));
}

TEST(CtrDefaultDataTest, UnwritableCacheSaysSo) {
  auto r = EnsureDefaultCtrData(Env::Default(), "/proc/pstrain-no-such-cache");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("give a writable cache directory"));
}

}  // namespace
}  // namespace pstrain
