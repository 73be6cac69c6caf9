// ReadInitialWeights: --init_from's file read and checked against a job's variables, the same for
// `pstrain train` and the chief.
#include "common/graph/initial_weights.h"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "common/graph/npy_int64.h"
#include "common/config/job_spec.h"
#include "common/platform/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/graph/keras_fixture.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

class InitialWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/pstrain-initial-weights-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { ASSERT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0); }

  static JobSpec KerasJob(const std::string& fixture) {
    JobSpec job;
    job.name = "keras-job";
    job.model.graph = std::make_shared<const ModelGraph>(LoadFixtureGraph(fixture));
    return job;
  }
  // Distinct values for every variable of `graph`, written in the Keras 3 layout to `path`.
  static NamedWeights Write(const ModelGraph& graph, const std::string& path) {
    NamedWeights weights;
    float next = 0.5f;
    for (const GraphVariableSpec& var : graph.variables) {
      WeightValue& w = weights[var.name];
      w.shape = var.shape;
      int64_t n = 1;
      for (int64_t d : var.shape) n *= d;
      for (int64_t i = 0; i < n; ++i) w.values.push_back(next += 0.25f);
    }
    EXPECT_TRUE(WriteKerasWeights(graph, weights, KerasWeightsFormat::kKeras3, path).ok());
    return weights;
  }

  std::string dir_;
};

TEST_F(InitialWeightsTest, ReadsEveryVariableOfTheJob) {
  const JobSpec job = KerasJob("keras3_sequential_mlp.json");
  ASSERT_FALSE(job.model.graph->variables.empty());
  const NamedWeights written = Write(*job.model.graph, dir_ + "/m.weights.h5");
  absl::StatusOr<InitialWeights> read = ReadInitialWeights(Env::Default(), job, dir_ + "/m.weights.h5");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->values.size(), written.size());
  EXPECT_TRUE(read->dynamic_keys.empty());
  for (const auto& [name, value] : written) {
    ASSERT_EQ(read->values.count(name), 1u) << name;
    EXPECT_EQ(read->values.at(name).shape, value.shape) << name;
    EXPECT_EQ(read->values.at(name).values, value.values) << name;
  }
}

TEST_F(InitialWeightsTest, AJobWithoutAKerasModelIsRefused) {
  absl::StatusOr<JobSpec> preset = LoadJobSpec("linear");
  ASSERT_TRUE(preset.ok()) << preset.status();
  absl::StatusOr<InitialWeights> read = ReadInitialWeights(Env::Default(), *preset, dir_ + "/m.weights.h5");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(),
              HasSubstr("--init_from=" + dir_ + "/m.weights.h5: job \"linear\" has no Keras model"));
}

// Wide & Deep with input c2's tables (deep_emb2, wide_emb2) dynamic, their Embeddings holding
// `rows` rows in the file written (any count: rows are keyed, not positions).
class DynamicInitialWeightsTest : public InitialWeightsTest {
 protected:
  static JobSpec DynamicJob(int64_t max_rows) {
    const nlohmann::json table = {{"max_rows", max_rows}};
    const nlohmann::json job = {
        {"name", "rec"},
        {"model",
         {{"keras_model", nlohmann::json::parse(ReadFixture("keras3_wide_deep.json"))},
          {"dynamic_tables", {{"deep_emb2", table}, {"wide_emb2", table}}}}},
        {"optimizer", {{"type", "adagrad"}}},
        {"mode", "async"},
        {"data", {{"dataset", "criteo"}}},
        {"schedule", {{"steps", 10}}}};
    absl::StatusOr<JobSpec> spec = JobSpecFromJson(job);
    EXPECT_TRUE(spec.ok()) << spec.status();
    return spec.ok() ? *spec : JobSpec();
  }
  NamedWeights WriteRows(const JobSpec& job, int64_t rows, int64_t dim_change = 0) {
    ModelGraph graph = *job.model.graph;
    for (const char* name : {"deep_emb2/embeddings", "wide_emb2/embeddings"}) {
      const int v = graph.FindVariable(name);
      EXPECT_GE(v, 0);
      graph.variables[v].shape[0] = rows;
      graph.variables[v].shape[1] += dim_change;
    }
    return Write(graph, path_);
  }
  void WriteKeys(const std::vector<int64_t>& keys) {
    ASSERT_TRUE(Env::Default()->WriteFileAtomic(path_ + ".c2.keys.npy", NpyInt64Vector(keys)).ok());
  }
  std::string Error(const JobSpec& job) {
    absl::StatusOr<InitialWeights> read = ReadInitialWeights(Env::Default(), job, path_);
    EXPECT_FALSE(read.ok());
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(read.status().message());
  }
  void SetUp() override {
    InitialWeightsTest::SetUp();
    path_ = dir_ + "/wd.weights.h5";
  }
  std::string path_;
};

