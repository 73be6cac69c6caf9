// `pstrain export` of a Keras model's dynamic tables: each id input's keys (the union over the
// tables it feeds), each table as an Embedding of keys + 1 rows (row 0 zeros, then each key's held
// or initial row), the model's input_dim set to match, and the keys as a .npy file.
#include "chief/tool/keras_dynamic_export.h"

#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/graph/keras_json.h"
#include "common/plan/model_variables.h"
#include "common/plan/variable_planner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "ps/store/dynamic_table.h"
#include "ps/store/ps_server.h"
#include "tests/common/graph/keras_fixture.h"
#include "tests/ps/store/trained_dynamic_table.h"

namespace pstrain {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// Wide & Deep with input c0's two tables (deep_emb0, wide_emb0) dynamic.
absl::StatusOr<JobSpec> WideDeep() {
  json job = {{"name", "rec"},
              {"model", {{"keras_model", json::parse(ReadFixture("keras3_wide_deep.json"))},
                         {"dynamic_tables", {{"deep_emb0", {{"max_rows", 100}}}, {"wide_emb0", {{"max_rows", 100}}}}}}},
              {"data", {{"dataset", "criteo"}}},
              {"optimizer", {{"type", "adagrad"}, {"learning_rate", 0.1}}},
              {"schedule", {{"steps", 10}}},
              {"seed", 5}};
  return JobSpecFromJson(job);
}

VariableSpec Variable(const JobSpec& job, const std::string& name) {
  absl::StatusOr<std::vector<VariableSpec>> vars = ModelVariables(job.model);
  EXPECT_TRUE(vars.ok()) << vars.status();
  for (const VariableSpec& v : *vars) {
    if (v.name == name) return v;
  }
  ADD_FAILURE() << "no variable " << name;
  return VariableSpec();
}

// A table of `var` as a ps of one holds it after one SGD push of `keys`.
std::unique_ptr<DynamicTable> Trained(const JobSpec& job, const VariableSpec& var, const std::vector<int64_t>& keys) {
  return TrainedDynamicTable(var.name, var.shape[1], job.seed, InitializerToProto(var.initializer), keys);
}

class KerasDynamicExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/keras_dynamic_export_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(Env::Default()->RemoveAll(dir_).ok());
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
  }
  void TearDown() override { ASSERT_TRUE(Env::Default()->RemoveAll(dir_).ok()); }
  // Saves `table` as one shard file and lists it in index_.
  void Save(const DynamicTable& table, const std::string& name) {
    const std::string file = DynamicShardFileName(name, 0, 1);
    ASSERT_TRUE(Env::Default()->WriteFileAtomic(dir_ + "/" + file, EncodeDynamicTableState(table.ExportState())).ok());
    SavedDynamicShard s;
    s.set_table_name(name);
    s.set_shard_index(0);
    s.set_num_shards(1);
    s.set_file(file);
    s.set_rows(table.rows());
    index_.dynamic_shards.push_back(s);
  }
  std::string dir_;
  CheckpointIndex index_;
};

