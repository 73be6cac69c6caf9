// The model behind `pstrain datagen ctr`: synthetic CTR examples in Criteo's layout (13 numeric
// and 26 categorical fields) whose click probabilities are known exactly, so a trained model can
// be compared with the best possible (Bayes) AUC and log loss on the same examples.
//
// An example: each numeric field I_j is missing with a rate like Criteo's, else a heavy-tailed
// count x = floor(expm1(mu_j + sigma_j * N(0, 1))) (some I2 are -1, as in Criteo); the model sees
// t_j = log(1 + max(x, 0)) (0 when missing), what the reader computes. Each categorical field C_f
// is missing with a rate like Criteo's, else a rank r drawn from Zipf(zipf) over the field's
// vocabulary min(vocabulary, Criteo's cardinality of that field), written as 8 hex digits of
// Scramble_f(r), a bijection of 32-bit integers, so hot ids are scattered, not 0, 1, 2...
// The click logit is
//   z = bias + sum_f a_f d(r_f) e_f(r_f) + sum_j b_j (t_j - mu_j) / sigma_j
//            + sum_(f,g) c d(r_f) d(r_g) <u_f(r_f), u_g(r_g)>
// with e_f(r) ~ N(0, 1) and u_f(r) ~ N(0, I/k) drawn from (seed, field, rank) (a missing field has
// its own rank and d = 1), d(r) = 1 / sqrt(1 + r / 10) so rare ids matter less than hot ones, four
// fixed pairs (f, g) with k = 4, and `bias` solved so that about 25% of examples are clicks
// (Criteo's rate); the label is 1 with probability sigmoid(z). The scales put the default set's
// Bayes AUC near 0.84, and a one-epoch DNN (the PyTorch peer) about 0.013 below it.
// Example i of a split depends only on (seed, split, i), so it is the same however many are drawn.
// Thread-safety: immutable after construction; Draw and AppendLine may run on many threads.
#ifndef PSTRAIN_WORKER_DATA_CTR_PLANTED_MODEL_H_
#define PSTRAIN_WORKER_DATA_CTR_PLANTED_MODEL_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "worker/data/zipf_sampler.h"

namespace pstrain {

inline constexpr int kCtrNumericFields = 13;
inline constexpr int kCtrCategoricalFields = 26;

struct CtrSyntheticOptions {
  int64_t train_examples = 200000;
  int64_t test_examples = 50000;
  uint64_t seed = 1;
  int64_t vocabulary = 1000000;  // the largest fields' vocabulary (smaller fields keep Criteo's)
  double zipf = 1.1;             // Zipf exponent of the ids' frequencies
  // True: the smaller fields keep Criteo's cardinality (at most `vocabulary`); false: every field
  // draws from `vocabulary` ids (an id space far beyond any fixed table, for dynamic tables).
  bool criteo_cardinalities = true;
  // In (0, 1): the popular ids change after that fraction of the training examples. Examples from
  // there on, and the whole test set, belong to a second era whose ranks are other entities: new
  // ids (another scramble) with effects and latent vectors of their own, so a model must learn
  // new rows and the old ones stop coming. 0: one era. (Two eras' ids may coincide by chance in
  // the 32-bit space: rarely, and then with unrelated effects, as hash collisions in real data.)
  double drift_at = 0.0;
};

// InvalidArgument naming the option: examples in 0..1e10 (train) and 1..1e10 (test), vocabulary in
// 1..2^32 (ids are 8 hex digits), zipf in (0, 10], drift_at 0 or in (0, 1).
absl::Status ValidateCtrSyntheticOptions(const CtrSyntheticOptions& options);

enum class CtrSplit { kTrain = 0, kTest = 1, kCalibration = 2 };

struct CtrExample {
  std::array<bool, kCtrNumericFields> numeric_present;
  std::array<int64_t, kCtrNumericFields> numeric;  // the count written (may be -1)
  std::array<bool, kCtrCategoricalFields> categorical_present;
  std::array<int64_t, kCtrCategoricalFields> rank;  // Zipf rank in the field's vocabulary
  std::array<uint32_t, kCtrCategoricalFields> id;   // Scramble_f(rank), written in hex
  double logit = 0.0;
  double probability = 0.0;  // sigmoid(logit)
  float label = 0.0f;
  int era = 0;  // 1 after the drift point (CtrSyntheticOptions::drift_at), else 0
};

class CtrPlantedModel {
 public:
  // REQUIRES: ValidateCtrSyntheticOptions(options) is OK. Solves the bias (a few thousand draws).
  explicit CtrPlantedModel(const CtrSyntheticOptions& options);

  void Draw(CtrSplit split, int64_t index, CtrExample* example) const;
  // Appends `example` as one Criteo TSV line, '\n' included.
  static void AppendLine(const CtrExample& example, std::string* out);

  double bias() const { return bias_; }
  int64_t vocabulary(int field) const { return samplers_[field].n(); }
  // The model's parameters (vocabularies, missing rates, scales, pairs, bias) as JSON.
  nlohmann::json Describe() const;

 private:
  double LogitWithoutBias(const CtrExample& example) const;
  double SolveBias() const;

  CtrSyntheticOptions options_;
  std::vector<ZipfSampler> samplers_;  // per categorical field
  double bias_ = 0.0;
};

// The 32-bit bijection that scatters field `field`'s ranks (exposed for tests).
uint32_t ScrambleId(uint64_t seed, int field, uint32_t rank);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_CTR_PLANTED_MODEL_H_
