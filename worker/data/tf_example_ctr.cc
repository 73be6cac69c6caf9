#include "worker/data/tf_example_ctr.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/plan/memory_budget.h"
#include "common/platform/checked_math.h"
#include "common/platform/status_macros.h"
#include "proto/example.pb.h"
#include "worker/data/criteo_reader.h"

namespace pstrain {
namespace {

const char* KindName(FeatureView::Kind kind) {
  switch (kind) {
    case FeatureView::kBytes:
      return "a bytes_list";
    case FeatureView::kFloat:
      return "a float_list";
    case FeatureView::kInt64:
      return "an int64_list";
    default:
      return "empty (no list)";
  }
}

absl::Status BadFeature(const std::string& name, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("feature \"", name, "\" ", why));
}

// The view of feature `name` (`role` in messages): present, of a kind allowed, with one value.
absl::Status CheckFixed(const FeatureView& v, const std::string& name, const char* role, bool int64_ok, bool float_ok,
                        bool bytes_ok) {
  const std::string want = absl::StrCat(int64_ok ? "int64_list" : "", int64_ok && (float_ok || bytes_ok) ? " or " : "",
                                        float_ok ? "float_list" : "", bytes_ok ? "bytes_list" : "");
  if (!v.present) {
    return BadFeature(name, absl::StrCat("(", role, ") is missing; every example needs it (", want, " of 1 value)"));
  }
  const bool ok_kind = (v.kind == FeatureView::kInt64 && int64_ok) || (v.kind == FeatureView::kFloat && float_ok) ||
                       (v.kind == FeatureView::kBytes && bytes_ok);
  if (!ok_kind) return BadFeature(name, absl::StrCat("(", role, ") is ", KindName(v.kind), "; want ", want));
  if (v.count != 1) {
    return BadFeature(name, absl::StrCat("(", role, ") has ", v.count,
                                         " values; want exactly 1 (a fixed-length feature of shape [])"));
  }
  return absl::OkStatus();
}

double Number(const FeatureView& v) {
  return v.kind == FeatureView::kInt64 ? static_cast<double>(v.int64_value) : v.float_value;
}

// A raw 64-bit id in a table of `size` rows: raw % size, or (size 0, a dynamic table) raw whole.
int64_t TableId(uint64_t raw, uint64_t size) { return static_cast<int64_t>(size == 0 ? raw : raw % size); }

// A bytes id: FNV-1a 64 of the bytes in the table; an empty string is 0.
int64_t BytesId(absl::string_view bytes, uint64_t size) { return bytes.empty() ? 0 : TableId(Fnv1a64(bytes), size); }

absl::Status CheckOptions(const TfRecordCtrOptions& options) {
  if (options.files_or_globs.empty()) {
    return absl::InvalidArgumentError("no TFRecord files given: name the train and test files (paths or globs)");
  }
  if (options.num_parts < 1 || options.part < 0 || options.part >= options.num_parts) {
    return absl::InvalidArgumentError(absl::StrCat("data part ", options.part, " of ", options.num_parts,
                                                   " is out of range: want 0 <= part < num_parts"));
  }
  if (options.table_sizes.size() != options.features.categorical.size()) {
    return absl::InvalidArgumentError(absl::StrCat(options.features.categorical.size(), " categorical features for ",
                                                   options.table_sizes.size(), " tables; name one per field"));
  }
  for (int64_t size : options.table_sizes) {
    if (size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("a table of ", size, " rows; it needs at least 1 (or 0: a dynamic table)"));
    }
  }
  if (options.max_record_bytes < 0) return absl::InvalidArgumentError("max_record_bytes is negative");
  return absl::OkStatus();
}

}  // namespace

