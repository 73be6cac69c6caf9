#include "ps/sparse_apply.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace pstrain {
namespace {

// Enough slot spans for every optimizer (rmsprop with momentum and centering has three).
constexpr size_t kMaxSlots = 4;

// Rows [first, first + count) of every slot.
void SlotRows(absl::Span<const absl::Span<float>> slots, int64_t first, int64_t count, int64_t row_elements,
              absl::Span<float>* out) {
  const size_t offset = static_cast<size_t>(first * row_elements), n = static_cast<size_t>(count * row_elements);
  for (size_t s = 0; s < slots.size(); ++s) out[s] = slots[s].subspan(offset, n);
}

// Runs the optimizer's dense formula on `count` rows starting at `first` with gradient `grad`.
void ApplyRun(const Optimizer& optimizer, const float* grad, int64_t first, int64_t count, int64_t row_elements,
              absl::Span<float> values, absl::Span<const absl::Span<float>> slots, int64_t step) {
  absl::Span<float> slot_rows[kMaxSlots];
  SlotRows(slots, first, count, row_elements, slot_rows);
  const size_t n = static_cast<size_t>(count * row_elements);
  optimizer.Apply(absl::MakeConstSpan(grad, n), values.subspan(static_cast<size_t>(first * row_elements), n),
                  absl::MakeConstSpan(slot_rows, slots.size()), step);
}

// Asks for the cache lines of `row` in the values and every slot (the first and last line of the
// row; longer rows stream in on their own once started): random rows of a big table miss the
// cache, and asking a few rows ahead keeps several misses in flight.
void PrefetchRow(int64_t row, int64_t row_elements, absl::Span<float> values,
                 absl::Span<const absl::Span<float>> slots) {
  const int64_t first = row * row_elements, last = first + row_elements - 1;
  __builtin_prefetch(values.data() + first, 1);
  __builtin_prefetch(values.data() + last, 1);
  for (const absl::Span<float>& s : slots) {
    __builtin_prefetch(s.data() + first, 1);
    __builtin_prefetch(s.data() + last, 1);
  }
}

// Gathers the touched rows of the values and of every slot into one contiguous block each, runs
// the optimizer's dense formula ONCE over the blocks, and scatters them back. The formula is the
// dense one by construction, runs vectorised in one call, and the random row accesses become a
// read (gather, with prefetching keeping several misses in flight) and a write of lines that are
// still in the cache.
// Copies one row: fixed-size pieces the compiler inlines (rows are short; a libc call per row
// would cost more than the copy).
inline void CopyRow(float* dst, const float* src, size_t n) {
  for (; n >= 16; n -= 16, dst += 16, src += 16) std::memcpy(dst, src, 16 * sizeof(float));
  for (; n > 0; --n) *dst++ = *src++;
}

// Rows `first`..`first + n` of `update`, gathered, applied, scattered (see ApplyTouchedRows).
void ApplyRowBlock(const Optimizer& optimizer, const RowGradients& update, size_t first, size_t n, int64_t row_elements,
                   absl::Span<float> values, absl::Span<const absl::Span<float>> slots, int64_t step) {
  const size_t e = static_cast<size_t>(row_elements), block = n * e;
  thread_local std::vector<float> scratch;  // reused: no fresh pages per update
  if (scratch.size() < block * (1 + slots.size())) scratch.resize(block * (1 + slots.size()));
  std::vector<absl::Span<float>> tables = {values}, blocks = {absl::MakeSpan(scratch.data(), block)};
  for (size_t s = 0; s < slots.size(); ++s) {
    tables.push_back(slots[s]);
    blocks.push_back(absl::MakeSpan(scratch.data() + (s + 1) * block, block));
  }
  const int64_t* rows = update.rows.data() + first;
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < std::min(n, kAhead); ++i) PrefetchRow(rows[i], row_elements, values, slots);
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) PrefetchRow(rows[i + kAhead], row_elements, values, slots);
    for (size_t t = 0; t < tables.size(); ++t) CopyRow(blocks[t].data() + i * e, tables[t].data() + rows[i] * e, e);
  }
  optimizer.Apply(absl::MakeConstSpan(update.grads.data() + first * e, block), blocks[0],
                  absl::MakeConstSpan(blocks).subspan(1), step);
  for (size_t i = 0; i < n; ++i) {
    for (size_t t = 0; t < tables.size(); ++t) CopyRow(tables[t].data() + rows[i] * e, blocks[t].data() + i * e, e);
  }
}

