#include "ps/store/initializers.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/platform/checked_math.h"
#include "common/tensor/tensor_proto.h"

namespace pstrain {
namespace {

// SplitMix64's finaliser: a bijective mix good enough to turn counters into random bits.
inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t KeyFor(uint64_t seed, const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a over the name, then mixed with the seed
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ULL;
  return Mix(h ^ Mix(seed + 0x9E3779B97F4A7C15ULL));
}

// Uniform in [0, 1) from the counter (element, draw): 53 random bits.
inline double Uniform01(uint64_t key, uint64_t element, uint64_t draw) {
  uint64_t bits = Mix(key ^ Mix(element * 0x9E3779B97F4A7C15ULL + draw * 0xD1B54A32D192ED03ULL + 1));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// Standard normal by Box-Muller from draws (2k, 2k+1).
inline double Normal(uint64_t key, uint64_t element, uint64_t k) {
  double u1 = Uniform01(key, element, 2 * k);
  double u2 = Uniform01(key, element, 2 * k + 1);
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * M_PI * u2);
}

inline double TruncatedNormal(uint64_t key, uint64_t element) {
  for (uint64_t k = 0;; ++k) {
    double z = Normal(key, element, k);
    if (std::fabs(z) <= 2.0) return z;
  }
}

// Sets every element of `out` (the shard's rows) to value(its flat index in the FULL variable):
// local row j is global row row_offset + j * stride.
template <typename ValueFn>
void FillRows(const ShardSpecProto& spec, Tensor* out, ValueFn value) {
  const int64_t full_rows = spec.full_shape_size() == 0 ? 1 : spec.full_shape(0);
  const int64_t row_elems = full_rows == 0 ? 0 : NumElements(spec.full_shape()) / full_rows;
  const int64_t rows = spec.full_shape_size() == 0 ? 1 : spec.rows();
  const int64_t stride = std::max<int64_t>(spec.row_stride(), 1);
  float* v = out->data<float>();
  for (int64_t j = 0; j < rows; ++j) {
    const uint64_t first = static_cast<uint64_t>((spec.row_offset() + j * stride) * row_elems);
    float* row = v + j * row_elems;
    for (int64_t e = 0; e < row_elems; ++e) row[e] = value(first + static_cast<uint64_t>(e));
  }
}

absl::Status Invalid(const ShardSpecProto& spec, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("shard ", spec.shard_name(), ": ", problem));
}

}  // namespace

void ComputeFans(const std::vector<int64_t>& s, double* fan_in, double* fan_out) {
  if (s.empty()) {
    *fan_in = *fan_out = 1;
  } else if (s.size() == 1) {
    *fan_in = *fan_out = static_cast<double>(s[0]);
  } else if (s.size() == 2) {
    *fan_in = static_cast<double>(s[0]);
    *fan_out = static_cast<double>(s[1]);
  } else {
    double receptive = 1;
    for (size_t i = 0; i + 2 < s.size(); ++i) receptive *= static_cast<double>(s[i]);
    *fan_in = static_cast<double>(s[s.size() - 2]) * receptive;
    *fan_out = static_cast<double>(s[s.size() - 1]) * receptive;
  }
}

absl::StatusOr<std::vector<int64_t>> ShardShape(const ShardSpecProto& spec) {
  if (spec.shard_name().empty()) return absl::InvalidArgumentError("a shard spec has an empty shard_name");
  if (spec.variable_name().empty()) return Invalid(spec, "empty variable_name");
  if (spec.dtype() != DT_FLOAT) {
    return Invalid(spec, absl::StrCat("dtype ", DataType_Name(spec.dtype()), " is not supported (only DT_FLOAT)"));
  }
  std::vector<int64_t> full(spec.full_shape().begin(), spec.full_shape().end());
  for (int64_t d : full) {
    if (d < 0) return Invalid(spec, absl::StrCat("negative dimension in full shape ", ShapeString(full)));
  }
  // Every product of the full shape's dimensions below must fit.
  if (absl::Status s = CheckedNumBytes(full, sizeof(float), "full shape").status(); !s.ok()) {
    return Invalid(spec, std::string(s.message()));
  }
  if (full.empty()) {
    if (spec.row_offset() != 0 || spec.rows() != 1)
      return Invalid(spec, "a rank-0 variable needs row_offset 0, rows 1");
    return std::vector<int64_t>{};
  }
  if (spec.row_stride() < 0) return Invalid(spec, absl::StrCat("negative row_stride ", spec.row_stride()));
  const int64_t stride = RowStride(spec);
  // Divided, not multiplied: offsets and counts come from peers and must not overflow.
  if (spec.row_offset() < 0 || spec.rows() < 0 ||
      (spec.rows() > 0 &&
       (spec.row_offset() >= full[0] || (spec.rows() - 1) > (full[0] - 1 - spec.row_offset()) / stride))) {
    return Invalid(spec, stride == 1 ? absl::StrCat(spec.rows(), " rows from row ", spec.row_offset(),
                                                    " fall outside the variable's ", full[0], " rows")
                                     : absl::StrCat(spec.rows(), " rows from ", spec.row_offset(), " in steps of ",
                                                    stride, " fall outside the variable's ", full[0], " rows"));
  }
  full[0] = spec.rows();
  return full;
}

