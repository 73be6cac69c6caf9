#include "ps/store/dynamic_table_state.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/checkpoint/checksum.h"
#include "common/plan/dynamic_key_owner.h"

namespace pstrain {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the dynamic table format is written little-endian");

constexpr char kMagic[8] = {'P', 'S', 'D', 'Y', 'N', 'T', 'B', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxNameBytes = 4096;
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int32_t kMaxSlots = 8;

int64_t* CounterField(DynamicTableCounters& c, int i) {
  int64_t* fields[DynamicTableState::kNumCounters] = {
      &c.created, &c.evicted_ttl,     &c.evicted_cap, &c.admission_dropped_updates,
      &c.lookups, &c.lookups_missing, &c.pushed_rows};
  return fields[i];
}

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
void PutArray(std::string* out, const std::vector<T>& v) {
  if (v.empty()) return;
  out->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Reads fields front to back; every read checks the bytes left.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}

  template <typename T>
  absl::Status Get(const char* what, T* v) {
    if (bytes_.size() - pos_ < sizeof(T)) return Truncated(what);
    std::memcpy(v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return absl::OkStatus();
  }

  // `count` elements; the count is checked against the bytes left before anything is allocated.
  template <typename T>
  absl::Status GetArray(const char* what, uint64_t count, std::vector<T>* v) {
    if (count > (bytes_.size() - pos_) / sizeof(T)) return Truncated(what);
    v->resize(static_cast<size_t>(count));
    if (count == 0) return absl::OkStatus();  // memcpy may not take the null data() of an empty vector
    std::memcpy(v->data(), bytes_.data() + pos_, static_cast<size_t>(count) * sizeof(T));
    pos_ += static_cast<size_t>(count) * sizeof(T);
    return absl::OkStatus();
  }

  absl::Status GetString(const char* what, size_t n, std::string* s) {
    if (n > bytes_.size() - pos_) return Truncated(what);
    s->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }

  size_t left() const { return bytes_.size() - pos_; }

 private:
  absl::Status Truncated(const char* what) const {
    return absl::InvalidArgumentError(absl::StrCat("dynamic table checkpoint is truncated: ", what, " at byte ", pos_,
                                                   " runs past the end (", bytes_.size(), " bytes of content)"));
  }

  absl::string_view bytes_;
  size_t pos_ = 0;
};

#define PSTRAIN_DT_TRY(expr)                           \
  do {                                                 \
    if (absl::Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

absl::Status Bad(const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("dynamic table checkpoint: ", problem));
}

}  // namespace

std::string EncodeDynamicTableState(const DynamicTableState& st) {
  std::string out(kMagic, sizeof(kMagic));
  Put<uint32_t>(&out, kVersion);
  Put<uint32_t>(&out, static_cast<uint32_t>(st.table_name.size()));
  out += st.table_name;
  Put<int64_t>(&out, st.dim);
  Put<int32_t>(&out, st.num_slots);
  Put<int64_t>(&out, st.step);
  DynamicTableCounters c = st.counters;
  for (int i = 0; i < DynamicTableState::kNumCounters; ++i) Put<int64_t>(&out, *CounterField(c, i));
  Put<int64_t>(&out, st.filter_width);
  Put<int32_t>(&out, st.filter_depth);
  PutArray(&out, st.filter_counters);
  Put<int64_t>(&out, static_cast<int64_t>(st.keys.size()));
  PutArray(&out, st.keys);
  PutArray(&out, st.last_update_steps);
  PutArray(&out, st.rows);
  Put<uint64_t>(&out, Checksum64(out));
  return out;
}

absl::StatusOr<DynamicTableState> DecodeDynamicTableState(absl::string_view bytes) {
  if (bytes.size() < sizeof(kMagic) + sizeof(uint64_t)) {
    return Bad(absl::StrCat("only ", bytes.size(), " bytes, too short for a header and checksum (truncated file?)"));
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return Bad("does not start with \"PSDYNTB\" (not a dynamic table checkpoint)");
  }
  const absl::string_view content = bytes.substr(0, bytes.size() - sizeof(uint64_t));
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + content.size(), sizeof(stored));
  if (Checksum64(content) != stored) {
    return absl::DataLossError(
        "dynamic table checkpoint: checksum mismatch (the file is truncated or was changed after it was written)");
  }
  Reader r(content.substr(sizeof(kMagic)));
  DynamicTableState st;
  uint32_t version = 0, name_bytes = 0;
  PSTRAIN_DT_TRY(r.Get("version", &version));
  if (version != kVersion) {
    return Bad(absl::StrCat("version ", version, " is not known (this build reads version ", kVersion, ")"));
  }
  PSTRAIN_DT_TRY(r.Get("name length", &name_bytes));
  if (name_bytes == 0 || name_bytes > kMaxNameBytes) {
    return Bad(absl::StrCat("table name of ", name_bytes, " bytes (1 to ", kMaxNameBytes, " expected)"));
  }
  PSTRAIN_DT_TRY(r.GetString("table name", name_bytes, &st.table_name));
  PSTRAIN_DT_TRY(r.Get("dim", &st.dim));
  PSTRAIN_DT_TRY(r.Get("slots", &st.num_slots));
  if (st.dim < 1 || st.dim > kMaxDim) return Bad(absl::StrCat("dim ", st.dim, " outside [1, ", kMaxDim, "]"));
  if (st.num_slots < 0 || st.num_slots > kMaxSlots) {
    return Bad(absl::StrCat("slot count ", st.num_slots, " outside [0, ", kMaxSlots, "]"));
  }
  PSTRAIN_DT_TRY(r.Get("step", &st.step));
  for (int i = 0; i < DynamicTableState::kNumCounters; ++i) {
    PSTRAIN_DT_TRY(r.Get("counters", CounterField(st.counters, i)));
  }
  PSTRAIN_DT_TRY(r.Get("filter width", &st.filter_width));
  PSTRAIN_DT_TRY(r.Get("filter depth", &st.filter_depth));
  if (st.filter_width == 0) {
    if (st.filter_depth != 0) return Bad("a filter depth without a filter width");
  } else {
    if (st.filter_width < 0 || st.filter_depth < 1 || st.filter_depth > 8) {
      return Bad(absl::StrCat("admission filter of width ", st.filter_width, " and depth ", st.filter_depth,
                              " (width > 0, depth 1 to 8 expected)"));
    }
    if (static_cast<uint64_t>(st.filter_width) > r.left() / static_cast<uint64_t>(st.filter_depth)) {
      return Bad(absl::StrCat("admission filter of ", st.filter_depth, " x ", st.filter_width,
                              " counters is larger than the file (truncated?)"));
    }
    PSTRAIN_DT_TRY(
        r.GetArray("filter counters", static_cast<uint64_t>(st.filter_width * st.filter_depth), &st.filter_counters));
  }
  int64_t rows = 0;
  PSTRAIN_DT_TRY(r.Get("row count", &rows));
  const uint64_t row_bytes = 2 * sizeof(int64_t) + static_cast<uint64_t>(st.FloatsPerRow()) * sizeof(float);
  if (rows < 0 || static_cast<uint64_t>(rows) > r.left() / row_bytes) {
    return Bad(absl::StrCat("row count ", rows, " does not fit the ", r.left(), " bytes left (", row_bytes,
                            " bytes per row)"));
  }
  PSTRAIN_DT_TRY(r.GetArray("keys", static_cast<uint64_t>(rows), &st.keys));
  PSTRAIN_DT_TRY(r.GetArray("last update steps", static_cast<uint64_t>(rows), &st.last_update_steps));
  PSTRAIN_DT_TRY(r.GetArray("rows", static_cast<uint64_t>(rows) * static_cast<uint64_t>(st.FloatsPerRow()), &st.rows));
  if (r.left() != 0) return Bad(absl::StrCat(r.left(), " unexpected bytes after the rows"));
  for (size_t i = 1; i < st.keys.size(); ++i) {
    if (st.keys[i] <= st.keys[i - 1]) {
      return Bad(
          absl::StrCat("keys not strictly ascending at row ", i, " (", st.keys[i - 1], " then ", st.keys[i], ")"));
    }
  }
  st.counters.rows = rows;
  return st;
}

absl::StatusOr<std::vector<DynamicTableState>> ReshardDynamicTableStates(const std::vector<DynamicTableState>& in,
                                                                         int num_shards) {
  if (num_shards < 1) return absl::InvalidArgumentError(absl::StrCat("cannot reshard into ", num_shards, " shards"));
  if (in.empty()) return absl::InvalidArgumentError("no dynamic table shards to reshard");
  const DynamicTableState& first = in[0];
  std::vector<DynamicTableState> out(static_cast<size_t>(num_shards));
  DynamicTableCounters totals;
  std::vector<uint8_t> filter = first.filter_counters;
  int64_t step = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const DynamicTableState& s = in[k];
    if (s.table_name != first.table_name || s.dim != first.dim || s.num_slots != first.num_slots ||
        s.filter_width != first.filter_width || s.filter_depth != first.filter_depth) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic table shard ", k, " (table \"", s.table_name, "\", dim ", s.dim, ", ", s.num_slots,
                       " slots, filter ", s.filter_depth, " x ", s.filter_width,
                       ") is not a shard of the same table as shard 0 (\"", first.table_name, "\", dim ", first.dim,
                       ", ", first.num_slots, " slots, filter ", first.filter_depth, " x ", first.filter_width, ")"));
    }
    if (s.keys.size() != s.last_update_steps.size() ||
        s.rows.size() != s.keys.size() * static_cast<size_t>(s.FloatsPerRow()) ||
        s.filter_counters.size() != filter.size()) {
      return absl::InvalidArgumentError(absl::StrCat("dynamic table shard ", k, " has inconsistent sizes"));
    }
    step = std::max(step, s.step);
    DynamicTableCounters c = s.counters;
    for (int i = 0; i < DynamicTableState::kNumCounters; ++i) *CounterField(totals, i) += *CounterField(c, i);
    if (k > 0) {
      for (size_t i = 0; i < filter.size(); ++i) {
        filter[i] = static_cast<uint8_t>(std::min(255, filter[i] + s.filter_counters[i]));
      }
    }
  }
  // Every row, ordered by key, then dealt to its owner (so each output stays sorted).
  std::vector<std::pair<int64_t, std::pair<size_t, size_t>>> rows;  // key -> (input, row)
  for (size_t k = 0; k < in.size(); ++k) {
    for (size_t i = 0; i < in[k].keys.size(); ++i) rows.push_back({in[k].keys[i], {k, i}});
  }
  std::sort(rows.begin(), rows.end());
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].first == rows[i - 1].first) {
      return absl::InvalidArgumentError(absl::StrCat("key ", rows[i].first, " is held by dynamic table shards ",
                                                     rows[i - 1].second.first, " and ", rows[i].second.first));
    }
  }
  const size_t f = static_cast<size_t>(first.FloatsPerRow());
  for (int n = 0; n < num_shards; ++n) {
    DynamicTableState& o = out[static_cast<size_t>(n)];
    o.table_name = first.table_name;
    o.dim = first.dim;
    o.num_slots = first.num_slots;
    o.step = step;
    o.filter_width = first.filter_width;
    o.filter_depth = first.filter_depth;
    o.filter_counters = filter;
    if (n == 0) o.counters = totals;
  }
  for (const auto& [key, where] : rows) {
    DynamicTableState& o = out[static_cast<size_t>(DynamicKeyOwner(static_cast<uint64_t>(key), num_shards))];
    const DynamicTableState& s = in[where.first];
    o.keys.push_back(key);
    o.last_update_steps.push_back(s.last_update_steps[where.second]);
    o.rows.insert(o.rows.end(), s.rows.begin() + static_cast<std::ptrdiff_t>(where.second * f),
                  s.rows.begin() + static_cast<std::ptrdiff_t>((where.second + 1) * f));
  }
  for (DynamicTableState& o : out) o.counters.rows = static_cast<int64_t>(o.keys.size());
  return out;
}

