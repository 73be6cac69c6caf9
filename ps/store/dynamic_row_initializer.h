// Initial values of a dynamic table's rows: a row depends only on (seed, table name, key, element),
// never on which shard holds it, when it is made, or whether it was made before and evicted. So a
// lookup of a key the table does not hold, a push creating it, and any ps count agree bit for bit.
//
// Random draws come from a counter-based generator: bits = Mix64(stream ^ Mix64(counter)), with the
// stream = hash(seed, table name) mixed with the key and the counter = (element, draw). The
// distributions are those of ps/store/initializers.h: zeros, ones, constant, random_uniform,
// random_normal, truncated_normal (redrawn beyond 2 stddev), glorot_uniform/normal, he_*, lecun_*.
// A dynamic table has no row count, so the variance-scaling initializers use fan_in = fan_out = dim
// (the shape [dim, dim]); an empty type means zeros.
// Thread-safety: immutable after Create; Fill is safe from any thread.
#ifndef PSTRAIN_PS_STORE_DYNAMIC_ROW_INITIALIZER_H_
#define PSTRAIN_PS_STORE_DYNAMIC_ROW_INITIALIZER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/common.pb.h"

namespace pstrain {

class DynamicRowInitializer {
 public:
  // InvalidArgument naming the table for an unknown initializer type, dim <= 0, or a negative
  // stddev / maxval < minval.
  static absl::StatusOr<DynamicRowInitializer> Create(const InitializerProto& init, uint64_t seed,
                                                      const std::string& table_name, int64_t dim);

  // Writes key's initial row. REQUIRES: row.size() == dim.
  void Fill(int64_t key, absl::Span<float> row) const;

  int64_t dim() const { return dim_; }

 private:
  enum class Kind { kConstant, kUniform, kNormal, kTruncatedNormal };
  DynamicRowInitializer() = default;

  Kind kind_ = Kind::kConstant;
  double a_ = 0, b_ = 0;  // constant: value; uniform: [a, a + b); normal kinds: mean a, stddev b
  uint64_t stream_ = 0;   // hash(seed, table name)
  int64_t dim_ = 0;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_DYNAMIC_ROW_INITIALIZER_H_
