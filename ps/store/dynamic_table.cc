#include "ps/store/dynamic_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/plan/dynamic_row_bytes.h"
#include "ps/store/sparse_apply.h"

namespace pstrain {

// Plans (`pstrain plan`, the chief's memory check) budget this many bytes per row beside values and slots.
static_assert(DynamicTable::kMaxOverheadBytesPerRow == kDynamicRowOverheadBytes,
              "common/plan/dynamic_row_bytes.h must budget the table's per-row overhead");

namespace {

constexpr size_t kBlockRows = 4096;  // rows gathered per optimizer call (bounds the scratch memory)

absl::Status Invalid(const std::string& table, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("dynamic table ", table, ": ", problem));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DynamicTable>> DynamicTable::Create(DynamicTableOptions o) {
  if (o.name.empty()) return absl::InvalidArgumentError("a dynamic table needs a name");
  if (o.dim <= 0 || o.dim > (1 << 20)) return Invalid(o.name, absl::StrCat("dim must be in [1, 2^20], got ", o.dim));
  if (o.optimizer == nullptr) return Invalid(o.name, "no optimizer");
  if (UpdatesEveryRow(*o.optimizer)) {
    return Invalid(o.name, absl::StrCat("optimizer \"", o.optimizer->config().type(),
                                        "\" updates every row on each push, which a table of rows made on demand "
                                        "cannot do; use lazy_adam (Adam on the touched rows only)"));
  }
  if (o.admission_threshold > AdmissionFilter::kMaxCount) {
    return Invalid(o.name, absl::StrCat("admission_threshold ", o.admission_threshold, " is above the filter's ",
                                        AdmissionFilter::kMaxCount));
  }
  if (o.admission_threshold > 1 &&
      (o.filter_width < 1 || o.filter_width > (int64_t{1} << 32) || o.filter_depth < 1 || o.filter_depth > 8)) {
    return Invalid(o.name, absl::StrCat("admission filter of width ", o.filter_width, " and depth ", o.filter_depth,
                                        ": width must be in [1, 2^32] and depth in [1, 8]"));
  }
  if (o.ttl_steps < 0) return Invalid(o.name, absl::StrCat("negative ttl_steps ", o.ttl_steps));
  if (o.max_rows < 0) return Invalid(o.name, absl::StrCat("negative max_rows ", o.max_rows));
  if (o.max_rows > 0) {
    if (o.cap_low_water == 0) o.cap_low_water = o.max_rows - o.max_rows / 16;
    if (o.cap_low_water < 0 || o.cap_low_water > o.max_rows) {
      return Invalid(o.name,
                     absl::StrCat("cap_low_water ", o.cap_low_water, " must be in [0, max_rows ", o.max_rows, "]"));
    }
  }
  absl::StatusOr<DynamicRowInitializer> init = DynamicRowInitializer::Create(o.initializer, o.seed, o.name, o.dim);
  if (!init.ok()) return init.status();
  const int slots = static_cast<int>(o.optimizer->SlotNames().size());
  return std::unique_ptr<DynamicTable>(new DynamicTable(std::move(o), *std::move(init), slots));
}

DynamicTable::DynamicTable(DynamicTableOptions options, DynamicRowInitializer initializer, int num_slots)
    : options_(std::move(options)),
      initializer_(std::move(initializer)),
      num_slots_(num_slots),
      floats_per_row_(options_.dim * (1 + num_slots)),
      arena_(floats_per_row_),
      filter_(options_.admission_threshold > 1 ? options_.filter_width : 1,
              options_.admission_threshold > 1 ? options_.filter_depth : 1) {
  for (int s = 0; s < num_slots_; ++s) slot_initial_.push_back(options_.optimizer->SlotInitialValue(s));
}

std::vector<int64_t>& DynamicTable::RowScratch() {
  thread_local std::vector<int64_t> rows;  // reused: no allocation per call
  return rows;
}

void DynamicTable::FindRows(absl::Span<const int64_t> keys, std::vector<int64_t>* rows) const {
  // Random keys of a big table miss the cache twice (the map's slot, then the row): asking for
  // the slot a few keys ahead and for the row as soon as it is known keeps several misses in flight.
  constexpr size_t kAhead = 8;
  rows->resize(keys.size());
  for (size_t i = 0; i < std::min(keys.size(), kAhead); ++i) index_.prefetch(keys[i]);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i + kAhead < keys.size()) index_.prefetch(keys[i + kAhead]);
    auto it = index_.find(keys[i]);
    if (it == index_.end()) {
      (*rows)[i] = -1;
    } else {
      (*rows)[i] = it->second;
      __builtin_prefetch(arena_.header(it->second), 1);
    }
  }
}

