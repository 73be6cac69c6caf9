// Keras models with id inputs on CTR batches: the ctr preset written by real Keras 3 gives the CTR
// model's gradient rows, loss and logits on the same parameters (the two share no code); a Wide &
// Deep model, whose ids feed two tables each, gives per unique id the rows of the executor's dense
// gradient over whole tables; fields that share one table share its unique ids.
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/config/job_spec.h"
#include "common/graph/layer_model_keras.h"
#include "common/plan/model_variables.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/graph/keras_fixture.h"
#include "tests/worker/cpu/grad_check.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/exchange/sparse_lookup.h"
#include "worker/graph/graph_executor.h"
#include "worker/graph/losses.h"

namespace pstrain {
namespace {

using nlohmann::json;

JobSpec CtrJob(const std::string& fixture) {
  json job = {{"model", {{"keras_model", json::parse(ReadFixture(fixture))}}},
              {"data", {{"dataset", "criteo"}}},
              {"schedule", {{"steps", 1}}}};
  auto spec = JobSpecFromJson(job);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

// n examples of `numeric` features and ids drawn from [0, id_range) so that they repeat.
Batch CtrBatch(int64_t n, int64_t numeric, int64_t fields, int64_t id_range, uint32_t seed) {
  Batch b;
  b.inputs = Tensor(DType::kFloat32, {n, numeric});
  std::vector<float> r = RandomVector(n * numeric, seed, 0.f, 1.f);
  std::copy(r.begin(), r.end(), b.inputs.flat().begin());
  std::vector<float> u = RandomVector(n * fields, seed + 1, 0.f, static_cast<float>(id_range));
  for (float x : u) b.ids.push_back(std::min<int64_t>(static_cast<int64_t>(x), id_range - 1));
  for (int64_t i = 0; i < n; ++i) b.targets.push_back(static_cast<float>((i * 5 + seed) % 3 == 0));
  return b;
}

// Per variable name: whole tables and dense variables, random.
std::map<std::string, Tensor> RandomValues(const std::vector<VariableSpec>& variables, uint32_t seed) {
  std::map<std::string, Tensor> values;
  for (const VariableSpec& v : variables) {
    Tensor t(DType::kFloat32, v.shape);
    std::vector<float> r = RandomVector(t.num_elements(), seed++, -0.1f, 0.1f);
    std::copy(r.begin(), r.end(), t.flat().begin());
    values.emplace(v.name, std::move(t));
  }
  return values;
}

// The step's parameters: dense variables whole, tables as the rows of the lookup's unique ids.
std::vector<Tensor> StepParams(const std::vector<VariableSpec>& variables, const std::map<std::string, Tensor>& values,
                               const SparseLookup& lookup) {
  std::vector<Tensor> params;
  for (size_t v = 0; v < variables.size(); ++v) {
    const Tensor& whole = values.at(variables[v].name);
    if (!variables[v].sparse) {
      params.push_back(whole);
      continue;
    }
    const int64_t dim = variables[v].shape[1];
    const std::vector<int64_t>& ids = lookup.unique_ids[v];
    params.emplace_back(DType::kFloat32, std::vector<int64_t>{static_cast<int64_t>(ids.size()), dim});
    for (size_t r = 0; r < ids.size(); ++r) {
      std::copy(whole.data<float>() + ids[r] * dim, whole.data<float>() + (ids[r] + 1) * dim,
                params.back().data<float>() + r * dim);
    }
  }
  return params;
}

// One step of `job`'s CPU gradient computer on `raw` (ids deduplicated as a worker does, tables
// given as the rows of the step's unique ids): each variable's gradient and unique ids, and the
// metrics.
struct StepRun {
  std::map<std::string, Tensor> grads;
  std::map<std::string, std::vector<int64_t>> unique;
  BatchMetrics metrics;
};
StepRun RunStep(const JobSpec& job, const std::vector<VariableSpec>& vars, const std::map<std::string, Tensor>& values,
                const Batch& raw, int threads) {
  StepRun out;
  auto dedupe = IdDeduper::ForModel(job.model, vars);
  EXPECT_TRUE(dedupe.ok()) << dedupe.status();
  Batch batch = raw;
  SparseLookup lookup;
  const absl::Status built = (*dedupe)->Build(&batch, &lookup);
  EXPECT_TRUE(built.ok()) << built;
  const std::vector<Tensor> params = StepParams(vars, values, lookup);
  auto computer = NewCpuGradientComputer(job.model, threads);
  EXPECT_TRUE(computer.ok()) << computer.status();
  std::vector<Tensor> grads;
  absl::Status s = (*computer)->Compute(params, batch, 1.0f / static_cast<float>(raw.size()), &grads, &out.metrics);
  EXPECT_TRUE(s.ok()) << s;
  for (size_t v = 0; v < vars.size() && v < grads.size(); ++v) {
    out.grads.emplace(vars[v].name, grads[v]);
    out.unique[vars[v].name] = lookup.unique_ids[v];
  }
  return out;
}

// `got` has `want`'s gradients (to 1e-4 of the largest element), loss and logits.
void ExpectSameStep(const StepRun& got, const StepRun& want, int threads) {
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (const auto& [name, g] : want.grads) {
    ASSERT_TRUE(got.grads.count(name)) << name;
    EXPECT_EQ(got.unique.at(name), want.unique.at(name)) << name;
    const Tensor& h = got.grads.at(name);
    ASSERT_EQ(h.shape(), g.shape()) << name;
    double max_abs = 1e-3;
    for (float x : g.flat()) max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
    for (int64_t e = 0; e < g.num_elements(); ++e) {
      ASSERT_NEAR(h.flat()[e], g.flat()[e], 1e-4 * max_abs) << name << " element " << e << ", threads " << threads;
    }
  }
  EXPECT_NEAR(got.metrics.loss_sum, want.metrics.loss_sum, 1e-5 * want.metrics.loss_sum);
  ASSERT_EQ(got.metrics.logits.size(), want.metrics.logits.size());
  for (size_t i = 0; i < want.metrics.logits.size(); ++i) {
    EXPECT_NEAR(got.metrics.logits[i], want.metrics.logits[i], 1e-4);
  }
  EXPECT_EQ(got.metrics.labels, want.metrics.labels);
}

TEST(CtrGraphGradientComputerTest, CtrPresetFromKerasEqualsTheCtrModel) {
  auto preset = LoadJobSpec("ctr");
  ASSERT_TRUE(preset.ok());
  const JobSpec graph_job = CtrJob("keras3_ctr_preset.json");
  ASSERT_TRUE(graph_job.model.is_graph());
  ASSERT_EQ(graph_job.model.numeric_inputs, 13);
  ASSERT_EQ(graph_job.model.fields.size(), 26u);

  const std::vector<VariableSpec> preset_vars = *ModelVariables(preset->model);
  const std::vector<VariableSpec> graph_vars = *ModelVariables(graph_job.model);
  const std::map<std::string, Tensor> values = RandomValues(preset_vars, 7);
  const Batch raw = CtrBatch(48, 13, 26, 30, 4);

  const StepRun want = RunStep(*preset, preset_vars, values, raw, 1);
  ASSERT_EQ(want.metrics.logits.size(), 48u);
  for (int threads : {1, 2}) ExpectSameStep(RunStep(graph_job, graph_vars, values, raw, threads), want, threads);
}

// The ctr preset written as a Keras model by pstrain (layer_model_keras.h), in both flavors,
// computes the CTR model's steps.
TEST(CtrGraphGradientComputerTest, CtrPresetAsKerasModelEqualsTheCtrModel) {
  auto preset = LoadJobSpec("ctr");
  ASSERT_TRUE(preset.ok());
  const std::vector<VariableSpec> preset_vars = *ModelVariables(preset->model);
  const std::map<std::string, Tensor> values = RandomValues(preset_vars, 13);
  const Batch raw = CtrBatch(33, 13, 26, 25, 5);
  const StepRun want = RunStep(*preset, preset_vars, values, raw, 1);
  for (KerasJsonFlavor flavor : {KerasJsonFlavor::kKeras3, KerasJsonFlavor::kKeras2}) {
    JobSpec graph_job = *preset;
    auto model = LayerModelAsGraph(preset->model, flavor);
    ASSERT_TRUE(model.ok()) << model.status();
    graph_job.model = *model;
    const std::vector<VariableSpec> graph_vars = *ModelVariables(graph_job.model);
    for (int threads : {1, 2}) ExpectSameStep(RunStep(graph_job, graph_vars, values, raw, threads), want, threads);
  }
}

// Bags (multi-hot ids) on two of the Keras ctr preset's inputs: its Embedding layers combine them
// as the CTR model's bag fields do (checked there against a naive reference and finite
// differences): the same gradient rows, loss and logits, on 1 and 2 threads.
TEST(CtrGraphGradientComputerTest, BagsOnKerasInputsEqualTheCtrModelsBagFields) {
  auto preset = LoadJobSpec("ctr");
  ASSERT_TRUE(preset.ok());
  JobSpec graph_job = CtrJob("keras3_ctr_preset.json");
  for (JobSpec* job : {&*preset, &graph_job}) {
    job->model.fields[1].combiner = "mean";
    job->model.fields[4].combiner = "sqrtn";
  }
  const std::vector<VariableSpec> preset_vars = *ModelVariables(preset->model);
  const std::vector<VariableSpec> graph_vars = *ModelVariables(graph_job.model);
  const std::map<std::string, Tensor> values = RandomValues(preset_vars, 11);
  const int64_t n = 40;
  Batch raw = CtrBatch(n, 13, 26, 30, 6);
  for (int field : {1, 4}) {  // 0..5 ids each (repeats and empty bags included); weights on field 4
    IdBags& bag = raw.bags.emplace_back();
    bag.field = field;
    bag.offsets = {0};
    std::vector<float> r = RandomVector(n * 7, 40 + field, 0.f, 1.f);
    for (int64_t b = 0; b < n; ++b) {
      const int len = static_cast<int>(r[b * 7] * 6);
      for (int i = 0; i < len; ++i) {
        bag.ids.push_back(static_cast<int64_t>(r[b * 7 + 1 + i] * 30) % 30);
        if (field == 4) bag.weights.push_back(0.5f + r[b * 7 + 1 + i]);
      }
      bag.offsets.push_back(static_cast<int64_t>(bag.ids.size()));
      raw.ids[b * 26 + field] = 0;
    }
  }
  const StepRun want = RunStep(*preset, preset_vars, values, raw, 1);
  // The bag fields' tables got rows from the bags (not only position 0's row).
  ASSERT_GT(want.grads.at(preset_vars[1].name).dim(0), 1);
  ASSERT_EQ(want.metrics.logits.size(), static_cast<size_t>(n));
  for (int threads : {1, 2}) ExpectSameStep(RunStep(graph_job, graph_vars, values, raw, threads), want, threads);
  // A batch without the bag of a bag field is refused, naming the field.
  auto computer = NewCpuGradientComputer(graph_job.model, 1);
  ASSERT_TRUE(computer.ok());
  auto dedupe = IdDeduper::ForModel(graph_job.model, graph_vars);
  ASSERT_TRUE(dedupe.ok());
  Batch lacking = raw;
  lacking.bags.pop_back();
  SparseLookup lookup;
  ASSERT_TRUE((*dedupe)->Build(&lacking, &lookup).ok());
  std::vector<Tensor> grads;
  BatchMetrics m;
  absl::Status s = (*computer)->Compute(StepParams(graph_vars, values, lookup), lacking, 1.0f, &grads, &m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("field 4 is a bag (sqrtn) but the batch has no bag for it"), std::string::npos) << s;
}

// `got` has `want`'s gradients per variable and, for tables, per id (an id one step has and the
// other lacks must have a zero row), loss and logits.
void ExpectSameRowsById(const StepRun& got, const StepRun& want, const std::string& what) {
  for (const auto& [name, g] : want.grads) {
    ASSERT_TRUE(got.grads.count(name)) << name;
    const Tensor& h = got.grads.at(name);
    const std::vector<int64_t>&gu = got.unique.at(name), &wu = want.unique.at(name);
    if (gu.empty() && wu.empty()) {
      ASSERT_EQ(h.shape(), g.shape()) << name;
      for (int64_t e = 0; e < g.num_elements(); ++e) ASSERT_NEAR(h.flat()[e], g.flat()[e], 1e-6) << what << name;
      continue;
    }
    const int64_t dim = g.dim(1);
    std::map<int64_t, std::vector<double>> rows;  // want - got per id
    for (size_t r = 0; r < wu.size(); ++r) {
      rows[wu[r]].resize(dim);
      for (int64_t k = 0; k < dim; ++k) rows[wu[r]][k] += g.flat()[r * dim + k];
    }
    for (size_t r = 0; r < gu.size(); ++r) {
      rows[gu[r]].resize(dim);
      for (int64_t k = 0; k < dim; ++k) rows[gu[r]][k] -= h.flat()[r * dim + k];
    }
    for (const auto& [id, diff] : rows) {
      for (int64_t k = 0; k < dim; ++k) ASSERT_NEAR(diff[k], 0.0, 1e-6) << what << name << " id " << id;
    }
  }
  EXPECT_NEAR(got.metrics.loss_sum, want.metrics.loss_sum, 1e-6 * want.metrics.loss_sum) << what;
  ASSERT_EQ(got.metrics.logits.size(), want.metrics.logits.size());
  for (size_t i = 0; i < want.metrics.logits.size(); ++i) EXPECT_NEAR(got.metrics.logits[i], want.metrics.logits[i], 1e-6);
}

// Two towers with input c1 of shape (2,): its two columns are two fields sharing table emb1. A bag
// in either column, given as `sum` of the column's id or `mean` of it twice, gives the step of the
// same batch with the id in place, per id; the bag field's placeholder id (0) gets nothing.
TEST(CtrGraphGradientComputerTest, BagsInColumnsOfAKerasInputShareItsTable) {
  json model = json::parse(ReadFixture("keras3_two_tower.json"));
  for (json& layer : model["config"]["layers"]) {
    if (layer["config"]["name"] == "c1") layer["config"]["batch_shape"] = {nullptr, 2};
  }
  auto parsed = JobSpecFromJson(
      {{"model", {{"keras_model", model}}}, {"data", {{"dataset", "criteo"}}}, {"schedule", {{"steps", 1}}}});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const JobSpec job = *parsed;
  ASSERT_EQ(job.model.fields.size(), 5u);
  ASSERT_EQ(job.model.fields[1].tables, job.model.fields[2].tables);
  const std::vector<VariableSpec> vars = *ModelVariables(job.model);
  const std::map<std::string, Tensor> values = RandomValues(vars, 5);
  const int64_t n = 24;
  const Batch ref = CtrBatch(n, 3, 5, 20, 9);  // the tables have 20 rows
  const StepRun want = RunStep(job, vars, values, ref, 1);
  for (int column : {0, 1}) {
    for (const char* combiner : {"sum", "mean"}) {
      const int field = 1 + column;
      JobSpec bag_job = job;
      bag_job.model.fields[field].combiner = combiner;
      Batch raw = ref;
      IdBags& bag = raw.bags.emplace_back();
      bag.field = field;
      bag.offsets = {0};
      for (int64_t b = 0; b < n; ++b) {
        const int64_t id = ref.ids[b * 5 + field];
        bag.ids.insert(bag.ids.end(), std::string(combiner) == "sum" ? 1 : 2, id);
        bag.offsets.push_back(static_cast<int64_t>(bag.ids.size()));
        raw.ids[b * 5 + field] = 0;
      }
      for (int threads : {1, 2}) {
        ExpectSameRowsById(RunStep(bag_job, vars, values, raw, threads), want,
                           absl::StrCat("column ", column, " ", combiner, ", threads ", threads, ": "));
      }
    }
  }
}

// Wide & Deep: each id input feeds a wide and a deep Embedding. The gradient rows of the step
// (tables given as the batch's rows, ids as positions) equal the executor's dense gradient over
// whole tables (ids as ids), read at the unique ids.
TEST(CtrGraphGradientComputerTest, TablesSharingAnInputGetTheDenseGradientsRows) {
  for (const char* fixture : {"keras3_wide_deep.json", "keras2_wide_deep.json"}) {
    const JobSpec job = CtrJob(fixture);
    ASSERT_EQ(job.model.fields.size(), 4u);
    ASSERT_EQ(job.model.fields[0].tables.size(), 2u) << fixture;
    const std::vector<VariableSpec> vars = *ModelVariables(job.model);
    const std::map<std::string, Tensor> values = RandomValues(vars, 3);
    const int64_t n = 12;
    Batch batch = CtrBatch(n, 3, 4, 6, 8);
    const Batch raw = batch;
    auto dedupe = IdDeduper::ForModel(job.model, vars);
    ASSERT_TRUE(dedupe.ok()) << dedupe.status();
    SparseLookup lookup;
    ASSERT_TRUE((*dedupe)->Build(&batch, &lookup).ok());
    auto computer = NewCpuGradientComputer(job.model, 2);
    ASSERT_TRUE(computer.ok()) << computer.status();
    std::vector<Tensor> grads;
    BatchMetrics metrics;
    ASSERT_TRUE((*computer)->Compute(StepParams(vars, values, lookup), batch, 1.0f / n, &grads, &metrics).ok());

    // The reference: one executor, whole tables, raw ids, Keras's mean loss (scale 1/n as above).
    GraphExecutor<float> executor(*job.model.graph);
    NamedArrays<float> named;
    for (const auto& [name, t] : values) {
      named[name].shape = t.shape();
      named[name].data.assign(t.data<float>(), t.data<float>() + t.num_elements());
    }
    std::vector<Array<float>> inputs;
    int64_t field = 0, numeric = 0;
    for (int in : job.model.graph->inputs) {
      const GraphLayerSpec& spec = job.model.graph->layers[in];
      Array<float> a;
      const int64_t width = spec.output_shape.empty() ? 1 : spec.output_shape[0];
      a.shape = {n};
      a.shape.insert(a.shape.end(), spec.output_shape.begin(), spec.output_shape.end());
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t j = 0; j < width; ++j) {
          a.data.push_back(spec.config.int_input ? static_cast<float>(raw.ids[b * 4 + field + j])
                                                 : raw.inputs.data<float>()[b * 3 + numeric + j]);
        }
      }
      (spec.config.int_input ? field : numeric) += width;
      inputs.push_back(std::move(a));
    }
    auto out = executor.Forward(inputs, named, ForwardOptions{});
    ASSERT_TRUE(out.ok()) << out.status();
    Array<float> labels;
    labels.shape = (*out)->shape;
    labels.data = raw.targets;
    Array<float> dout;
    auto loss = ComputeLoss(LossSpec{LossKind::kBinaryCrossentropy, job.model.from_logits}, **out, labels, &dout);
    ASSERT_TRUE(loss.ok());
    EXPECT_NEAR(metrics.loss_sum / n, *loss, 1e-5);
    NamedArrays<float> dense;
    ASSERT_TRUE(executor.Backward(dout, &dense).ok());

    int tables = 0;
    for (size_t v = 0; v < vars.size(); ++v) {
      const Array<float>& full = dense.at(vars[v].name);
      if (!vars[v].sparse) {
        for (int64_t e = 0; e < grads[v].num_elements(); ++e) {
          ASSERT_NEAR(grads[v].flat()[e], full.data[e], 1e-5) << vars[v].name;
        }
        continue;
      }
      ++tables;
      const int64_t dim = vars[v].shape[1];
      const std::vector<int64_t>& ids = lookup.unique_ids[v];
      ASSERT_EQ(grads[v].dim(0), static_cast<int64_t>(ids.size())) << vars[v].name;
      for (size_t r = 0; r < ids.size(); ++r) {
        for (int64_t c = 0; c < dim; ++c) {
          ASSERT_NEAR(grads[v].flat()[r * dim + c], full.data[ids[r] * dim + c], 1e-5) << vars[v].name << " id " << ids[r];
        }
      }
    }
    EXPECT_EQ(tables, 8) << fixture << ": a wide and a deep table per field";
  }
}

// Two fields that share one table (ids of shape [k] into one Embedding) share its unique ids;
// a table that takes another's ids gets the same list.
TEST(CtrGraphGradientComputerTest, FieldsSharingATableShareItsUniqueIds) {
  std::vector<VariableSpec> vars = {{"a/embeddings", {10, 2}, DType::kFloat32, {}, true},
                                    {"dense/kernel", {4, 1}},
                                    {"b/embeddings", {10, 1}, DType::kFloat32, {}, true}};
  IdDeduper dedupe(vars, {{0, 2}, {0, 2}});
  Batch batch;
  batch.inputs = Tensor(DType::kFloat32, {3, 1});
  batch.ids = {4, 7, 7, 4, 9, 5};  // [3 examples, 2 fields]
  SparseLookup lookup;
  ASSERT_TRUE(dedupe.Build(&batch, &lookup).ok());
  EXPECT_EQ(lookup.unique_ids[0], (std::vector<int64_t>{4, 7, 9, 5})) << "field 0's ids first, then field 1's new ones";
  EXPECT_EQ(lookup.unique_ids[2], lookup.unique_ids[0]);
  EXPECT_TRUE(lookup.unique_ids[1].empty());
  EXPECT_EQ(batch.positions, (std::vector<int32_t>{0, 1, 1, 0, 2, 3}));
}

}  // namespace
}  // namespace pstrain