TEST_F(DynamicInitialWeightsTest, RowsAreKeyedByPositionOrByTheKeysFileBesideIt) {
  const JobSpec job = DynamicJob(100);
  const NamedWeights written = WriteRows(job, 7);
  const WeightValue& rows = written.at("wide_emb2/embeddings");
  const int64_t dim = rows.shape[1];
  // No keys file: row i is id i, as in a Keras Embedding.
  absl::StatusOr<InitialWeights> read = ReadInitialWeights(Env::Default(), job, path_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->dynamic_keys.size(), 2u);
  EXPECT_EQ(read->dynamic_keys.at("wide_emb2/embeddings"), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(read->dynamic_keys.at("deep_emb2/embeddings"), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(read->values.at("wide_emb2/embeddings").shape, (std::vector<int64_t>{7, dim}));
  EXPECT_EQ(read->values.at("wide_emb2/embeddings").values, rows.values);
  EXPECT_THAT(read->key_sources.at("wide_emb2/embeddings"), HasSubstr("ids 0..6"));
  // The fixed tables are read as before, in the model's shape.
  EXPECT_EQ(read->values.at("deep_emb1/embeddings").values, written.at("deep_emb1/embeddings").values);
  EXPECT_EQ(read->values.at("deep_emb1/embeddings").shape, (std::vector<int64_t>{20, 4}));

  // PATH.c2.keys.npy (what pstrain export writes): row i + 1 is keys[i]'s; row 0 is not used.
  const std::vector<int64_t> keys = {5, -3, 100, 7, int64_t{1} << 40, 9};
  WriteKeys(keys);
  read = ReadInitialWeights(Env::Default(), job, path_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->dynamic_keys.at("wide_emb2/embeddings"), keys);
  EXPECT_EQ(read->values.at("wide_emb2/embeddings").shape, (std::vector<int64_t>{6, dim}));
  EXPECT_EQ(read->values.at("wide_emb2/embeddings").values,
            std::vector<float>(rows.values.begin() + dim, rows.values.end()));
  EXPECT_THAT(read->key_sources.at("wide_emb2/embeddings"), HasSubstr("the keys of " + path_ + ".c2.keys.npy"));
}

TEST_F(DynamicInitialWeightsTest, BadKeysOrTooManyRowsAreRefusedNamingThem) {
  const JobSpec job = DynamicJob(100);
  WriteRows(job, 7);
  EXPECT_THAT(Error(DynamicJob(6)), HasSubstr("layer 'deep_emb2' (a dynamic table of max_rows 6) would start with 7 "
                                              "rows from the file; raise its max_rows"));
  WriteKeys({1, 2, 3, 4, 5});
  EXPECT_THAT(Error(job), HasSubstr("layer 'deep_emb2' has 7 rows but " + path_ + ".c2.keys.npy holds 5 keys"));
  WriteKeys({1, 2, 3, 2, 5, 6});
  EXPECT_THAT(Error(job), HasSubstr(path_ + ".c2.keys.npy holds key 2 twice"));
  ASSERT_TRUE(Env::Default()->WriteFileAtomic(path_ + ".c2.keys.npy", "not numpy").ok());
  EXPECT_THAT(Error(job), HasSubstr(path_ + ".c2.keys.npy: not a .npy file"));
  WriteRows(job, 7, /*dim_change=*/1);
  EXPECT_THAT(Error(job), HasSubstr("variable 'deep_emb2/embeddings' (dataset '0') has shape [7, 5] in the file; "
                                    "the model expects [any rows, 4]"));
}

TEST_F(InitialWeightsTest, AMissingFileOrAnotherModelsFileIsRefusedNamingTheFlag) {
  const JobSpec job = KerasJob("keras3_sequential_mlp.json");
  absl::StatusOr<InitialWeights> read = ReadInitialWeights(Env::Default(), job, dir_ + "/none.weights.h5");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(read.status().message(), HasSubstr("--init_from=" + dir_ + "/none.weights.h5: "));

  Write(LoadFixtureGraph("keras3_cnn.json"), dir_ + "/cnn.weights.h5");
  read = ReadInitialWeights(Env::Default(), job, dir_ + "/cnn.weights.h5");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr("--init_from=" + dir_ + "/cnn.weights.h5: "));
}

}  // namespace
}  // namespace pstrain
