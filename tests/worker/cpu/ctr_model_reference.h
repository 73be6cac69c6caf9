// The CTR model's naive reference for the CPU CTR model tests (ctr_model_test, ctr_bag_model_test):
// per example, in double, straight from the definitions (the tower, the stable log loss, the
// combiners of bag fields), sharing no code with worker/cpu. Also the step the tests build: a
// batch, its lookup as a worker builds it, and random parameters.
// Thread-safety: plain functions.
#ifndef PSTRAIN_TESTS_WORKER_CPU_CTR_MODEL_REFERENCE_H_
#define PSTRAIN_TESTS_WORKER_CPU_CTR_MODEL_REFERENCE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/config/job_spec.h"
#include "common/tensor/tensor.h"
#include "worker/step/batch.h"
#include "worker/exchange/sparse_lookup.h"

namespace pstrain {

struct CtrStep {
  Batch batch;
  SparseLookup lookup;
  std::vector<Tensor> tables;  // full tables
  std::vector<Tensor> params;  // the tables' gathered unique rows, then the tower
};

// Given s->batch (inputs, targets, ids, bags), builds its lookup with IdDeduper and random
// parameters from `seed`: full tables in s->tables, their gathered unique rows and the tower in
// s->params. Fails the current test when the batch does not dedupe.
void FinishCtrStep(const ModelSpec& model, uint32_t seed, CtrStep* s);

// Example b's entries of field f as (id, weight): one entry of weight 1 for a one-id field, the
// bag's ids (weight 1 unless weighted) for a bag field.
std::vector<std::pair<int64_t, double>> CtrFieldEntries(const ModelSpec& model, const Batch& batch, int64_t b,
                                                        int f);

// Per entry its factor in the combined embedding: sum w e; mean sum(w e) / sum(w); sqrtn
// sum(w e) / sqrt(sum(w^2)); "" (a one-id field) as sum.
std::vector<double> CombinerFactors(const std::string& combiner,
                                    const std::vector<std::pair<int64_t, double>>& entries);

// The loss times `scale`, and in *grads the gradient of every variable of ModelVariables(model)
// times `scale`: tables as full [V, dim] tables indexed by id (so duplicates are summed by
// construction), the tower's kernels and biases.
double CtrNaiveReference(const ModelSpec& model, const CtrStep& s, double scale,
                         std::vector<std::vector<double>>* grads);

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_WORKER_CPU_CTR_MODEL_REFERENCE_H_