absl::Status DynamicTable::Lookup(absl::Span<const int64_t> keys, absl::Span<float> out) const {
  const size_t dim = static_cast<size_t>(options_.dim);
  if (out.size() != keys.size() * dim) {
    return Invalid(options_.name, absl::StrCat("lookup of ", keys.size(), " keys needs ", keys.size() * dim,
                                               " output floats, got ", out.size()));
  }
  int64_t missing = 0;
  {
    absl::ReaderMutexLock lock(&mu_);
    std::vector<int64_t>& rows = RowScratch();
    FindRows(keys, &rows);
    for (size_t i = 0; i < keys.size(); ++i) {
      float* dst = out.data() + i * dim;
      if (rows[i] < 0) {
        initializer_.Fill(keys[i], absl::MakeSpan(dst, dim));
        ++missing;
      } else {
        std::memcpy(dst, arena_.floats(rows[i]), dim * sizeof(float));
      }
    }
  }
  lookups_.fetch_add(static_cast<int64_t>(keys.size()), std::memory_order_relaxed);
  lookups_missing_.fetch_add(missing, std::memory_order_relaxed);
  return absl::OkStatus();
}

int64_t DynamicTable::NewRow(int64_t key) {
  const int64_t row = arena_.Allocate();
  RowHeader* h = arena_.header(row);
  h->last_update_step = 0;
  h->push_tag = 0;
  h->push_position = 0;
  float* f = arena_.floats(row);
  const size_t dim = static_cast<size_t>(options_.dim);
  initializer_.Fill(key, absl::MakeSpan(f, dim));
  for (int s = 0; s < num_slots_; ++s) std::fill(f + (s + 1) * dim, f + (s + 2) * dim, slot_initial_[s]);
  index_.emplace(key, row);
  ++counters_.created;
  return row;
}

bool DynamicTable::Admit(int64_t key) {
  if (options_.admission_threshold <= 1) return true;
  // A key not admitted at its first occurrence in this push stays out for the rest of the push.
  if (!counted_this_push_.insert(key).second) return false;
  return filter_.Add(static_cast<uint64_t>(key)) >= options_.admission_threshold;
}

uint32_t DynamicTable::NextPushTag() {
  if (++push_tag_ == 0) {  // wrapped after 2^32 pushes: clear every row's tag so none looks current
    for (const auto& [key, row] : index_) arena_.header(row)->push_tag = 0;
    push_tag_ = 1;
  }
  return push_tag_;
}

absl::Status DynamicTable::Push(absl::Span<const int64_t> keys, absl::Span<const float> grads, int64_t step) {
  const size_t dim = static_cast<size_t>(options_.dim);
  if (grads.size() != keys.size() * dim) {
    return Invalid(options_.name, absl::StrCat("push of ", keys.size(), " keys needs ", keys.size() * dim,
                                               " gradient floats, got ", grads.size()));
  }
  if (step < 0) return Invalid(options_.name, absl::StrCat("negative step ", step));
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!std::isfinite(grads[i])) {
      return Invalid(options_.name, absl::StrCat("gradient of key ", keys[i / dim], " (position ", i / dim, ") holds ",
                                                 grads[i], "; nothing applied"));
    }
  }
  absl::MutexLock lock(&mu_);
  const uint32_t tag = NextPushTag();
  counted_this_push_.clear();
  std::vector<int64_t> touched;  // distinct rows in first-seen order
  std::vector<float> summed;     // their summed gradients
  touched.reserve(keys.size());
  summed.reserve(keys.size() * dim);
  std::vector<int64_t>& found = RowScratch();
  FindRows(keys, &found);
  for (size_t i = 0; i < keys.size(); ++i) {
    const float* g = grads.data() + i * dim;
    int64_t row = found[i];
    if (row < 0) {  // missing before this push; an earlier occurrence may have made it
      auto it = index_.find(keys[i]);
      if (it != index_.end()) {
        row = it->second;
      } else if (Admit(keys[i])) {
        row = NewRow(keys[i]);
      } else {
        continue;  // not admitted yet: counted below
      }
    }
    RowHeader* h = arena_.header(row);
    if (h->push_tag == tag) {  // a repeat: summed into the key's first occurrence, in order
      float* acc = summed.data() + static_cast<size_t>(h->push_position) * dim;
      for (size_t e = 0; e < dim; ++e) acc[e] += g[e];
    } else {
      h->push_tag = tag;
      h->push_position = static_cast<uint32_t>(touched.size());
      touched.push_back(row);
      summed.insert(summed.end(), g, g + dim);
    }
  }
  // Keys counted by the filter but not admitted: one dropped update each.
  int64_t dropped = 0;
  for (int64_t key : counted_this_push_) dropped += index_.contains(key) ? 0 : 1;
  counters_.admission_dropped_updates += dropped;
  counters_.pushed_rows += static_cast<int64_t>(touched.size()) + dropped;
  ApplyTouched(touched, summed, step);
  step_ = std::max(step_, step);
  if (options_.max_rows > 0 && static_cast<int64_t>(index_.size()) > options_.max_rows) EvictOverCap();
  return absl::OkStatus();
}