absl::Status InitializeRows(const ShardSpecProto& spec, Tensor* out) {
  auto shape_or = ShardShape(spec);
  if (!shape_or.ok()) return shape_or.status();
  std::vector<int64_t> full(spec.full_shape().begin(), spec.full_shape().end());
  // Filled in place when the caller already allocated it: a large table shard is not held twice.
  if (out->dtype() != DType::kFloat32 || out->shape() != *shape_or) *out = Tensor(DType::kFloat32, *shape_or);
  const uint64_t key = KeyFor(spec.seed(), spec.variable_name());
  const InitializerProto& init = spec.initializer();
  const std::string& type = init.type();
  double fan_in, fan_out;
  ComputeFans(full, &fan_in, &fan_out);
  if (type == "zeros" || type.empty()) {
    FillRows(spec, out, [](uint64_t) { return 0.0f; });
  } else if (type == "ones" || type == "constant") {
    const float c = type == "ones" ? 1.0f : static_cast<float>(init.value());
    FillRows(spec, out, [c](uint64_t) { return c; });
  } else if (type == "random_uniform") {
    FillRows(spec, out, [&](uint64_t e) {
      return static_cast<float>(init.minval() + (init.maxval() - init.minval()) * Uniform01(key, e, 0));
    });
  } else if (type == "random_normal") {
    FillRows(spec, out,
             [&](uint64_t e) { return static_cast<float>(init.mean() + init.stddev() * Normal(key, e, 0)); });
  } else if (type == "truncated_normal") {
    FillRows(spec, out,
             [&](uint64_t e) { return static_cast<float>(init.mean() + init.stddev() * TruncatedNormal(key, e)); });
  } else if (type == "glorot_uniform") {
    const double limit = std::sqrt(6.0 / std::max(1.0, fan_in + fan_out));
    FillRows(spec, out, [&](uint64_t e) { return static_cast<float>(limit * (2.0 * Uniform01(key, e, 0) - 1.0)); });
  } else if (type == "he_normal" || type == "glorot_normal" || type == "lecun_normal") {
    // Keras's VarianceScaling, truncated normal: stddev = sqrt(scale / n) / 0.8796... (the truncated
    // distribution's own standard deviation).
    const double scale_over_n = type == "he_normal"       ? 2.0 / std::max(1.0, fan_in)
                                : type == "glorot_normal" ? 2.0 / std::max(1.0, fan_in + fan_out)
                                                          : 1.0 / std::max(1.0, fan_in);
    const double stddev = std::sqrt(scale_over_n) / 0.87962566103423978;
    FillRows(spec, out, [&](uint64_t e) { return static_cast<float>(stddev * TruncatedNormal(key, e)); });
  } else if (type == "he_uniform" || type == "lecun_uniform") {
    // VarianceScaling, uniform: limit = sqrt(3 * scale / n).
    const double limit = std::sqrt((type == "he_uniform" ? 6.0 : 3.0) / std::max(1.0, fan_in));
    FillRows(spec, out, [&](uint64_t e) { return static_cast<float>(limit * (2.0 * Uniform01(key, e, 0) - 1.0)); });
  } else {
    return Invalid(spec, absl::StrCat("unknown initializer \"", type,
                                      "\" (zeros, ones, constant, random_normal, random_uniform, "
                                      "truncated_normal, glorot_uniform, glorot_normal, he_normal, he_uniform, "
                                      "lecun_normal, lecun_uniform)"));
  }
  return absl::OkStatus();
}

int64_t RowStride(const ShardSpecProto& spec) { return std::max<int64_t>(spec.row_stride(), 1); }

}  // namespace pstrain
