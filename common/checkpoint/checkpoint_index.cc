#include "common/checkpoint/checkpoint_index.h"

#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/checkpoint/checkpoint_reader.h"
#include "common/config/json_util.h"
#include "common/platform/checked_math.h"
#include "common/platform/confined_path.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor_proto.h"

namespace pstrain {
namespace {

using json = nlohmann::json;

constexpr char kIndexFile[] = "index.json";

json SavedShardToJson(const SavedShard& s) {
  return json{{"shard_name", s.shard_name()},
              {"variable_name", s.variable_name()},
              {"full_shape", std::vector<int64_t>(s.full_shape().begin(), s.full_shape().end())},
              {"row_offset", s.row_offset()},
              {"rows", s.rows()},
              {"row_stride", std::max<int64_t>(s.row_stride(), 1)},
              {"dtype", DTypeName(FromProtoDType(s.dtype()))},
              {"file", s.file()},
              {"checksum", absl::StrFormat("%016x", s.checksum())},  // hex: exact in every JSON reader
              {"version", s.version()},
              {"slot_names", std::vector<std::string>(s.slot_names().begin(), s.slot_names().end())}};
}

json SavedDynamicShardToJson(const SavedDynamicShard& s) {
  return json{{"shard_name", s.shard_name()},
              {"table_name", s.table_name()},
              {"shard_index", s.shard_index()},
              {"num_shards", s.num_shards()},
              {"file", s.file()},
              {"rows", s.rows()}};
}

absl::Status Corrupt(const std::string& dir, const std::string& problem) {
  return absl::DataLossError(absl::StrCat("checkpoint index ", dir, "/", kIndexFile, ": ", problem));
}

absl::StatusOr<SavedDynamicShard> SavedDynamicShardFromJson(const json& j, const std::string& dir, size_t i) {
  const std::string where = absl::StrCat("dynamic_shards[", i, "]");
  if (!j.is_object()) return Corrupt(dir, where + " is not an object");
  auto str = [&](const char* key) -> absl::StatusOr<std::string> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return Corrupt(dir, absl::StrCat(where, ".", key, " must be a string"));
    return it->get<std::string>();
  };
  auto num = [&](const char* key, int64_t lo, int64_t hi) -> absl::StatusOr<int64_t> {
    auto it = j.find(key);
    absl::StatusOr<int64_t> v = it == j.end() ? absl::InvalidArgumentError(absl::StrCat(where, ".", key, " is missing"))
                                              : JsonToInt64(*it, absl::StrCat(where, ".", key));
    if (!v.ok()) return Corrupt(dir, std::string(v.status().message()));
    if (*v < lo || *v > hi) {
      return Corrupt(dir, absl::StrCat(where, ".", key, " is ", *v, ", not in [", lo, ", ", hi, "]"));
    }
    return *v;
  };
  constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
  SavedDynamicShard s;
  ASSIGN_OR_RETURN(std::string shard_name, str("shard_name"));
  s.set_shard_name(shard_name);
  ASSIGN_OR_RETURN(std::string table_name, str("table_name"));
  if (table_name.empty()) return Corrupt(dir, where + ".table_name is empty");
  s.set_table_name(table_name);
  ASSIGN_OR_RETURN(std::string file, str("file"));
  if (absl::Status plain = CheckPlainFileName(file, where + ".file"); !plain.ok()) {
    return Corrupt(dir, std::string(plain.message()));
  }
  s.set_file(file);
  ASSIGN_OR_RETURN(int64_t num_shards, num("num_shards", 1, kMaxInt32));
  s.set_num_shards(static_cast<int32_t>(num_shards));
  ASSIGN_OR_RETURN(int64_t shard_index, num("shard_index", 0, num_shards - 1));
  s.set_shard_index(static_cast<int32_t>(shard_index));
  ASSIGN_OR_RETURN(int64_t rows, num("rows", 0, std::numeric_limits<int64_t>::max()));
  s.set_rows(rows);
  return s;
}

// Field access without exceptions: every type is checked before get<>().
absl::StatusOr<SavedShard> SavedShardFromJson(const json& j, const std::string& dir, size_t i) {
  const std::string where = absl::StrCat("shards[", i, "]");
  if (!j.is_object()) return Corrupt(dir, where + " is not an object");
  auto str = [&](const char* key, std::string* out) -> absl::Status {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return Corrupt(dir, absl::StrCat(where, ".", key, " must be a string"));
    *out = it->get<std::string>();
    return absl::OkStatus();
  };
  auto num = [&](const char* key, int64_t* out) -> absl::Status {
    auto it = j.find(key);
    absl::StatusOr<int64_t> v = it == j.end() ? absl::InvalidArgumentError(absl::StrCat(where, ".", key, " is missing"))
                                              : JsonToInt64(*it, absl::StrCat(where, ".", key));
    if (!v.ok()) return Corrupt(dir, std::string(v.status().message()));
    *out = *v;
    return absl::OkStatus();
  };
  SavedShard s;
  std::string text;
  int64_t n = 0;
  RETURN_IF_ERROR(str("shard_name", &text));
  s.set_shard_name(text);
  RETURN_IF_ERROR(str("variable_name", &text));
  s.set_variable_name(text);
  RETURN_IF_ERROR(str("file", &text));
  if (absl::Status plain = CheckPlainFileName(text, where + ".file"); !plain.ok()) {
    return Corrupt(dir, std::string(plain.message()));
  }
  s.set_file(text);
  RETURN_IF_ERROR(str("dtype", &text));
  absl::StatusOr<DType> dtype = ParseDType(text);
  if (!dtype.ok()) return Corrupt(dir, absl::StrCat(where, ".dtype: ", dtype.status().message()));
  // pstrain writes float32 shards only; readers size and interpret the bytes as such.
  if (*dtype != DType::kFloat32) return Corrupt(dir, absl::StrCat(where, ".dtype ", QuotedExcerpt(text), " is not float32"));
  s.set_dtype(ToProtoDType(*dtype));
  RETURN_IF_ERROR(str("checksum", &text));
  uint64_t sum = 0;
  if (!absl::SimpleHexAtoi(text, &sum)) return Corrupt(dir, where + ".checksum is not hexadecimal");
  s.set_checksum(sum);
  RETURN_IF_ERROR(num("row_offset", &n));
  s.set_row_offset(n);
  RETURN_IF_ERROR(num("rows", &n));
  s.set_rows(n);
  RETURN_IF_ERROR(num("version", &n));
  s.set_version(n);
  auto shape = j.find("full_shape");
  if (shape == j.end() || !shape->is_array()) return Corrupt(dir, where + ".full_shape must be an array");
  for (const json& d : *shape) {
    absl::StatusOr<int64_t> dim = JsonToInt64(d, where + ".full_shape");
    // pstrain's variables have no empty dimension; refusing them keeps rows and row bytes positive,
    // so a bitmap of rows is never larger than the files that hold them.
    if (!dim.ok() || *dim < 1) return Corrupt(dir, absl::StrCat(where, ".full_shape has a bad dimension ", JsonExcerpt(d)));
    s.add_full_shape(*dim);
  }
  auto slots = j.find("slot_names");
  if (slots != j.end() && slots->is_array()) {
    for (const json& name : *slots) {
      if (!name.is_string()) return Corrupt(dir, where + ".slot_names must hold strings");
      s.add_slot_names(name.get<std::string>());
    }
  }
  // Absent in checkpoints written before strided (mod) shards: contiguous rows.
  if (j.contains("row_stride")) RETURN_IF_ERROR(num("row_stride", &n));
  s.set_row_stride(j.contains("row_stride") ? n : 1);
  const int64_t total = s.full_shape_size() == 0 ? 1 : s.full_shape(0);
  if (s.row_offset() < 0 || s.rows() < 0 || s.row_stride() < 1 ||
      (s.rows() > 0 && (s.row_offset() >= total || (s.rows() - 1) > (total - 1 - s.row_offset()) / s.row_stride()))) {
    return Corrupt(dir, where + " has rows outside the variable");
  }
  // Every size derived from the entry must fit before a reader sizes anything by it.
  if (absl::StatusOr<int64_t> bytes = SavedShardFileBytes(s); !bytes.ok()) {
    return Corrupt(dir, absl::StrCat(where, ": ", bytes.status().message()));
  }
  const std::vector<int64_t> full(s.full_shape().begin(), s.full_shape().end());
  if (absl::Status fits = CheckedNumBytes(full, sizeof(float), where + ".full_shape").status(); !fits.ok()) {
    return Corrupt(dir, std::string(fits.message()));
  }
  return s;
}

}  // namespace

