// Optimizer updates of embedding-table rows with TensorFlow's sparse-apply semantics, in one
// implementation shared by the ps (ps/store/shard.h) and single-process training (worker/keras_updater).
//
// A sparse update is a list of (row, gradient row) pairs. Rows that repeat are summed first, as
// TensorFlow sums the duplicate indices of an IndexedSlices gradient before applying it. Then each
// optimizer's own dense formula (ps/store/optimizer.h) runs on the touched rows, with the step count
// (Keras's `iterations`) and learning rate of the whole table:
//  - sgd, sgd with momentum (Keras SGD's formula, Nesterov included), adagrad, rmsprop, ftrl and
//    lazy_adam touch ONLY the summed rows: every other row and its optimizer slots stay
//    bit-identical. These are TensorFlow's ResourceSparseApply{KerasMomentum, AdagradV2, RMSProp,
//    CenteredRMSProp, FtrlV2} kernels (only the indexed rows of var and of its accumulators are
//    read and written) and TensorFlow Addons' LazyAdam (m and v change only for the indexed rows;
//    the bias correction uses the global iteration count).
//  - adam updates EVERY row, untouched rows with a zero gradient, as tf.keras's Adam applies an
//    IndexedSlices gradient: its moments decay everywhere (m = b1 m, v = b2 v) and every row moves.
//    That is Adam's meaning, and slow for big tables; lazy_adam is the sparse variant.
// Thread-safety: pure functions; a RowAccumulator is used by one thread at a time.
#ifndef PSTRAIN_PS_STORE_SPARSE_APPLY_H_
#define PSTRAIN_PS_STORE_SPARSE_APPLY_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "ps/store/optimizer.h"

namespace pstrain {

// One sparse update with its duplicates summed: distinct rows and their gradient rows.
struct RowGradients {
  std::vector<int64_t> rows;  // local row indices of the table (or shard), distinct
  std::vector<float> grads;   // rows.size() * row_elements floats, row-major
};

// Builds a RowGradients from rows that may repeat, summing repeats in the order they are added.
class RowAccumulator {
 public:
  // `expected_rows`: how many rows will be added (memory is reserved for them up front).
  explicit RowAccumulator(int64_t row_elements, size_t expected_rows = 0);

  // Adds gradient row `grad` (row_elements floats at any alignment) for local row `row`.
  void Add(int64_t row, const char* grad);
  // Adds every row of `update` (same row_elements).
  void Add(const RowGradients& update);
  int64_t size() const { return static_cast<int64_t>(out_.rows.size()); }
  // The summed rows; the accumulator is empty afterwards.
  RowGradients Take();

 private:
  const int64_t row_elements_;
  absl::flat_hash_map<int64_t, int64_t> index_;  // row -> position in out_.rows
  RowGradients out_;
};

// Whether `optimizer` updates every row of a table on a sparse update (adam) rather than only the
// touched rows (all the others).
bool UpdatesEveryRow(const Optimizer& optimizer);

// Applies `update` to a table of values.size() / row_elements rows: `values` and `slots` (in
// optimizer.SlotNames() order, each as large as values); `step` = updates already applied to the
// table (Keras's iterations). REQUIRES: every row of `update` is < the table's rows and distinct;
// update.grads.size() == update.rows.size() * row_elements; row_elements > 0.
void ApplyRowGradients(const Optimizer& optimizer, const RowGradients& update, int64_t row_elements,
                       absl::Span<float> values, absl::Span<const absl::Span<float>> slots, int64_t step);

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_SPARSE_APPLY_H_
