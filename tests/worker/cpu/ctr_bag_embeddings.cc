// Prints the combined embeddings of a tfrecord CTR job's test examples as the CPU CTR model
// computes them (ShardIterator's batches, IdDeduper, the gathered rows, CtrModel's forward), for a
// test comparing them with TensorFlow's tf.nn.embedding_lookup_sparse on the same tables.
//
// Usage: ctr_bag_embeddings JOB.json TABLES_DIR
// TABLES_DIR holds <field name>.f32 per model field: its table, [vocabulary_size, embedding_dim]
// little-endian float32. Prints one line per test example: the tower input after the numeric
// inputs (each field's embedding, in field order), tab-separated, %.9g.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "common/platform/env.h"
#include "worker/cpu/ctr_model.h"
#include "worker/data/ctr_dataset.h"
#include "worker/data/shard_iterator.h"
#include "worker/exchange/sparse_lookup.h"

namespace pstrain {
namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "ctr_bag_embeddings: %s\n", what.c_str());
  return 1;
}

int Run(const std::string& job_path, const std::string& tables_dir) {
  absl::StatusOr<JobSpec> job = LoadJobSpec(job_path);
  if (!job.ok()) return Fail(job.status().ToString());
  absl::StatusOr<Dataset> data = LoadCtrDataset(Env::Default(), *job, Split::kTest, "");
  if (!data.ok()) return Fail(data.status().ToString());
  absl::StatusOr<std::vector<VariableSpec>> vars = ModelVariables(job->model);
  if (!vars.ok()) return Fail(vars.status().ToString());
  absl::StatusOr<std::unique_ptr<CtrModel>> model = CtrModel::Create(job->model);
  if (!model.ok()) return Fail(model.status().ToString());
  absl::StatusOr<std::unique_ptr<IdDeduper>> dedupe = IdDeduper::ForModel(job->model, *vars);
  if (!dedupe.ok()) return Fail(dedupe.status().ToString());
  const int fields = (*model)->num_fields();
  std::vector<std::vector<float>> tables(fields);
  for (int f = 0; f < fields; ++f) {
    const std::string path = tables_dir + "/" + job->model.fields[f].name + ".f32";
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto& shape = (*vars)[f].shape;
    if (static_cast<int64_t>(bytes.size()) != shape[0] * shape[1] * 4) {
      return Fail(path + " is not the field's table of float32 [vocabulary_size, embedding_dim]");
    }
    tables[f].resize(shape[0] * shape[1]);
    std::memcpy(tables[f].data(), bytes.data(), bytes.size());
  }
  std::vector<std::vector<float>> dense;  // the tower: zeros (only its input is printed)
  for (size_t v = fields; v < vars->size(); ++v) dense.emplace_back(NumElements((*vars)[v].shape), 0.f);
  const EmbeddingLayout& layout = (*model)->layout();
  for (int64_t begin = 0; begin < data->size; begin += 64) {
    const int64_t end = std::min(data->size, begin + 64);
    Batch batch;
    FillRange(*data, begin, end, &batch);
    SparseLookup lookup;
    absl::Status built = (*dedupe)->Build(&batch, &lookup);
    if (!built.ok()) return Fail(built.ToString());
    std::vector<std::vector<float>> rows(fields);
    std::vector<const float*> params;
    std::vector<std::vector<float>> coef(batch.bags.size());
    std::vector<BagView> bags(fields);
    for (int f = 0; f < fields; ++f) {
      const int64_t dim = (*vars)[f].shape[1];
      for (int64_t id : lookup.unique_ids[f]) {
        rows[f].insert(rows[f].end(), tables[f].begin() + id * dim, tables[f].begin() + (id + 1) * dim);
      }
      params.push_back(rows[f].data());
    }
    for (const auto& d : dense) params.push_back(d.data());
    for (size_t k = 0; k < batch.bags.size(); ++k) {
      const IdBags& bag = batch.bags[k];
      BagCoefficients(job->model.fields[bag.field].combiner, bag.offsets.data(), bag.examples(),
                      bag.weights.empty() ? nullptr : bag.weights.data(), &coef[k]);
      bags[bag.field] = BagView{bag.offsets.data(), batch.bag_positions[k].data(), coef[k].data()};
    }
    BatchMetrics metrics;
    (*model)->Evaluate(params.data(), batch.inputs.data<float>(), batch.positions.data(),
                       batch.bags.empty() ? nullptr : bags.data(), batch.targets.data(), end - begin, &metrics);
    const float* x = (*model)->tower_input();
    for (int64_t b = 0; b < end - begin; ++b) {
      for (int64_t j = layout.num_numeric; j < layout.width; ++j) {
        std::printf(j == layout.num_numeric ? "%.9g" : "\t%.9g", x[b * layout.width + j]);
      }
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace
}  // namespace pstrain

int main(int argc, char** argv) {
  if (argc != 3) return pstrain::Fail("usage: ctr_bag_embeddings JOB.json TABLES_DIR");
  return pstrain::Run(argv[1], argv[2]);
}
