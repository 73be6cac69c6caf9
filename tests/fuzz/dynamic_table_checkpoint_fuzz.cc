// libFuzzer target: the bytes of a dynamic table checkpoint (ps/store/dynamic_table_state.h) as a
// restoring ps would read them. Beyond "no crash, no sanitizer report": a state that decodes
// encodes back to the same bytes, restores into a table of its shape, and re-shards into 2 shards
// holding every row once.
#include <cstddef>
#include <cstdint>

#include "ps/store/dynamic_table.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pstrain;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<DynamicTableState> st = DecodeDynamicTableState(bytes);
  if (!st.ok()) return 0;
  fuzz::Check(EncodeDynamicTableState(*st) == bytes);
  absl::StatusOr<std::vector<DynamicTableState>> split = ReshardDynamicTableStates({*st}, 2);
  fuzz::Check(split.ok());
  fuzz::Check((*split)[0].keys.size() + (*split)[1].keys.size() == st->keys.size());
  // A table of the state's shape: sgd has no slots, adagrad one, rmsprop with momentum and
  // centering three; other slot counts have no optimizer to restore into.
  OptimizerProto p;
  if (st->num_slots == 0) p.set_type("sgd");
  if (st->num_slots == 1) p.set_type("adagrad");
  if (st->num_slots == 2) p.set_type("lazy_adam");
  if (st->num_slots > 2 || st->dim > 4096 || st->filter_width > (1 << 20)) return 0;
  DynamicTableOptions o;
  o.name = st->table_name;
  o.dim = st->dim;
  o.optimizer = std::shared_ptr<const Optimizer>(*Optimizer::Create(p));
  if (st->filter_width > 0) {
    o.admission_threshold = 2;
    o.filter_width = st->filter_width;
    o.filter_depth = st->filter_depth;
  }
  absl::StatusOr<std::unique_ptr<DynamicTable>> table = DynamicTable::Create(o);
  fuzz::Check(table.ok());
  fuzz::Check((*table)->RestoreState(*st).ok());
  fuzz::Check((*table)->rows() == static_cast<int64_t>(st->keys.size()));
  return 0;
}
