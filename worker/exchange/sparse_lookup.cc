#include "worker/exchange/sparse_lookup.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace pstrain {

IdDeduper::IdDeduper(const std::vector<VariableSpec>& variables) : num_variables_(static_cast<int>(variables.size())) {
  for (size_t v = 0; v < variables.size(); ++v) {
    if (!variables[v].sparse) continue;
    field_variable_.push_back(static_cast<int>(v));
    field_rows_.push_back(variables[v].shape.empty() ? 0 : variables[v].shape[0]);
  }
}

int32_t IdDeduper::Insert(int64_t id, std::vector<int64_t>* unique) {
  // Fibonacci hashing spreads consecutive and strided ids over the slots.
  uint64_t slot = (static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ULL) >> 32 & mask_;
  while (slot_stamp_[slot] == stamp_) {
    if (slot_id_[slot] == id) return slot_position_[slot];
    slot = (slot + 1) & mask_;
  }
  slot_stamp_[slot] = stamp_;
  slot_id_[slot] = id;
  slot_position_[slot] = static_cast<int32_t>(unique->size());
  unique->push_back(id);
  return slot_position_[slot];
}

absl::Status IdDeduper::Build(Batch* batch, SparseLookup* lookup) {
  const int64_t n = batch->size();
  const int fields = num_fields();
  if (static_cast<int64_t>(batch->ids.size()) != n * fields) {
    return absl::InvalidArgumentError(absl::StrCat("a batch of ", n, " examples has ", batch->ids.size(),
                                                   " categorical ids; the model has ", fields, " fields per example"));
  }
  // At most n distinct ids per field: a power of two at least twice that keeps probes short.
  uint64_t capacity = 16;
  while (capacity < static_cast<uint64_t>(2 * n)) capacity <<= 1;
  if (slot_id_.size() < capacity) {
    slot_id_.assign(capacity, 0);
    slot_position_.assign(capacity, 0);
    slot_stamp_.assign(capacity, 0);
    stamp_ = 0;
  }
  mask_ = slot_id_.size() - 1;
  lookup->unique_ids.resize(num_variables_);
  for (auto& u : lookup->unique_ids) u.clear();
  batch->positions.resize(n * fields);
  for (int f = 0; f < fields; ++f) {
    if (++stamp_ == 0) {  // wrapped: old stamps could look live
      std::fill(slot_stamp_.begin(), slot_stamp_.end(), 0);
      stamp_ = 1;
    }
    std::vector<int64_t>* unique = &lookup->unique_ids[field_variable_[f]];
    unique->reserve(n);
    for (int64_t b = 0; b < n; ++b) {
      const int64_t id = batch->ids[b * fields + f];
      if (id < 0 || id >= field_rows_[f]) {
        return absl::InvalidArgumentError(absl::StrCat("example ", b, " of the batch has id ", id, " in field ", f,
                                                       ", outside its table's ", field_rows_[f], " rows"));
      }
      batch->positions[b * fields + f] = Insert(id, unique);
    }
  }
  return absl::OkStatus();
}

}  // namespace pstrain
