// Shard's row access for embedding tables: id ownership, gathering and applying rows. See shard.h.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ps/store/initializers.h"
#include "ps/store/shard.h"

namespace pstrain {
namespace {

void RunAll(std::vector<std::function<void()>>& fns) {
  for (auto& f : fns) f();
}

}  // namespace

absl::Status Shard::LocalRows(absl::string_view ids, int64_t num_ids, std::vector<int64_t>* rows) const {
  // num_ids is checked against the bytes before any multiplication: a peer's count cannot overflow.
  if (num_ids < 0 || static_cast<uint64_t>(num_ids) != ids.size() / sizeof(int64_t) ||
      ids.size() % sizeof(int64_t) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", name(), ": ", num_ids, " row ids arrived as ", ids.size(), " bytes (8 per id)"));
  }
  const int64_t offset = spec_.row_offset(), stride = RowStride(spec_);
  rows->resize(static_cast<size_t>(num_ids));
  for (int64_t i = 0; i < num_ids; ++i) {
    int64_t id;
    std::memcpy(&id, ids.data() + i * sizeof(int64_t), sizeof(id));
    // Global row id = offset + local * stride, with 0 <= local < rows_ (no division for div shards).
    const int64_t d = id < offset ? -1 : id - offset;  // no overflow for ids far below the offset
    const int64_t local = stride == 1 ? d : d / stride;
    if (d < 0 || (stride != 1 && d % stride != 0) || local >= rows_) {
      const std::string held =
          stride == 1 ? absl::StrCat("rows [", offset, ", ", offset + rows_, ")")
                      : absl::StrCat("the ", rows_, " rows r with r % ", stride, " == ", offset, " (mod strategy)");
      return absl::InvalidArgumentError(absl::StrCat("shard ", name(), " of table ", spec_.variable_name(),
                                                     " does not hold row id ", id, "; it holds ", held));
    }
    (*rows)[static_cast<size_t>(i)] = local;
  }
  return absl::OkStatus();
}

int64_t Shard::GatherRows(absl::Span<const int64_t> rows, char* out) const {
  const size_t row_bytes = static_cast<size_t>(row_elements_) * sizeof(float);
  int64_t version;
  {
    absl::ReaderMutexLock l(&mu_);
    const float* values = values_->data<float>();
    for (size_t i = 0; i < rows.size(); ++i)
      std::memcpy(out + i * row_bytes, values + rows[i] * row_elements_, row_bytes);
    version = version_;
  }
  pulls_.fetch_add(1, std::memory_order_relaxed);
  rows_pulled_.fetch_add(static_cast<int64_t>(rows.size()), std::memory_order_relaxed);
  bytes_out_.fetch_add(static_cast<int64_t>(rows.size() * row_bytes), std::memory_order_relaxed);
  return version;
}

void Shard::ApplyRowsLocked(const RowGradients& update, std::vector<std::function<void()>>* run_after) {
  const auto start = Clock::now();
  PrepareWriteLocked();
  std::vector<absl::Span<float>> slots;
  slots.reserve(slots_.size());
  for (Tensor& t : slots_) slots.push_back(t.flat());
  ApplyRowGradients(*options_.optimizer, update, row_elements_, values_->flat(), slots, version_);
  FinishUpdateLocked(start, run_after);
}

int64_t Shard::ApplyRowsNow(const RowGradients& update, int* forward_to) {
  std::vector<std::function<void()>> run_after;
  int64_t v;
  {
    absl::MutexLock l(&mu_);
    ApplyRowsLocked(update, &run_after);
    v = version_;
    if (forward_to != nullptr) *forward_to = forward_to_;
  }
  RunAll(run_after);
  return v;
}

absl::Status Shard::AddSyncRows(int worker, int64_t step, RowGradients update, AppliedCallback applied) {
  std::vector<std::function<void()>> run_after;
  {
    absl::MutexLock l(&mu_);
    absl::Status s = CheckSyncPushLocked(worker, step);
    if (!s.ok()) return s;
    pending_rows_.emplace(worker, std::move(update));
    AwaitSyncStepLocked(std::move(applied), &run_after);
  }
  RunAll(run_after);
  return absl::OkStatus();
}

}  // namespace pstrain