uint64_t Fnv1a64(absl::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

TfExampleCtrParser::TfExampleCtrParser(TfExampleFeatureSpec features, std::vector<int64_t> table_sizes)
    : features_(std::move(features)), table_sizes_(std::move(table_sizes)) {
  int slot = 0;
  for (const std::string& name : {features_.label}) slots_.emplace(name, slot++);
  for (const auto* list : {&features_.numeric, &features_.categorical}) {
    for (const std::string& name : *list) slots_.emplace(name, slot++);
  }
  for (size_t c = 0; c < features_.categorical.size(); ++c) {
    if (features_.is_bag(c) && !features_.bags[c].weights.empty()) slots_.emplace(features_.bags[c].weights, slot++);
  }
  // A name given twice (refused by the job spec; possible here) reads the same feature twice.
  index_.push_back(slots_.at(features_.label));
  for (const auto* list : {&features_.numeric, &features_.categorical}) {
    for (const std::string& name : *list) index_.push_back(slots_.at(name));
  }
  list_slot_.assign(slots_.size(), false);
  for (size_t c = 0; c < features_.categorical.size(); ++c) {
    const bool weighted = features_.is_bag(c) && !features_.bags[c].weights.empty();
    weights_index_.push_back(weighted ? slots_.at(features_.bags[c].weights) : -1);
    if (features_.is_bag(c)) {
      list_slot_[slots_.at(features_.categorical[c])] = true;
      if (weighted) list_slot_[weights_index_.back()] = true;
      bag_ids_.emplace_back();
      bag_weights_.emplace_back();
    }
  }
  bytes_.reserve(2 * slots_.size());  // never reallocated: views point into its strings
}

std::vector<IdBags> MakeBagColumns(const TfExampleFeatureSpec& features) {
  std::vector<IdBags> bags;
  for (size_t c = 0; c < features.categorical.size(); ++c) {
    if (!features.is_bag(c)) continue;
    IdBags& bag = bags.emplace_back();
    bag.field = static_cast<int>(c);
    bag.offsets.assign(1, 0);
  }
  return bags;
}

absl::Status TfExampleCtrParser::ReadBag(size_t c, size_t k) {
  const TfExampleBagSpec& spec = features_.bags[c];
  const std::string& name = features_.categorical[c];
  const FeatureView& v = views_[index_[1 + features_.numeric.size() + c]];
  std::vector<int64_t>& ids = bag_ids_[k];
  std::vector<float>& weights = bag_weights_[k];
  ids.clear();
  weights.clear();
  if (v.present && v.kind != FeatureView::kNone) {
    if (v.kind != FeatureView::kInt64 && v.kind != FeatureView::kBytes) {
      return BadFeature(name, absl::StrCat("(a bag of ids) is ", KindName(v.kind), "; want int64_list or bytes_list"));
    }
    if (v.count > spec.max_length) {
      return BadFeature(name, absl::StrCat("(a bag of ids) has ", v.count, " values, more than its max_length ",
                                           spec.max_length, "; raise max_length in the job spec"));
    }
    const auto size = static_cast<uint64_t>(table_sizes_[c]);
    if (v.kind == FeatureView::kInt64) {
      if (!ListValues(v.list, v.kind, &ids, nullptr, nullptr)) {
        return BadFeature(name, "has a list that does not parse");
      }
      for (int64_t& id : ids) id = TableId(static_cast<uint64_t>(id), size);
    } else {
      bytes_values_.clear();
      if (!ListValues(v.list, v.kind, nullptr, nullptr, &bytes_values_)) {
        return BadFeature(name, "has a list that does not parse");
      }
      for (absl::string_view b : bytes_values_) ids.push_back(BytesId(b, size));
    }
  }
  if (spec.weights.empty()) return absl::OkStatus();
  const FeatureView& w = views_[weights_index_[c]];
  if (w.present && w.kind != FeatureView::kNone) {
    if (w.kind != FeatureView::kFloat) {
      return BadFeature(spec.weights, absl::StrCat("(the weights of bag \"", name, "\") is ", KindName(w.kind),
                                                   "; want float_list"));
    }
    if (!ListValues(w.list, w.kind, nullptr, &weights, nullptr)) {
      return BadFeature(spec.weights, "has a list that does not parse");
    }
  }
  if (weights.size() != ids.size()) {
    return BadFeature(spec.weights, absl::StrCat("(the weights of bag \"", name, "\") has ", weights.size(),
                                                 " values for the bag's ", ids.size(), " ids; want one weight per id"));
  }
  for (float x : weights) {
    if (!std::isfinite(x) || x < 0.f) {
      return BadFeature(spec.weights, absl::StrCat("(the weights of bag \"", name, "\") has weight ", x,
                                                   "; weights must be finite and >= 0"));
    }
  }
  return absl::OkStatus();
}

absl::Status TfExampleCtrParser::ProtobufViews(absl::string_view serialized) {
  tfexample::Example example;
  if (!example.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(absl::StrCat("the record is not a tf.Example (its ", serialized.size(),
                                                   " bytes do not parse as one)"));
  }
  views_.assign(slots_.size(), FeatureView());
  for (const auto& [name, slot] : slots_) {
    auto it = example.features().feature().find(name);
    if (it == example.features().feature().end()) continue;
    const tfexample::Feature& f = it->second;
    FeatureView& v = views_[slot];
    v.present = true;
    if (list_slot_[slot]) {  // the whole list, re-encoded, for ListValues
      if (f.has_bytes_list()) {
        bytes_.push_back(f.bytes_list().SerializeAsString());
      } else if (f.has_float_list()) {
        bytes_.push_back(f.float_list().SerializeAsString());
      } else if (f.has_int64_list()) {
        bytes_.push_back(f.int64_list().SerializeAsString());
      }
      if (f.kind_case() != tfexample::Feature::KIND_NOT_SET) v.list = bytes_.back();
    }
    if (f.has_bytes_list()) {
      v.kind = FeatureView::kBytes;
      v.count = f.bytes_list().value_size();
      // The value must outlive `example`: only a fixed-length id is read, so keep its hash input.
      if (v.count == 1) {
        bytes_.push_back(f.bytes_list().value(0));
        v.bytes_value = bytes_.back();
      }
    } else if (f.has_float_list()) {
      v.kind = FeatureView::kFloat;
      v.count = f.float_list().value_size();
      if (v.count == 1) v.float_value = f.float_list().value(0);
    } else if (f.has_int64_list()) {
      v.kind = FeatureView::kInt64;
      v.count = f.int64_list().value_size();
      if (v.count == 1) v.int64_value = f.int64_list().value(0);
    }
  }
  return absl::OkStatus();
}

absl::Status TfExampleCtrParser::Parse(absl::string_view serialized, float* label, float* numeric, int64_t* ids,
                                       std::vector<IdBags>* bags, bool protobuf_only) {
  bytes_.clear();
  if (protobuf_only || !FastFeatureViews(serialized, slots_, &views_)) RETURN_IF_ERROR(ProtobufViews(serialized));
  const FeatureView& l = views_[index_[0]];
  RETURN_IF_ERROR(CheckFixed(l, features_.label, "the label", true, true, false));
  const double y = Number(l);
  if (y != 0.0 && y != 1.0) return BadFeature(features_.label, absl::StrCat("(the label) is ", y, "; want 0 or 1"));
  *label = static_cast<float>(y);
  const size_t num_numeric = features_.numeric.size();
  for (size_t i = 0; i < num_numeric; ++i) {
    const FeatureView& v = views_[index_[1 + i]];
    RETURN_IF_ERROR(CheckFixed(v, features_.numeric[i], "a numeric input", true, true, false));
    const double x = Number(v);
    if (!std::isfinite(x)) return BadFeature(features_.numeric[i], absl::StrCat("(a numeric input) is ", x));
    numeric[i] = x > 0.0 ? static_cast<float>(std::log1p(x)) : 0.0f;  // as a Criteo numeric field
  }
  size_t k = 0;  // bags read
  for (size_t c = 0; c < features_.categorical.size(); ++c) {
    if (features_.is_bag(c)) {
      RETURN_IF_ERROR(ReadBag(c, k++));
      ids[c] = 0;
      continue;
    }
    const FeatureView& v = views_[index_[1 + num_numeric + c]];
    RETURN_IF_ERROR(CheckFixed(v, features_.categorical[c], "a categorical id", true, false, true));
    const auto size = static_cast<uint64_t>(table_sizes_[c]);
    if (v.kind == FeatureView::kInt64) {
      ids[c] = TableId(static_cast<uint64_t>(v.int64_value), size);
    } else {
      ids[c] = BytesId(v.bytes_value, size);
    }
  }
  // The record is good: only now append its bags, so a skipped record leaves none behind.
  for (size_t b = 0; b < k; ++b) {
    IdBags& bag = (*bags)[b];
    bag.ids.insert(bag.ids.end(), bag_ids_[b].begin(), bag_ids_[b].end());
    bag.weights.insert(bag.weights.end(), bag_weights_[b].begin(), bag_weights_[b].end());
    bag.offsets.push_back(static_cast<int64_t>(bag.ids.size()));
  }
  return absl::OkStatus();
}

absl::Status ParseTfExampleCtr(absl::string_view serialized, const TfExampleFeatureSpec& features,
                               const std::vector<int64_t>& table_sizes, float* label, float* numeric, int64_t* ids) {
  TfExampleCtrParser parser(features, table_sizes);
  std::vector<IdBags> bags = MakeBagColumns(features);  // read and dropped: the ids of bag fields are 0
  return parser.Parse(serialized, label, numeric, ids, &bags);
}

absl::StatusOr<CtrData> ReadTfRecordCtr(Env* env, const TfRecordCtrOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  int64_t budget = options.max_example_bytes;
  if (budget <= 0) budget = MemoryBudgetBytes(env, 0).value_or(kFallbackMemoryBudgetBytes);
  ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandDataFiles(options.files_or_globs));
  const PartFiles mine = AssignPart(files, options.part, options.num_parts);

  CtrData data;
  data.num_numeric = static_cast<int>(options.features.numeric.size());
  data.num_categorical = static_cast<int>(options.features.categorical.size());
  data.bags = MakeBagColumns(options.features);
  int64_t bag_bytes = 0;  // the bags' bytes so far
  const int64_t row_bytes = static_cast<int64_t>(sizeof(float) * (1 + data.num_numeric) +
                                                 sizeof(int64_t) * data.num_categorical);
  std::vector<float> numeric(data.num_numeric);
  std::vector<int64_t> ids(data.num_categorical);
  int64_t record_index = 0;  // over all files, for the parts
  float label = 0;
  TfExampleCtrParser parser(options.features, options.table_sizes);
  for (const std::string& file : mine.files) {
    auto on_record = [&](const TfRecord& record) -> absl::Status {
      const int64_t i = record_index++;
      if (mine.by_line && i % options.num_parts != options.part) return absl::OkStatus();
      absl::Status status =
          record.checksum_ok
              ? parser.Parse(record.data, &label, numeric.data(), ids.data(), &data.bags)
              : absl::DataLossError("the checksum of the record's data does not match (the file is corrupt)");
      if (!status.ok()) {
        status = absl::Status(status.code(), absl::StrCat(TfRecordWhere(file, record.index), status.message()));
        if (!options.skip_bad_records) return status;
        if (data.bad_lines_skipped++ == 0) data.first_bad_line = std::string(status.message());
        return absl::OkStatus();
      }
      if (!data.bags.empty()) {
        bag_bytes = 0;
        for (const IdBags& bag : data.bags) bag_bytes += bag.Bytes();
      }
      if ((data.size + 1) * row_bytes + bag_bytes > budget) {
        return absl::ResourceExhaustedError(
            absl::StrCat(TfRecordWhere(file, record.index), "the examples read so far pass the memory budget of ",
                         FormatBytes(budget), " for a data part; give the job more workers (each reads its own part)"));
      }
      data.labels.push_back(label);
      data.numeric.insert(data.numeric.end(), numeric.begin(), numeric.end());
      data.ids.insert(data.ids.end(), ids.begin(), ids.end());
      ++data.size;
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(ReadTfRecordFile(file, options.max_record_bytes, on_record));
  }
  // The columns grew by doubling; give the slack back before training holds them.
  data.labels.shrink_to_fit();
  data.numeric.shrink_to_fit();
  data.ids.shrink_to_fit();
  for (IdBags& bag : data.bags) {
    bag.offsets.shrink_to_fit();
    bag.ids.shrink_to_fit();
    bag.weights.shrink_to_fit();
  }
  return data;
}

}  // namespace pstrain