absl::Status WriteCheckpointIndex(Env* env, const std::string& dir, const CheckpointIndex& index) {
  json shards = json::array();
  for (const SavedShard& s : index.shards) shards.push_back(SavedShardToJson(s));
  json doc = {{"format", "pstrain-checkpoint-1"}, {"global_step", index.global_step}, {"shards", shards}};
  if (!index.dynamic_shards.empty()) {
    json dynamic = json::array();
    for (const SavedDynamicShard& s : index.dynamic_shards) dynamic.push_back(SavedDynamicShardToJson(s));
    doc["dynamic_shards"] = std::move(dynamic);
  }
  if (!index.job_spec_json.empty()) {
    absl::StatusOr<json> spec = ParseJson(index.job_spec_json, "job spec");
    doc["job_spec"] = spec.ok() ? *spec : json(index.job_spec_json);
  }
  return env->WriteFileAtomic(dir + "/" + kIndexFile, DumpJson(doc, 1));
}

absl::StatusOr<int64_t> SavedShardFileBytes(const SavedShard& s) {
  std::vector<int64_t> row_shape(s.full_shape().begin(), s.full_shape().end());
  if (!row_shape.empty()) row_shape[0] = s.rows();
  const std::string what = absl::StrCat("shard ", s.shard_name());
  const DType dtype = FromProtoDType(s.dtype());
  if (dtype == DType::kInvalid || dtype == DType::kString) return absl::InvalidArgumentError(what + ": unsupported dtype");
  ASSIGN_OR_RETURN(int64_t bytes, CheckedNumBytes(row_shape, DTypeSize(dtype), what));
  return CheckedSizeProduct(bytes, 1 + s.slot_names_size(), what);
}

