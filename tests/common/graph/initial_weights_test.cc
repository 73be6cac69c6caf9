// ReadInitialWeights: --init_from's file read and checked against a job's variables, the same for
// `pstrain train` and the chief.
#include "common/graph/initial_weights.h"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

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
  absl::StatusOr<NamedWeights> read = ReadInitialWeights(job, dir_ + "/m.weights.h5");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), written.size());
  for (const auto& [name, value] : written) {
    ASSERT_EQ(read->count(name), 1u) << name;
    EXPECT_EQ(read->at(name).shape, value.shape) << name;
    EXPECT_EQ(read->at(name).values, value.values) << name;
  }
}

TEST_F(InitialWeightsTest, AJobWithoutAKerasModelIsRefused) {
  absl::StatusOr<JobSpec> preset = LoadJobSpec("linear");
  ASSERT_TRUE(preset.ok()) << preset.status();
  absl::StatusOr<NamedWeights> read = ReadInitialWeights(*preset, dir_ + "/m.weights.h5");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(),
              HasSubstr("--init_from=" + dir_ + "/m.weights.h5: job \"linear\" has no Keras model"));
}

// A dynamic table's rows are made on first use by key; a Keras file has them by position.
TEST_F(InitialWeightsTest, ADynamicTableIsRefusedNamingTheLayer) {
  JobSpec job = KerasJob("keras3_wide_deep.json");
  const NamedWeights written = Write(*job.model.graph, dir_ + "/wd.weights.h5");
  ASSERT_TRUE(ReadInitialWeights(job, dir_ + "/wd.weights.h5").ok());
  job.model.keras_dynamic_tables["wide_emb2"].max_rows = 100;
  absl::StatusOr<NamedWeights> read = ReadInitialWeights(job, dir_ + "/wd.weights.h5");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr("layer 'wide_emb2' is a dynamic table (model.dynamic_tables)"));
}

TEST_F(InitialWeightsTest, AMissingFileOrAnotherModelsFileIsRefusedNamingTheFlag) {
  const JobSpec job = KerasJob("keras3_sequential_mlp.json");
  absl::StatusOr<NamedWeights> read = ReadInitialWeights(job, dir_ + "/none.weights.h5");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(read.status().message(), HasSubstr("--init_from=" + dir_ + "/none.weights.h5: "));

  Write(LoadFixtureGraph("keras3_cnn.json"), dir_ + "/cnn.weights.h5");
  read = ReadInitialWeights(job, dir_ + "/cnn.weights.h5");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr("--init_from=" + dir_ + "/cnn.weights.h5: "));
}

}  // namespace
}  // namespace pstrain