void DynamicTable::ApplyTouched(const std::vector<int64_t>& rows, const std::vector<float>& grads, int64_t step) {
  const size_t dim = static_cast<size_t>(options_.dim), parts = static_cast<size_t>(1 + num_slots_);
  thread_local std::vector<float> scratch;  // reused: no fresh pages per push
  for (size_t first = 0; first < rows.size(); first += kBlockRows) {
    const size_t n = std::min(kBlockRows, rows.size() - first), block = n * dim;
    if (scratch.size() < block * parts) scratch.resize(block * parts);
    // Gather: part p of row i (values, then each slot) goes to block p, position i.
    for (size_t i = 0; i < n; ++i) {
      if (i + 8 < n) {
        const char* next = reinterpret_cast<const char*>(arena_.floats(rows[first + i + 8]));
        for (size_t b = 0; b < parts * dim * sizeof(float); b += 64) __builtin_prefetch(next + b);
      }
      const float* src = arena_.floats(rows[first + i]);
      for (size_t p = 0; p < parts; ++p)
        std::memcpy(scratch.data() + p * block + i * dim, src + p * dim, dim * sizeof(float));
    }
    absl::Span<float> slot_blocks[8];
    for (size_t s = 0; s < static_cast<size_t>(num_slots_); ++s) {
      slot_blocks[s] = absl::MakeSpan(scratch.data() + (s + 1) * block, block);
    }
    options_.optimizer->Apply(absl::MakeConstSpan(grads.data() + first * dim, block),
                              absl::MakeSpan(scratch.data(), block),
                              absl::MakeConstSpan(slot_blocks, static_cast<size_t>(num_slots_)), step);
    for (size_t i = 0; i < n; ++i) {
      float* dst = arena_.floats(rows[first + i]);
      for (size_t p = 0; p < parts; ++p)
        std::memcpy(dst + p * dim, scratch.data() + p * block + i * dim, dim * sizeof(float));
      arena_.header(rows[first + i])->last_update_step = step;
    }
  }
}

void DynamicTable::Remove(int64_t key, int64_t row) {
  index_.erase(key);
  arena_.Free(row);
}

void DynamicTable::EvictOverCap() {
  std::vector<std::pair<int64_t, int64_t>> order;  // (last update step, key)
  order.reserve(index_.size());
  for (const auto& [key, row] : index_) order.emplace_back(int64_t{arena_.header(row)->last_update_step}, key);
  const size_t drop = order.size() - static_cast<size_t>(options_.cap_low_water);
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(drop), order.end());
  for (size_t i = 0; i < drop; ++i) {
    const int64_t key = order[i].second;
    Remove(key, index_.at(key));
  }
  counters_.evicted_cap += static_cast<int64_t>(drop);
}

int64_t DynamicTable::EvictExpired(int64_t current_step) {
  if (options_.ttl_steps <= 0) return 0;
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<int64_t, int64_t>> expired;  // (key, row)
  for (const auto& [key, row] : index_) {
    if (current_step - arena_.header(row)->last_update_step > options_.ttl_steps) expired.emplace_back(key, row);
  }
  for (const auto& [key, row] : expired) Remove(key, row);
  counters_.evicted_ttl += static_cast<int64_t>(expired.size());
  return static_cast<int64_t>(expired.size());
}

bool DynamicTable::ReadRow(int64_t key, absl::Span<float> values_and_slots, int64_t* last_update_step) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  std::memcpy(values_and_slots.data(), arena_.floats(it->second), static_cast<size_t>(floats_per_row_) * sizeof(float));
  if (last_update_step != nullptr) *last_update_step = arena_.header(it->second)->last_update_step;
  return true;
}

DynamicTableCounters DynamicTable::counters() const {
  absl::ReaderMutexLock lock(&mu_);
  DynamicTableCounters c = counters_;
  c.rows = static_cast<int64_t>(index_.size());
  c.lookups += lookups_.load(std::memory_order_relaxed);
  c.lookups_missing += lookups_missing_.load(std::memory_order_relaxed);
  return c;
}