TEST_F(KerasDynamicExportTest, AnInputsTablesShareTheUnionOfTheirKeysAfterAZeroRow) {
  absl::StatusOr<JobSpec> spec = WideDeep();
  ASSERT_TRUE(spec.ok()) << spec.status();
  const JobSpec& job = *spec;
  const VariableSpec deep = Variable(job, "deep_emb0/embeddings"), wide = Variable(job, "wide_emb0/embeddings");
  ASSERT_TRUE(deep.dynamic.has_value() && wide.dynamic.has_value());
  auto deep_table = Trained(job, deep, {9, -3, int64_t{1} << 60});
  auto wide_table = Trained(job, wide, {9, 4});
  Save(*deep_table, deep.name);
  Save(*wide_table, wide.name);

  absl::StatusOr<KerasDynamicExport> got = ReadDynamicTablesForKeras(Env::Default(), dir_, index_, job, 1 << 20);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->inputs.size(), 1u);
  EXPECT_EQ(got->inputs[0].input, "c0");
  const std::vector<int64_t> keys = {-3, 4, 9, int64_t{1} << 60};
  EXPECT_EQ(got->inputs[0].keys, keys);
  EXPECT_EQ(got->input_dims, (std::map<std::string, int64_t>{{"deep_emb0", 5}, {"wide_emb0", 5}}));
  ASSERT_EQ(got->tables.size(), 2u);
  for (const auto& [var, table] : {std::pair{&deep, deep_table.get()}, std::pair{&wide, wide_table.get()}}) {
    const FloatTensor& w = got->tables.at(var->name);
    const int64_t dim = var->shape[1];
    ASSERT_EQ(w.shape, (std::vector<int64_t>{5, dim}));
    ASSERT_EQ(w.values.size(), static_cast<size_t>(5 * dim));
    for (int64_t j = 0; j < dim; ++j) EXPECT_EQ(w.values[j], 0.0f) << var->name;
    // Rows 1.. are what the table answers for the keys: held rows, or the initial row of a key
    // only the other table holds (4 in deep, -3 and 2^60 in wide).
    std::vector<float> want(keys.size() * dim);
    ASSERT_TRUE(table->Lookup(keys, absl::Span<float>(want)).ok());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(w.values[dim + i], want[i]) << var->name << " " << i;
  }
  // Held rows moved from their initial values (so the check above tells held from initial).
  auto fresh = Trained(job, deep, {});
  std::vector<float> initial(deep.shape[1]), held(deep.shape[1]);
  ASSERT_TRUE(fresh->Lookup(std::vector<int64_t>{9}, absl::Span<float>(initial)).ok());
  ASSERT_TRUE(deep_table->Lookup(std::vector<int64_t>{9}, absl::Span<float>(held)).ok());
  EXPECT_NE(initial, held);

  // The model with the new input_dims reads back with Embedding variables of keys + 1 rows.
  json model = job.model.keras_model;
  ASSERT_TRUE(SetEmbeddingInputDims(got->input_dims, &model).ok());
  absl::StatusOr<ModelGraph> graph = ReadKerasModelJson(model.dump(), "exported");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const int v = graph->FindVariable("wide_emb0/embeddings");
  ASSERT_GE(v, 0);
  EXPECT_EQ(graph->variables[v].shape, (std::vector<int64_t>{5, wide.shape[1]}));
  EXPECT_EQ(graph->variables[graph->FindVariable("deep_emb1/embeddings")].shape[0], 20);  // not dynamic
}

TEST_F(KerasDynamicExportTest, ATableOverTheMemoryBudgetOrAMissingFileIsAnError) {
  absl::StatusOr<JobSpec> spec = WideDeep();
  ASSERT_TRUE(spec.ok()) << spec.status();
  const JobSpec& job = *spec;
  const VariableSpec deep = Variable(job, "deep_emb0/embeddings"), wide = Variable(job, "wide_emb0/embeddings");
  auto deep_table = Trained(job, deep, {1, 2, 3, 4, 5, 6, 7, 8});
  Save(*deep_table, deep.name);
  absl::StatusOr<KerasDynamicExport> missing = ReadDynamicTablesForKeras(Env::Default(), dir_, index_, job, 1 << 20);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr("wide_emb0/embeddings"));

  Save(*Trained(job, wide, {1}), wide.name);
  absl::StatusOr<KerasDynamicExport> big = ReadDynamicTablesForKeras(Env::Default(), dir_, index_, job, 64);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
  EXPECT_THAT(big.status().message(), HasSubstr("deep_emb0/embeddings"));
  EXPECT_THAT(big.status().message(), HasSubstr("--memory_budget_bytes"));
}

TEST(SetEmbeddingInputDimsTest, ANameThatIsNoEmbeddingLayerLeavesTheModelUnchanged) {
  const json original = json::parse(ReadFixture("keras2_wide_deep.json"));
  json model = original;
  absl::Status s = SetEmbeddingInputDims({{"deep_emb0", 7}, {"numeric", 3}}, &model);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("no Embedding layer 'numeric'"));
  EXPECT_EQ(model, original);
  ASSERT_TRUE(SetEmbeddingInputDims({{"deep_emb0", 7}}, &model).ok());  // Keras 2's layout too
  absl::StatusOr<ModelGraph> graph = ReadKerasModelJson(model.dump(), "keras2");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->variables[graph->FindVariable("deep_emb0/embeddings")].shape[0], 7);
}

}  // namespace
}  // namespace pstrain
