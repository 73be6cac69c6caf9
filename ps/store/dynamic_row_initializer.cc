#include "ps/store/dynamic_row_initializer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/plan/dynamic_key_owner.h"

namespace pstrain {
namespace {

uint64_t StreamFor(uint64_t seed, const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a over the name, then mixed with the seed
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ULL;
  return Mix64(h ^ Mix64(seed + 0x9E3779B97F4A7C15ULL));
}

// Uniform in [0, 1) with 53 random bits, from the counter (element, draw) of one row's stream.
inline double Uniform01(uint64_t row_stream, uint64_t element, uint64_t draw) {
  const uint64_t bits = Mix64(row_stream ^ Mix64(element * 0x9E3779B97F4A7C15ULL + draw * 0xD1B54A32D192ED03ULL + 1));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// Standard normal by Box-Muller from draws (2k, 2k+1).
inline double Normal(uint64_t row_stream, uint64_t element, uint64_t k) {
  const double u1 = Uniform01(row_stream, element, 2 * k), u2 = Uniform01(row_stream, element, 2 * k + 1);
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * M_PI * u2);
}

// Redraws beyond 2 stddev; bounded (a miss has probability 0.046, so 64 misses never happen in
// practice), falling back to 0 rather than looping forever.
inline double TruncatedNormal(uint64_t row_stream, uint64_t element) {
  for (uint64_t k = 0; k < 64; ++k) {
    const double z = Normal(row_stream, element, k);
    if (std::fabs(z) <= 2.0) return z;
  }
  return 0.0;
}

}  // namespace

absl::StatusOr<DynamicRowInitializer> DynamicRowInitializer::Create(const InitializerProto& init, uint64_t seed,
                                                                    const std::string& table_name, int64_t dim) {
  auto invalid = [&](const std::string& problem) {
    return absl::InvalidArgumentError(absl::StrCat("dynamic table ", table_name, ": ", problem));
  };
  if (dim <= 0) return invalid(absl::StrCat("dim must be positive, got ", dim));
  DynamicRowInitializer out;
  out.dim_ = dim;
  out.stream_ = StreamFor(seed, table_name);
  const std::string& type = init.type();
  const double fan = static_cast<double>(dim);              // fan_in = fan_out = dim (no row count)
  constexpr double kTruncatedStddev = 0.87962566103423978;  // stddev of a unit normal cut at 2
  if (type.empty() || type == "zeros" || type == "ones" || type == "constant") {
    out.kind_ = Kind::kConstant;
    out.a_ = type == "ones" ? 1.0 : type == "constant" ? init.value() : 0.0;
  } else if (type == "random_uniform") {
    if (init.maxval() < init.minval()) return invalid("random_uniform needs maxval >= minval");
    out.kind_ = Kind::kUniform;
    out.a_ = init.minval();
    out.b_ = init.maxval() - init.minval();
  } else if (type == "random_normal" || type == "truncated_normal") {
    if (init.stddev() < 0) return invalid(absl::StrCat(type, " needs stddev >= 0"));
    out.kind_ = type == "random_normal" ? Kind::kNormal : Kind::kTruncatedNormal;
    out.a_ = init.mean();
    out.b_ = init.stddev();
  } else if (type == "glorot_uniform" || type == "he_uniform" || type == "lecun_uniform") {
    const double limit = type == "glorot_uniform" ? std::sqrt(6.0 / (2 * fan))
                         : type == "he_uniform"   ? std::sqrt(6.0 / fan)
                                                  : std::sqrt(3.0 / fan);
    out.kind_ = Kind::kUniform;
    out.a_ = -limit;
    out.b_ = 2 * limit;
  } else if (type == "glorot_normal" || type == "he_normal" || type == "lecun_normal") {
    const double scale_over_n = type == "glorot_normal" ? 2.0 / (2 * fan) : type == "he_normal" ? 2.0 / fan : 1.0 / fan;
    out.kind_ = Kind::kTruncatedNormal;
    out.a_ = 0;
    out.b_ = std::sqrt(scale_over_n) / kTruncatedStddev;
  } else {
    return invalid(absl::StrCat("unknown initializer \"", type,
                                "\" (zeros, ones, constant, random_normal, random_uniform, truncated_normal, "
                                "glorot_uniform, glorot_normal, he_normal, he_uniform, lecun_normal, lecun_uniform)"));
  }
  return out;
}

void DynamicRowInitializer::Fill(int64_t key, absl::Span<float> row) const {
  const uint64_t row_stream = Mix64(stream_ ^ Mix64(static_cast<uint64_t>(key) + 0x632BE59BD9B4E019ULL));
  const size_t n = row.size();
  switch (kind_) {
    case Kind::kConstant:
      std::fill(row.begin(), row.end(), static_cast<float>(a_));
      break;
    case Kind::kUniform:
      for (size_t e = 0; e < n; ++e) row[e] = static_cast<float>(a_ + b_ * Uniform01(row_stream, e, 0));
      break;
    case Kind::kNormal:
      for (size_t e = 0; e < n; ++e) row[e] = static_cast<float>(a_ + b_ * Normal(row_stream, e, 0));
      break;
    case Kind::kTruncatedNormal:
      for (size_t e = 0; e < n; ++e) row[e] = static_cast<float>(a_ + b_ * TruncatedNormal(row_stream, e));
      break;
  }
}

}  // namespace pstrain