// Gathers the touched rows of the values and of every slot into one contiguous block each, runs
// the optimizer's dense formula once over the blocks, and scatters them back. The formula is the
// dense one by construction, runs vectorised in one call, and the random row accesses become a
// read (gather, with prefetching keeping several misses in flight) and a write of lines that are
// still in the cache. Blocks of at most 4096 rows bound the scratch memory each thread keeps.
void ApplyTouchedRows(const Optimizer& optimizer, const RowGradients& update, int64_t row_elements,
                      absl::Span<float> values, absl::Span<const absl::Span<float>> slots, int64_t step) {
  constexpr size_t kBlockRows = 4096;
  for (size_t first = 0; first < update.rows.size(); first += kBlockRows) {
    ApplyRowBlock(optimizer, update, first, std::min(kBlockRows, update.rows.size() - first), row_elements, values,
                  slots, step);
  }
}

// Every row in ascending order: touched rows with their gradient, the runs between them with zeros.
void ApplyEveryRow(const Optimizer& optimizer, const RowGradients& update, int64_t row_elements,
                   absl::Span<float> values, absl::Span<const absl::Span<float>> slots, int64_t step) {
  const int64_t num_rows = static_cast<int64_t>(values.size()) / row_elements;
  std::vector<size_t> order(update.rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return update.rows[a] < update.rows[b]; });
  constexpr int64_t kZeroRows = 1024;
  const std::vector<float> zeros(static_cast<size_t>(std::min(num_rows, kZeroRows) * row_elements), 0.0f);
  int64_t next = 0;  // first row not updated yet
  auto zero_run = [&](int64_t end) {
    for (; next < end; next += std::min(kZeroRows, end - next)) {
      ApplyRun(optimizer, zeros.data(), next, std::min(kZeroRows, end - next), row_elements, values, slots, step);
    }
  };
  for (size_t i : order) {
    zero_run(update.rows[i]);
    ApplyRun(optimizer, update.grads.data() + i * row_elements, next, 1, row_elements, values, slots, step);
    ++next;
  }
  zero_run(num_rows);
}

}  // namespace

RowAccumulator::RowAccumulator(int64_t row_elements, size_t expected_rows) : row_elements_(row_elements) {
  index_.reserve(expected_rows);
  out_.rows.reserve(expected_rows);
  out_.grads.reserve(expected_rows * static_cast<size_t>(row_elements));
}

void RowAccumulator::Add(int64_t row, const char* grad) {
  const size_t bytes = static_cast<size_t>(row_elements_) * sizeof(float);
  auto [it, inserted] = index_.try_emplace(row, static_cast<int64_t>(out_.rows.size()));
  if (inserted) {
    out_.rows.push_back(row);
    const size_t at = out_.grads.size();
    out_.grads.resize(at + static_cast<size_t>(row_elements_));
    std::memcpy(out_.grads.data() + at, grad, bytes);
    return;
  }
  float* sum = out_.grads.data() + it->second * row_elements_;
  for (int64_t e = 0; e < row_elements_; ++e) {
    float g;
    std::memcpy(&g, grad + e * sizeof(float), sizeof(g));
    sum[e] += g;
  }
}

void RowAccumulator::Add(const RowGradients& update) {
  for (size_t i = 0; i < update.rows.size(); ++i) {
    Add(update.rows[i], reinterpret_cast<const char*>(update.grads.data() + i * row_elements_));
  }
}

RowGradients RowAccumulator::Take() {
  index_.clear();
  RowGradients out = std::move(out_);
  out_ = RowGradients();
  return out;
}

bool UpdatesEveryRow(const Optimizer& optimizer) { return optimizer.config().type() == "adam"; }

void ApplyRowGradients(const Optimizer& optimizer, const RowGradients& update, int64_t row_elements,
                       absl::Span<float> values, absl::Span<const absl::Span<float>> slots, int64_t step) {
  if (UpdatesEveryRow(optimizer)) {
    ApplyEveryRow(optimizer, update, row_elements, values, slots, step);
  } else {
    ApplyTouchedRows(optimizer, update, row_elements, values, slots, step);
  }
}

}  // namespace pstrain
