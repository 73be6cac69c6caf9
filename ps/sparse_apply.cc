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

void ApplyTouchedRows(const Optimizer& optimizer, const RowGradients& update, int64_t row_elements,
                      absl::Span<float> values, absl::Span<const absl::Span<float>> slots, int64_t step) {
  for (size_t i = 0; i < update.rows.size(); ++i) {
    ApplyRun(optimizer, update.grads.data() + i * row_elements, update.rows[i], 1, row_elements, values, slots, step);
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