absl::StatusOr<CheckpointIndex> ReadCheckpointIndex(Env* env, const std::string& dir) {
  const std::string path = dir + "/" + kIndexFile;
  if (!env->FileExists(path)) return absl::NotFoundError(absl::StrCat("checkpoint index ", path, " does not exist"));
  absl::StatusOr<std::string> text = env->ReadRegularFile(path, kMaxJsonFileBytes);
  if (!text.ok()) {
    if (text.status().code() == absl::StatusCode::kInvalidArgument ||
        text.status().code() == absl::StatusCode::kOutOfRange) {
      return absl::DataLossError(text.status().message());
    }
    return text.status();
  }
  absl::StatusOr<json> doc = ParseJson(*text, path);
  if (!doc.ok()) return absl::DataLossError(doc.status().message());
  if (!doc->is_object()) return Corrupt(dir, "not a JSON object");
  CheckpointIndex index;
  auto step = doc->find("global_step");
  absl::StatusOr<int64_t> step_value =
      step == doc->end() ? absl::InvalidArgumentError("global_step is missing") : JsonToInt64(*step, "global_step");
  if (!step_value.ok() || *step_value < 0) return Corrupt(dir, "global_step must be a non-negative integer");
  index.global_step = *step_value;
  auto spec = doc->find("job_spec");
  if (spec != doc->end()) index.job_spec_json = spec->is_string() ? spec->get<std::string>() : DumpJson(*spec);
  auto shards = doc->find("shards");
  if (shards == doc->end() || !shards->is_array()) return Corrupt(dir, "shards must be an array");
  for (size_t i = 0; i < shards->size(); ++i) {
    ASSIGN_OR_RETURN(SavedShard s, SavedShardFromJson((*shards)[i], dir, i));
    index.shards.push_back(std::move(s));
  }
  // Absent in checkpoints without dynamic tables (and in those written before them).
  auto dynamic = doc->find("dynamic_shards");
  if (dynamic != doc->end()) {
    if (!dynamic->is_array()) return Corrupt(dir, "dynamic_shards must be an array");
    for (size_t i = 0; i < dynamic->size(); ++i) {
      ASSIGN_OR_RETURN(SavedDynamicShard s, SavedDynamicShardFromJson((*dynamic)[i], dir, i));
      index.dynamic_shards.push_back(std::move(s));
    }
  }
  return index;
}

absl::StatusOr<Tensor> ReadCheckpointRows(Env* env, const std::string& dir, const CheckpointIndex& index,
                                          const std::string& variable_name, int64_t row_offset, int64_t rows,
                                          const std::string& slot, int64_t max_bytes) {
  CheckpointReader reader(env, dir, &index, max_bytes);
  return reader.ReadRows(variable_name, row_offset, rows, slot);
}

}  // namespace pstrain
