#include "worker/exchange/sparse_lookup.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/plan/dynamic_key_owner.h"
#include "common/platform/status_macros.h"

namespace pstrain {

IdDeduper::IdDeduper(const std::vector<VariableSpec>& variables, std::vector<std::vector<int>> field_tables)
    : num_variables_(static_cast<int>(variables.size())) {
  for (const std::vector<int>& tables : field_tables) {
    const int v = tables.empty() ? -1 : tables[0];
    field_variable_.push_back(v);
    // A dynamic table's ids are keys, any int64: no row range to check.
    field_rows_.push_back(v < 0 || variables[v].shape.empty() ? 0
                          : variables[v].dynamic.has_value()  ? kAnyKey
                                                              : variables[v].shape[0]);
    if (v >= 0 && std::find(tables_.begin(), tables_.end(), v) == tables_.end()) tables_.push_back(v);
    max_fields_per_table_ =
        std::max<int64_t>(max_fields_per_table_, std::count(field_variable_.begin(), field_variable_.end(), v));
    for (size_t k = 1; k < tables.size(); ++k) {
      if (std::find(aliases_.begin(), aliases_.end(), std::make_pair(tables[k], v)) == aliases_.end()) {
        aliases_.emplace_back(tables[k], v);
      }
    }
  }
}

namespace {

std::vector<std::vector<int>> OneFieldPerTable(const std::vector<VariableSpec>& variables) {
  std::vector<std::vector<int>> fields;
  for (size_t v = 0; v < variables.size(); ++v) {
    if (variables[v].sparse) fields.push_back({static_cast<int>(v)});
  }
  return fields;
}

}  // namespace

IdDeduper::IdDeduper(const std::vector<VariableSpec>& variables) : IdDeduper(variables, OneFieldPerTable(variables)) {}

absl::StatusOr<std::unique_ptr<IdDeduper>> IdDeduper::ForModel(const ModelSpec& model,
                                                               const std::vector<VariableSpec>& variables) {
  ASSIGN_OR_RETURN(std::vector<std::vector<int>> field_tables, FieldTableVariables(model, variables));
  return std::make_unique<IdDeduper>(variables, std::move(field_tables));
}

int32_t IdDeduper::Insert(int64_t id, std::vector<int64_t>* unique) {
  // Every bit of the slot depends on every bit of the id: consecutive and strided ids spread, and
  // so do a dynamic table's 64-bit keys that differ only in their high bits.
  uint64_t slot = Mix64(static_cast<uint64_t>(id)) & mask_;
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
  // Bag fields: their ids come from batch->bags, their column of batch->ids is not read.
  bag_of_field_.assign(fields, -1);
  int64_t bag_ids = 0;
  for (size_t k = 0; k < batch->bags.size(); ++k) {
    const IdBags& bag = batch->bags[k];
    if (bag.field < 0 || bag.field >= fields || bag_of_field_[bag.field] >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("the batch's bag ", k, " is of field ", bag.field,
                                                     ", not a field of the model's ", fields, " or given twice"));
    }
    if (static_cast<int64_t>(bag.offsets.size()) != n + 1 || bag.offsets[0] != 0 ||
        bag.offsets[n] != static_cast<int64_t>(bag.ids.size()) ||
        !std::is_sorted(bag.offsets.begin(), bag.offsets.end()) ||
        (!bag.weights.empty() && bag.weights.size() != bag.ids.size())) {
      return absl::InvalidArgumentError(absl::StrCat("the batch's bag of field ", bag.field, " holds ", bag.examples(),
                                                     " examples of ", bag.ids.size(), " ids (", bag.weights.size(),
                                                     " weights); want ", n, " examples in CSR form"));
    }
    bag_of_field_[bag.field] = static_cast<int>(k);
    bag_ids += static_cast<int64_t>(bag.ids.size());
  }
  // At most n distinct ids per field of a table (plus every bag id): a power of two at least twice
  // that keeps probes short.
  uint64_t capacity = 16;
  while (capacity < static_cast<uint64_t>(2 * (n * max_fields_per_table_ + bag_ids))) capacity <<= 1;
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
  batch->bag_positions.resize(batch->bags.size());
  // One generation of the slot table per table, so the fields that share it share its ids.
  for (const int table : tables_) {
    if (++stamp_ == 0) {  // wrapped: old stamps could look live
      std::fill(slot_stamp_.begin(), slot_stamp_.end(), 0);
      stamp_ = 1;
    }
    std::vector<int64_t>* unique = &lookup->unique_ids[table];
    for (int f = 0; f < fields; ++f) {
      if (field_variable_[f] != table) continue;
      if (bag_of_field_[f] >= 0) {
        const int k = bag_of_field_[f];
        const std::vector<int64_t>& ids = batch->bags[k].ids;
        std::vector<int32_t>& positions = batch->bag_positions[k];
        positions.resize(ids.size());
        for (size_t i = 0; i < ids.size(); ++i) {
          if (field_rows_[f] != kAnyKey && (ids[i] < 0 || ids[i] >= field_rows_[f])) {
            const auto& offsets = batch->bags[k].offsets;
            const int64_t b =
                std::upper_bound(offsets.begin(), offsets.end(), static_cast<int64_t>(i)) - offsets.begin() - 1;
            return absl::InvalidArgumentError(absl::StrCat("example ", b, " of the batch has id ", ids[i],
                                                           " in the bag of field ", f, ", outside its table's ",
                                                           field_rows_[f], " rows"));
          }
          positions[i] = Insert(ids[i], unique);
        }
        for (int64_t b = 0; b < n; ++b) batch->positions[b * fields + f] = 0;  // not read
        continue;
      }
      unique->reserve(unique->size() + n);
      for (int64_t b = 0; b < n; ++b) {
        const int64_t id = batch->ids[b * fields + f];
        if (field_rows_[f] != kAnyKey && (id < 0 || id >= field_rows_[f])) {
          return absl::InvalidArgumentError(absl::StrCat("example ", b, " of the batch has id ", id, " in field ", f,
                                                         ", outside its table's ", field_rows_[f], " rows"));
        }
        batch->positions[b * fields + f] = Insert(id, unique);
      }
    }
  }
  for (const auto& [table, source] : aliases_) lookup->unique_ids[table] = lookup->unique_ids[source];
  return absl::OkStatus();
}

}  // namespace pstrain