absl::StatusOr<std::vector<std::string>> ReshardDynamicTableCheckpoints(const std::vector<std::string>& shards,
                                                                        int num_shards) {
  std::vector<DynamicTableState> states;
  for (size_t k = 0; k < shards.size(); ++k) {
    absl::StatusOr<DynamicTableState> s = DecodeDynamicTableState(shards[k]);
    if (!s.ok()) {
      return absl::Status(s.status().code(), absl::StrCat("dynamic table shard ", k, ": ", s.status().message()));
    }
    states.push_back(*std::move(s));
  }
  absl::StatusOr<std::vector<DynamicTableState>> out = ReshardDynamicTableStates(states, num_shards);
  if (!out.ok()) return out.status();
  std::vector<std::string> encoded;
  for (const DynamicTableState& s : *out) encoded.push_back(EncodeDynamicTableState(s));
  return encoded;
}

absl::StatusOr<DynamicTableState> InitialDynamicTableState(const std::string& table, int64_t dim,
                                                           const std::vector<float>& slot_initial,
                                                           const std::vector<int64_t>& keys,
                                                           const std::vector<float>& values) {
  if (dim < 1 || values.size() != keys.size() * static_cast<size_t>(dim)) {
    return absl::InvalidArgumentError(absl::StrCat("table ", table, ": ", values.size(), " values for ", keys.size(),
                                                   " keys of dim ", dim));
  }
  std::vector<size_t> order(keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&keys](size_t a, size_t b) { return keys[a] < keys[b]; });
  DynamicTableState st;
  st.table_name = table;
  st.dim = dim;
  st.num_slots = static_cast<int32_t>(slot_initial.size());
  st.counters.created = static_cast<int64_t>(keys.size());
  st.counters.rows = static_cast<int64_t>(keys.size());
  st.last_update_steps.assign(keys.size(), 0);
  const size_t d = static_cast<size_t>(dim);
  st.rows.reserve(keys.size() * d * (1 + slot_initial.size()));
  for (size_t i : order) {
    if (!st.keys.empty() && st.keys.back() == keys[i]) {
      return absl::InvalidArgumentError(absl::StrCat("table ", table, ": key ", keys[i], " is given twice"));
    }
    st.keys.push_back(keys[i]);
    st.rows.insert(st.rows.end(), values.begin() + i * d, values.begin() + (i + 1) * d);
    for (float slot : slot_initial) st.rows.insert(st.rows.end(), d, slot);
  }
  return st;
}

}  // namespace pstrain