int64_t DynamicTable::rows() const {
  absl::ReaderMutexLock lock(&mu_);
  return static_cast<int64_t>(index_.size());
}

int64_t DynamicTable::MemoryBytes() const {
  absl::ReaderMutexLock lock(&mu_);
  using Slot = std::pair<const int64_t, int64_t>;
  const int64_t map_bytes = static_cast<int64_t>(index_.capacity() * (sizeof(Slot) + 1));
  return arena_.MemoryBytes() + map_bytes + (options_.admission_threshold > 1 ? filter_.MemoryBytes() : 0);
}

DynamicTableState DynamicTable::ExportState() const {
  DynamicTableState st;
  st.table_name = options_.name;
  st.dim = options_.dim;
  st.num_slots = num_slots_;
  absl::ReaderMutexLock lock(&mu_);
  st.counters = counters_;
  st.counters.rows = static_cast<int64_t>(index_.size());
  st.counters.lookups += lookups_.load(std::memory_order_relaxed);
  st.counters.lookups_missing += lookups_missing_.load(std::memory_order_relaxed);
  st.step = step_;
  if (options_.admission_threshold > 1) {
    st.filter_width = filter_.width();
    st.filter_depth = filter_.depth();
    st.filter_counters = filter_.counters();
  }
  std::vector<std::pair<int64_t, int64_t>> by_key(index_.begin(), index_.end());
  std::sort(by_key.begin(), by_key.end());
  const size_t f = static_cast<size_t>(floats_per_row_);
  st.keys.reserve(by_key.size());
  st.last_update_steps.reserve(by_key.size());
  st.rows.resize(by_key.size() * f);
  for (size_t i = 0; i < by_key.size(); ++i) {
    st.keys.push_back(by_key[i].first);
    const int64_t last = arena_.header(by_key[i].second)->last_update_step;  // a copy: the header is packed
    st.last_update_steps.push_back(last);
    std::memcpy(st.rows.data() + i * f, arena_.floats(by_key[i].second), f * sizeof(float));
  }
  return st;
}

absl::Status DynamicTable::RestoreState(const DynamicTableState& st) {
  if (st.table_name != options_.name) {
    return Invalid(options_.name, absl::StrCat("cannot restore the state of table \"", st.table_name, "\""));
  }
  if (st.dim != options_.dim || st.num_slots != num_slots_) {
    return Invalid(options_.name,
                   absl::StrCat("saved rows of dim ", st.dim, " with ", st.num_slots, " slots do not fit dim ",
                                options_.dim, " with ", num_slots_, " slots (same optimizer and dim needed)"));
  }
  const bool filtered = options_.admission_threshold > 1;
  if (filtered && st.filter_width != 0 &&
      (st.filter_width != options_.filter_width || st.filter_depth != options_.filter_depth)) {
    return Invalid(options_.name,
                   absl::StrCat("saved admission filter of ", st.filter_depth, " x ", st.filter_width,
                                " differs from the table's ", options_.filter_depth, " x ", options_.filter_width));
  }
  const size_t f = static_cast<size_t>(floats_per_row_);
  if (st.last_update_steps.size() != st.keys.size() || st.rows.size() != st.keys.size() * f ||
      (st.filter_width != 0 && st.filter_counters.size() != static_cast<size_t>(st.filter_width * st.filter_depth))) {
    return Invalid(options_.name, "inconsistent saved state (keys, steps, rows or filter sizes disagree)");
  }
  absl::MutexLock lock(&mu_);
  index_.clear();
  arena_.Clear();
  index_.reserve(st.keys.size());
  for (size_t i = 0; i < st.keys.size(); ++i) {
    const int64_t row = arena_.Allocate();
    *arena_.header(row) = RowHeader{st.last_update_steps[i], 0, 0};
    std::memcpy(arena_.floats(row), st.rows.data() + i * f, f * sizeof(float));
    if (!index_.emplace(st.keys[i], row).second) {
      arena_.Free(row);  // a repeated key: the first copy stays (the decoder refuses repeats)
    }
  }
  push_tag_ = 0;
  if (filtered) {
    std::vector<uint8_t> counters = st.filter_width != 0
                                        ? st.filter_counters
                                        : std::vector<uint8_t>(static_cast<size_t>(filter_.width() * filter_.depth()));
    (void)filter_.SetCounters(std::move(counters));  // sizes checked above
  }
  step_ = st.step;
  counters_ = st.counters;
  lookups_.store(0);
  lookups_missing_.store(0);
  return absl::OkStatus();
}

}  // namespace pstrain
