#include "worker/data/ctr_planted_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "worker/data/random_stream.h"

namespace pstrain {
namespace {

// Criteo Kaggle's per-field statistics, roughly: distinct ids of C1..C26, the missing rates of
// I1..I13 and C1..C26, and the median count of I1..I13.
constexpr std::array<int64_t, kCtrCategoricalFields> kCriteoCardinality = {
    1460, 583,   10131227, 2202608, 305,  24,   12517, 633,     3,  93145, 5683,   8351593, 3194,
    27,   14992, 5461306,  10,      5652, 2173, 4,     7046547, 18, 15,    286181, 105,     142572};
constexpr std::array<double, kCtrCategoricalFields> kCategoricalMissing = {
    0, 0, 0.034, 0.034, 0, 0.121, 0,    0,     0,     0, 0,     0.034, 0,
    0, 0, 0.034, 0,     0, 0.44,  0.44, 0.034, 0.763, 0, 0.034, 0.44,  0.44};
constexpr std::array<double, kCtrNumericFields> kNumericMissing = {0.454,  0,     0.215, 0.217, 0.026, 0.224, 0.043,
                                                                   0.0005, 0.043, 0.454, 0.043, 0.766, 0.217};
constexpr std::array<double, kCtrNumericFields> kNumericMedian = {1, 3, 6, 4, 2800, 33, 3, 7, 37, 1, 1, 0, 4};
constexpr std::array<double, kCtrNumericFields> kNumericLogSd = {1.0, 1.5, 1.2, 1.0, 1.5, 1.3, 1.2,
                                                                 1.0, 1.3, 0.8, 1.0, 1.0, 1.1};
constexpr double kMinusOneRateI2 = 0.05;  // Criteo's I2 holds some -1

// The planted effects: per categorical field, the scale a_f of its ids' effects (some fields
// carry much signal, some little, as in real data); per numeric field, b_j.
constexpr std::array<double, kCtrCategoricalFields> kIdEffect = {
    0.600, 0.450, 0.525, 0.450, 0.375, 0.525, 0.450, 0.300, 0.225, 0.450, 0.375, 0.450, 0.300,
    0.225, 0.375, 0.450, 0.300, 0.300, 0.375, 0.150, 0.450, 0.225, 0.300, 0.375, 0.225, 0.300};
// An id's effect shrinks with its rank as 1 / sqrt(1 + rank / kEffectDecayRank): rare ids behave
// nearly like the average, so most of the signal sits in ids a model sees often enough to learn
// (with undamped tails a one-epoch model ends far from the Bayes AUC, whatever its quality).
constexpr double kEffectDecayRank = 10.0;
constexpr std::array<double, kCtrNumericFields> kNumericEffect = {0.30,  -0.20, 0.15, 0.25, -0.10, 0.20, 0.30,
                                                                  -0.15, 0.10,  0.25, 0.20, -0.10, 0.15};
// Pairwise interactions: <u_f, u_g> over kInteractionDim dimensions, times kInteractionScale.
constexpr int kInteractionDim = 4;
constexpr double kInteractionScale = 0.25;
constexpr std::array<std::array<int, 2>, 4> kInteractionPairs = {{{0, 1}, {4, 6}, {7, 10}, {12, 14}}};

constexpr double kTargetPositiveRate = 0.25;
constexpr int64_t kCalibrationExamples = 20000;

// Keys of the pure functions of (seed, field, rank): effects, latent vectors, scrambles.
uint64_t Key(uint64_t seed, uint64_t kind, uint64_t field, uint64_t rank) {
  return MixSeed(MixSeed(MixSeed(seed, kind), field), rank);
}
enum KeyKind : uint64_t { kEffectKey = 1, kLatentKey = 2, kScrambleKey = 3, kExampleKey = 4 };

// The seed of an era's entities: era 0 keeps the options' seed, so sets without drift are unchanged.
uint64_t EraSeed(uint64_t seed, int era) { return era == 0 ? seed : MixSeed(seed, 0xE4A0000000000000ull + era); }

double Sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// 1 / sqrt(1 + rank / kEffectDecayRank) of a present field; 1 for a missing one.
double Decay(const CtrExample& example, int field) {
  if (!example.categorical_present[field]) return 1.0;
  return 1.0 / std::sqrt(1.0 + static_cast<double>(example.rank[field]) / kEffectDecayRank);
}

}  // namespace

absl::Status ValidateCtrSyntheticOptions(const CtrSyntheticOptions& options) {
  constexpr int64_t kMaxExamples = 10'000'000'000;
  if (options.train_examples < 0 || options.train_examples > kMaxExamples) {
    return absl::InvalidArgumentError(
        absl::StrCat("--train must be in 0..", kMaxExamples, " examples, got ", options.train_examples));
  }
  if (options.test_examples < 1 || options.test_examples > kMaxExamples) {
    return absl::InvalidArgumentError(
        absl::StrCat("--test must be in 1..", kMaxExamples, " examples, got ", options.test_examples));
  }
  if (options.vocabulary < 1 || options.vocabulary > (int64_t{1} << 32)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--vocabulary must be in 1..4294967296 (ids are 8 hex digits, as Criteo's), got ", options.vocabulary));
  }
  if (!(options.zipf > 0.0 && options.zipf <= 10.0)) {
    return absl::InvalidArgumentError(absl::StrCat("--zipf must be in (0, 10], got ", options.zipf));
  }
  if (!(options.drift_at == 0.0 || (options.drift_at > 0.0 && options.drift_at < 1.0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--drift_at must be 0 (no drift) or a fraction of the training set in (0, 1), got ",
                     options.drift_at));
  }
  return absl::OkStatus();
}

uint32_t ScrambleId(uint64_t seed, int field, uint32_t rank) {
  // xor with a key, then multiply-xorshift rounds: each step is a bijection of 32-bit integers.
  const uint64_t key = Key(seed, kScrambleKey, static_cast<uint64_t>(field), 0);
  uint32_t x = rank ^ static_cast<uint32_t>(key);
  x *= 0x9E3779B1u;
  x ^= x >> 16;
  x *= 0x85EBCA6Bu | 1u;
  x ^= x >> 13;
  x += static_cast<uint32_t>(key >> 32);
  x *= 0xC2B2AE35u | 1u;
  x ^= x >> 16;
  return x;
}

CtrPlantedModel::CtrPlantedModel(const CtrSyntheticOptions& options) : options_(options) {
  for (int f = 0; f < kCtrCategoricalFields; ++f) {
    const int64_t n = options.criteo_cardinalities ? std::min(options.vocabulary, kCriteoCardinality[f])
                                                   : options.vocabulary;
    samplers_.emplace_back(n, options.zipf);
  }
  bias_ = SolveBias();
}

void CtrPlantedModel::Draw(CtrSplit split, int64_t index, CtrExample* example) const {
  RandomStream random(Key(options_.seed, kExampleKey, static_cast<uint64_t>(split), static_cast<uint64_t>(index)));
  const bool drifted = options_.drift_at > 0.0 &&
                       (split == CtrSplit::kTest ||
                        (split == CtrSplit::kTrain &&
                         static_cast<double>(index) >= options_.drift_at * static_cast<double>(options_.train_examples)));
  example->era = drifted ? 1 : 0;
  const uint64_t era_seed = EraSeed(options_.seed, example->era);
  for (int j = 0; j < kCtrNumericFields; ++j) {
    example->numeric_present[j] = random.Uniform() >= kNumericMissing[j];
    const double log_count = std::log1p(kNumericMedian[j]) + kNumericLogSd[j] * random.Normal();
    int64_t count = static_cast<int64_t>(std::floor(std::min(std::expm1(log_count), 1e9)));
    if (j == 1 && random.Uniform() < kMinusOneRateI2) count = -1;
    example->numeric[j] = std::max<int64_t>(count, j == 1 ? -1 : 0);
  }
  for (int f = 0; f < kCtrCategoricalFields; ++f) {
    example->categorical_present[f] = random.Uniform() >= kCategoricalMissing[f];
    example->rank[f] = samplers_[f].Sample(random);
    example->id[f] = ScrambleId(era_seed, f, static_cast<uint32_t>(example->rank[f]));
  }
  example->logit = bias_ + LogitWithoutBias(*example);
  example->probability = Sigmoid(example->logit);
  example->label = random.Uniform() < example->probability ? 1.0f : 0.0f;
}

double CtrPlantedModel::LogitWithoutBias(const CtrExample& example) const {
  // A missing categorical field takes the rank one past its vocabulary: its own effect.
  std::array<uint64_t, kCtrCategoricalFields> rank;
  for (int f = 0; f < kCtrCategoricalFields; ++f) {
    rank[f] = static_cast<uint64_t>(example.categorical_present[f] ? example.rank[f] : samplers_[f].n());
  }
  const uint64_t seed = EraSeed(options_.seed, example.era);
  double z = 0.0;
  for (int f = 0; f < kCtrCategoricalFields; ++f) {
    z += kIdEffect[f] * Decay(example, f) * NormalFromKey(Key(seed, kEffectKey, f, rank[f]));
  }
  for (int j = 0; j < kCtrNumericFields; ++j) {
    const double t =
        example.numeric_present[j] ? std::log1p(static_cast<double>(std::max<int64_t>(example.numeric[j], 0))) : 0.0;
    z += kNumericEffect[j] * (t - std::log1p(kNumericMedian[j])) / kNumericLogSd[j];
  }
  const double latent_scale = 1.0 / std::sqrt(static_cast<double>(kInteractionDim));
  for (const auto& pair : kInteractionPairs) {
    double dot = 0.0;
    for (int d = 0; d < kInteractionDim; ++d) {
      dot += NormalFromKey(Key(seed, kLatentKey, pair[0], rank[pair[0]] * kInteractionDim + d)) *
             NormalFromKey(Key(seed, kLatentKey, pair[1], rank[pair[1]] * kInteractionDim + d));
    }
    z += kInteractionScale * latent_scale * Decay(example, pair[0]) * Decay(example, pair[1]) * dot;
  }
  return z;
}

// The bias whose mean click probability over calibration draws is the target rate, by bisection
// (the mean of sigmoid(z + b) increases with b).
double CtrPlantedModel::SolveBias() const {
  std::vector<double> logits(kCalibrationExamples);
  CtrExample example;
  for (int64_t i = 0; i < kCalibrationExamples; ++i) {
    Draw(CtrSplit::kCalibration, i, &example);
    logits[i] = LogitWithoutBias(example);
  }
  double lo = -30.0, hi = 30.0;
  for (int iteration = 0; iteration < 100; ++iteration) {
    const double mid = 0.5 * (lo + hi);
    double sum = 0.0;
    for (double z : logits) sum += Sigmoid(z + mid);
    (sum / static_cast<double>(logits.size()) < kTargetPositiveRate ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

void CtrPlantedModel::AppendLine(const CtrExample& example, std::string* out) {
  out->push_back(example.label > 0.5f ? '1' : '0');
  for (int j = 0; j < kCtrNumericFields; ++j) {
    out->push_back('\t');
    if (example.numeric_present[j]) absl::StrAppend(out, example.numeric[j]);
  }
  for (int f = 0; f < kCtrCategoricalFields; ++f) {
    out->push_back('\t');
    if (example.categorical_present[f]) absl::StrAppend(out, absl::Hex(example.id[f], absl::kZeroPad8));
  }
  out->push_back('\n');
}

nlohmann::json CtrPlantedModel::Describe() const {
  nlohmann::json numeric = nlohmann::json::array(), categorical = nlohmann::json::array(),
                 pairs = nlohmann::json::array();
  for (int j = 0; j < kCtrNumericFields; ++j) {
    numeric.push_back({{"field", absl::StrCat("I", j + 1)},
                       {"missing_rate", kNumericMissing[j]},
                       {"median", kNumericMedian[j]},
                       {"log_sd", kNumericLogSd[j]},
                       {"effect", kNumericEffect[j]}});
  }
  for (int f = 0; f < kCtrCategoricalFields; ++f) {
    categorical.push_back({{"field", absl::StrCat("C", f + 1)},
                           {"vocabulary", samplers_[f].n()},
                           {"missing_rate", kCategoricalMissing[f]},
                           {"effect_scale", kIdEffect[f]}});
  }
  for (const auto& pair : kInteractionPairs) {
    pairs.push_back({absl::StrCat("C", pair[0] + 1), absl::StrCat("C", pair[1] + 1)});
  }
  return {{"zipf", options_.zipf},
          {"vocabulary", options_.vocabulary},
          {"criteo_cardinalities", options_.criteo_cardinalities},
          {"drift_at", options_.drift_at},
          {"bias", bias_},
          {"target_positive_rate", kTargetPositiveRate},
          {"effect_decay_rank", kEffectDecayRank},
          {"numeric", numeric},
          {"categorical", categorical},
          {"interactions", {{"pairs", pairs}, {"dim", kInteractionDim}, {"scale", kInteractionScale}}}};
}

}  // namespace pstrain
