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

using tfexample::Feature;

const char* KindName(const Feature& f) {
  switch (f.kind_case()) {
    case Feature::kBytesList:
      return "a bytes_list";
    case Feature::kFloatList:
      return "a float_list";
    case Feature::kInt64List:
      return "an int64_list";
    default:
      return "empty (no list)";
  }
}

int ValueCount(const Feature& f) {
  switch (f.kind_case()) {
    case Feature::kBytesList:
      return f.bytes_list().value_size();
    case Feature::kFloatList:
      return f.float_list().value_size();
    case Feature::kInt64List:
      return f.int64_list().value_size();
    default:
      return 0;
  }
}

absl::Status BadFeature(const std::string& name, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("feature \"", name, "\" ", why));
}

// The feature `name` of `role`, present with one value of one of the kinds `want` allows.
absl::StatusOr<const Feature*> FixedFeature(const tfexample::Example& example, const std::string& name,
                                            const char* role, bool int64_ok, bool float_ok, bool bytes_ok) {
  const auto& map = example.features().feature();
  auto it = map.find(name);
  const std::string want = absl::StrCat(int64_ok ? "int64_list" : "", int64_ok && (float_ok || bytes_ok) ? " or " : "",
                                        float_ok ? "float_list" : "", bytes_ok ? "bytes_list" : "");
  if (it == map.end()) {
    return BadFeature(name, absl::StrCat("(", role, ") is missing; every example needs it (", want, " of 1 value)"));
  }
  const Feature& f = it->second;
  const bool ok_kind = (f.has_int64_list() && int64_ok) || (f.has_float_list() && float_ok) ||
                       (f.has_bytes_list() && bytes_ok);
  if (!ok_kind) return BadFeature(name, absl::StrCat("(", role, ") is ", KindName(f), "; want ", want));
  if (ValueCount(f) != 1) {
    return BadFeature(name, absl::StrCat("(", role, ") has ", ValueCount(f),
                                         " values; want exactly 1 (a fixed-length feature of shape [])"));
  }
  return &f;
}

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
    if (size < 1) return absl::InvalidArgumentError(absl::StrCat("a table of ", size, " rows; it needs at least 1"));
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

absl::Status ParseTfExampleCtr(absl::string_view serialized, const TfExampleFeatureSpec& features,
                               const std::vector<int64_t>& table_sizes, float* label, float* numeric, int64_t* ids) {
  tfexample::Example example;
  if (!example.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(absl::StrCat("the record is not a tf.Example (its ", serialized.size(),
                                                   " bytes do not parse as one)"));
  }
  ASSIGN_OR_RETURN(const Feature* l, FixedFeature(example, features.label, "the label", true, true, false));
  const double y = l->has_int64_list() ? static_cast<double>(l->int64_list().value(0)) : l->float_list().value(0);
  if (y != 0.0 && y != 1.0) return BadFeature(features.label, absl::StrCat("(the label) is ", y, "; want 0 or 1"));
  *label = static_cast<float>(y);
  for (size_t i = 0; i < features.numeric.size(); ++i) {
    ASSIGN_OR_RETURN(const Feature* f, FixedFeature(example, features.numeric[i], "a numeric input", true, true, false));
    const double x = f->has_int64_list() ? static_cast<double>(f->int64_list().value(0)) : f->float_list().value(0);
    if (!std::isfinite(x)) return BadFeature(features.numeric[i], absl::StrCat("(a numeric input) is ", x));
    numeric[i] = x > 0.0 ? static_cast<float>(std::log1p(x)) : 0.0f;  // as a Criteo numeric field
  }
  for (size_t c = 0; c < features.categorical.size(); ++c) {
    ASSIGN_OR_RETURN(const Feature* f,
                     FixedFeature(example, features.categorical[c], "a categorical id", true, false, true));
    const auto size = static_cast<uint64_t>(table_sizes[c]);
    if (f->has_int64_list()) {
      ids[c] = static_cast<int64_t>(static_cast<uint64_t>(f->int64_list().value(0)) % size);
    } else {
      const std::string& bytes = f->bytes_list().value(0);
      ids[c] = bytes.empty() ? 0 : static_cast<int64_t>(Fnv1a64(bytes) % size);
    }
  }
  return absl::OkStatus();
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
  const int64_t row_bytes = static_cast<int64_t>(sizeof(float) * (1 + data.num_numeric) +
                                                 sizeof(int64_t) * data.num_categorical);
  std::vector<float> numeric(data.num_numeric);
  std::vector<int64_t> ids(data.num_categorical);
  int64_t record_index = 0;  // over all files, for the parts
  float label = 0;
  for (const std::string& file : mine.files) {
    auto on_record = [&](const TfRecord& record) -> absl::Status {
      const int64_t i = record_index++;
      if (mine.by_line && i % options.num_parts != options.part) return absl::OkStatus();
      absl::Status status =
          record.checksum_ok
              ? ParseTfExampleCtr(record.data, options.features, options.table_sizes, &label, numeric.data(), ids.data())
              : absl::DataLossError("the checksum of the record's data does not match (the file is corrupt)");
      if (!status.ok()) {
        status = absl::Status(status.code(), absl::StrCat(TfRecordWhere(file, record.index), status.message()));
        if (!options.skip_bad_records) return status;
        if (data.bad_lines_skipped++ == 0) data.first_bad_line = std::string(status.message());
        return absl::OkStatus();
      }
      if ((data.size + 1) * row_bytes > budget) {
        return absl::ResourceExhaustedError(
            absl::StrCat(TfRecordWhere(file, record.index), "the examples read so far pass the memory budget of ",
                         FormatBytes(budget), " (", kMemoryBudgetFlag, "); read fewer files per worker"));
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
  return data;
}

}  // namespace pstrain
