// A deliberately naive, double-precision CPU reference of the model library (direct convolution
// loops, no im2col, no GEMM) for checking the device executor layer by layer: every activation, the
// input gradient, every parameter gradient, the loss sum and the correct count.
// Thread-safety: pure functions.
#ifndef PSTRAIN_TESTS_WORKER_CUDA_NAIVE_MODEL_REFERENCE_H_
#define PSTRAIN_TESTS_WORKER_CUDA_NAIVE_MODEL_REFERENCE_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/config/job_spec.h"
#include "common/tensor/tensor.h"
#include "worker/step/batch.h"

namespace pstrain {

struct ReferenceResult {
  std::vector<std::vector<double>> activations;  // activations[i]: output of layer i, whole batch
  std::vector<double> input_grad;                // d(scaled loss)/d(inputs)
  std::vector<std::vector<double>> param_grads;  // ModelVariables() order
  double loss_sum = 0.0;
  int64_t correct = 0;
};

// REQUIRES: the model is valid (PlanModel accepts it), params/batch fit it. MaxPool2D gives the
// gradient to the FIRST maximum of its window in row-major order.
ReferenceResult NaiveReference(const ModelSpec& model, absl::Span<const Tensor> params, const Batch& batch,
                               double loss_scale);

// Parameters with values uniform in [-scale, scale] (ModelVariables() order), from `rng`.
std::vector<Tensor> RandomParams(const ModelSpec& model, std::mt19937* rng, float scale = 0.5f);

// A batch of `size` examples: inputs uniform in [-1, 1] (or integers 0..levels-1 when levels > 0,
// which makes ties in pooling windows), labels uniform over the classes / targets uniform in [-1, 1].
Batch RandomBatch(const ModelSpec& model, int64_t size, std::mt19937* rng, int levels = 0);

// The model of a job document {"model": <model_json>} (Keras-style layer names filled in).
ModelSpec ModelFromJson(const std::string& model_json);

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_WORKER_CUDA_NAIVE_MODEL_REFERENCE_H_
