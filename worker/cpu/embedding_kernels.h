// CPU kernels of a CTR model's input layer: gathering each example's embedding rows next to its
// numeric features (the concatenation the dense tower reads), and the backward scatter-add of
// the tower's input gradient into per-unique-id gradient rows.
// Layout: an example's tower input is [numeric (num_numeric) | field 0 (dims[0]) | field 1 | ...].
// Thread-safety: pure functions over caller-owned buffers.
#ifndef PSTRAIN_WORKER_CPU_EMBEDDING_KERNELS_H_
#define PSTRAIN_WORKER_CPU_EMBEDDING_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace pstrain {

struct EmbeddingLayout {
  int64_t num_numeric = 0;
  std::vector<int64_t> dims;     // per field: embedding_dim
  std::vector<int64_t> offsets;  // per field: first column in the tower input
  int64_t width = 0;             // num_numeric + sum(dims)
};

// The layout of `num_numeric` features followed by fields of `dims`.
EmbeddingLayout MakeEmbeddingLayout(int64_t num_numeric, std::vector<int64_t> dims);

// out[b] = [numeric[b] | rows[f][positions[b, f]] for each field], for `batch` examples.
// rows[f]: the field's gathered unique rows [U_f, dims[f]]; positions: [batch, fields]. A field
// whose rows[f] is nullptr (a bag field, CombineBags) is left unwritten.
// REQUIRES: every position < U_f of its field.
void GatherConcat(const EmbeddingLayout& layout, const float* numeric, absl::Span<const float* const> rows,
                  const int32_t* positions, int64_t batch, float* out);

// For field f: grad_rows[positions[b, f]] += din[b, offsets[f] .. + dims[f]] for b = 0..batch-1
// in order (so the sum is the same however the batch was split for computing `din`).
// grad_rows is [U_f, dims[f]] and is accumulated into, not cleared.
void ScatterAddField(const EmbeddingLayout& layout, int field, const float* din, const int32_t* positions,
                     int64_t batch, float* grad_rows);

// A bag field's ids for a run of examples (Batch::bags in CSR form): example b's entries are
// offsets[b] .. offsets[b + 1] (absolute indices into positions and coef), each the position of
// its id among the table's gathered rows and its combiner coefficient (BagCoefficients).
struct BagView {
  const int64_t* offsets = nullptr;
  const int32_t* positions = nullptr;
  const float* coef = nullptr;
};

// The coefficient of each id of `ids_per_bag` bags (offsets: bags + 1) in its bag's combined
// embedding, as tf.nn.embedding_lookup_sparse combines: sum: w_i; mean: w_i / sum(w);
// sqrtn: w_i / sqrt(sum(w^2)); a zero denominator (an empty bag, all weights 0) gives 0.
// `weights`: one per id, or nullptr for all 1. REQUIRES: combiner is sum, mean or sqrtn.
void BagCoefficients(const std::string& combiner, const int64_t* offsets, int64_t bags, const float* weights,
                     std::vector<float>* coef);

// out[b, offsets[field] ..] = sum over example b's entries i of coef[i] * rows[positions[i]], for
// `batch` examples (out as GatherConcat's; an empty bag gives zeros).
void CombineBags(const EmbeddingLayout& layout, int field, const float* rows, const BagView& bag, int64_t batch,
                 float* out);

// The backward of CombineBags: grad_rows[positions[i]] += coef[i] * din[b, offsets[field] ..] for
// the examples b = 0..batch-1 and their entries i in order. Accumulated into, not cleared.
void ScatterAddBags(const EmbeddingLayout& layout, int field, const float* din, const BagView& bag, int64_t batch,
                    float* grad_rows);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_EMBEDDING_KERNELS_H_
