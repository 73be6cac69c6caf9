#include "ps/checkpoint_reader.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/checked_math.h"
#include "common/confined_path.h"
#include "common/memory_budget.h"
#include "common/tensor_proto.h"
#include "ps/checksum.h"

namespace pstrain {
namespace {

// REQUIRES: an entry validated by ReadCheckpointIndex (its sizes fit).
int64_t RowElements(const SavedShard& s) {
  int64_t n = 1;
  for (int i = 1; i < s.full_shape_size(); ++i) n *= s.full_shape(i);
  return n;
}

int64_t TotalRows(const SavedShard& s) { return s.full_shape_size() == 0 ? 1 : s.full_shape(0); }

}  // namespace

std::string ShardFileName(const std::string& shard_name) {
  std::string out;
  for (unsigned char c : shard_name) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      out += absl::StrFormat("%%%02X", c);
    }
  }
  return out + ".shard";
}

absl::StatusOr<SavedShard> WriteShardFile(Env* env, const std::string& dir, const ShardSpecProto& spec,
                                          const Tensor& values, const std::vector<std::string>& slot_names,
                                          const std::vector<Tensor>& slots, int64_t version) {
  std::string data;
  data.reserve(values.num_bytes() * (1 + slots.size()));
  data.append(reinterpret_cast<const char*>(values.raw()), values.num_bytes());
  for (const Tensor& t : slots) data.append(reinterpret_cast<const char*>(t.raw()), t.num_bytes());
  SavedShard saved;
  saved.set_shard_name(spec.shard_name());
  saved.set_variable_name(spec.variable_name());
  *saved.mutable_full_shape() = spec.full_shape();
  saved.set_row_offset(spec.row_offset());
  saved.set_rows(spec.rows());
  saved.set_dtype(spec.dtype());
  saved.set_file(ShardFileName(spec.shard_name()));
  saved.set_checksum(Checksum64(data));
  saved.set_version(version);
  for (const std::string& n : slot_names) saved.add_slot_names(n);
  absl::Status s = env->WriteFileAtomic(dir + "/" + saved.file(), data);
  if (!s.ok()) return s;
  return saved;
}

CheckpointReader::CheckpointReader(Env* env, std::string dir, const CheckpointIndex* index, int64_t max_bytes)
    : env_(env),
      dir_(std::move(dir)),
      index_(index),
      max_bytes_(max_bytes > 0 ? max_bytes : MemoryBudgetBytes(env, 0).value_or(kFallbackMemoryBudgetBytes)) {}

absl::StatusOr<const std::string*> CheckpointReader::VerifiedFile(const SavedShard& shard) {
  auto it = files_.find(shard.file());
  if (it != files_.end()) return &it->second;
  absl::StatusOr<std::string> path_or = PathInDir(dir_, shard.file(), "checkpoint file");
  if (!path_or.ok()) return absl::DataLossError(path_or.status().message());
  const std::string& path = *path_or;
  absl::StatusOr<int64_t> expected_or = SavedShardFileBytes(shard);
  if (!expected_or.ok()) return absl::DataLossError(absl::StrCat(path, ": ", expected_or.status().message()));
  const size_t expected = static_cast<size_t>(*expected_or);
  // Never more than the index promises nor than the budget allows: a short file is read and
  // reported below, a longer one is not read at all.
  absl::StatusOr<std::string> data = env_->ReadRegularFile(path, std::min(*expected_or, max_bytes_));
  if (!data.ok() && data.status().code() == absl::StatusCode::kOutOfRange && *expected_or > max_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat("checkpoint file ", path, " would hold ", FormatBytes(*expected_or),
                                                     ", more than the memory budget of ", FormatBytes(max_bytes_),
                                                     " (raise ", kMemoryBudgetFlag, ")"));
  }
  if (!data.ok()) {
    const bool missing = data.status().code() == absl::StatusCode::kNotFound;
    return absl::DataLossError(absl::StrCat("checkpoint file ", path, missing ? " is missing: " : " is unusable: ",
                                            data.status().message()));
  }
  if (data->size() != expected) {
    return absl::DataLossError(absl::StrCat("checkpoint file ", path, " holds ", data->size(), " bytes, expected ",
                                            expected, " (truncated or corrupted)"));
  }
  const uint64_t sum = Checksum64(*data);
  if (sum != shard.checksum()) {
    return absl::DataLossError(
        absl::StrFormat("checkpoint file %s fails its checksum (index %016x, file %016x): "
                        "the checkpoint is corrupted",
                        path, shard.checksum(), sum));
  }
  return &files_.emplace(shard.file(), std::move(*data)).first->second;
}

absl::StatusOr<Tensor> CheckpointReader::ReadRows(const std::string& variable, int64_t row_offset, int64_t rows,
                                                  const std::string& slot) {
  std::vector<const SavedShard*> slices;
  for (const SavedShard& s : index_->shards) {
    if (s.variable_name() == variable) slices.push_back(&s);
  }
  if (slices.empty()) {
    return absl::NotFoundError(absl::StrCat("variable ", variable, " is not in the checkpoint ", dir_));
  }
  const SavedShard& first = *slices[0];
  const int64_t total = TotalRows(first);
  if (rows < 0) {
    row_offset = 0;
    rows = total;
  }
  if (row_offset < 0 || rows > total || row_offset > total - rows) {
    return absl::InvalidArgumentError(absl::StrCat(rows, " rows from row ", row_offset, " of variable ", variable,
                                                   " fall outside its ", total, " saved rows"));
  }
  std::vector<int64_t> shape(first.full_shape().begin(), first.full_shape().end());
  if (!shape.empty()) shape[0] = rows;
  const DType dtype = FromProtoDType(first.dtype());
  // The index was validated (SavedShardFileBytes), so one row's bytes fit; the result may not.
  const size_t row_bytes = static_cast<size_t>(RowElements(first) * DTypeSize(dtype));
  std::sort(slices.begin(), slices.end(),
            [](const SavedShard* a, const SavedShard* b) { return a->row_offset() < b->row_offset(); });
  // Every file the rows come from is read and verified before the result is allocated, so an
  // index that promises more than its files hold fails here, having allocated nothing large.
  {
    int64_t next = row_offset;
    for (const SavedShard* s : slices) {
      const int64_t lo = std::max(next, s->row_offset());
      const int64_t hi = std::min(row_offset + rows, s->row_offset() + s->rows());
      if (hi <= lo) continue;
      if (lo > next) break;
      absl::StatusOr<const std::string*> file = VerifiedFile(*s);
      if (!file.ok()) return file.status();
      next = hi;
    }
    if (next < row_offset + rows) {
      return absl::DataLossError(absl::StrCat("no saved slice of variable ", variable, " in ", dir_, " holds rows [",
                                              next, ", ", row_offset + rows, ")"));
    }
  }
  const std::string what = absl::StrCat("variable ", variable, " in ", dir_);
  absl::StatusOr<int64_t> out_bytes = CheckedNumBytes(shape, DTypeSize(dtype), what);
  if (!out_bytes.ok()) return absl::DataLossError(out_bytes.status().message());
  if (*out_bytes > max_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(what, " of shape ", ShapeString(shape), " would take ",
                                                     FormatBytes(*out_bytes), ", more than the memory budget of ",
                                                     FormatBytes(max_bytes_), " (raise ", kMemoryBudgetFlag, ")"));
  }
  absl::StatusOr<Tensor> out_or = Tensor::Create(dtype, shape, what);
  if (!out_or.ok()) return out_or.status();
  Tensor& out = *out_or;
  int64_t next = row_offset;  // first row not yet copied
  for (const SavedShard* s : slices) {
    if (std::vector<int64_t>(s->full_shape().begin(), s->full_shape().end()) !=
            std::vector<int64_t>(first.full_shape().begin(), first.full_shape().end()) ||
        s->dtype() != first.dtype()) {
      return absl::DataLossError(
          absl::StrCat("checkpoint slices of variable ", variable, " disagree on shape or dtype"));
    }
    const int64_t lo = std::max(next, s->row_offset());
    const int64_t hi = std::min(row_offset + rows, s->row_offset() + s->rows());
    if (hi <= lo) continue;
    if (lo > next) break;  // a gap: reported below
    int slot_index = 0;
    if (!slot.empty()) {
      auto it = std::find(s->slot_names().begin(), s->slot_names().end(), slot);
      if (it == s->slot_names().end()) {
        return absl::NotFoundError(absl::StrCat("slot \"", slot, "\" of variable ", variable,
                                                " is not in the checkpoint's slice ", s->shard_name()));
      }
      slot_index = 1 + static_cast<int>(it - s->slot_names().begin());
    }
    absl::StatusOr<const std::string*> file = VerifiedFile(*s);
    if (!file.ok()) return file.status();
    const size_t base = static_cast<size_t>(slot_index) * static_cast<size_t>(s->rows()) * row_bytes;
    std::memcpy(out.raw() + static_cast<size_t>(lo - row_offset) * row_bytes,
                (*file)->data() + base + static_cast<size_t>(lo - s->row_offset()) * row_bytes,
                static_cast<size_t>(hi - lo) * row_bytes);
    next = hi;
  }
  if (next < row_offset + rows) {
    return absl::DataLossError(
        absl::StrCat("no saved slice of variable ", variable, " holds rows [", next, ", ", row_offset + rows, ")"));
  }
  return std::move(out);
}

int64_t CheckpointReader::VersionOf(const std::string& variable, int64_t row_offset, int64_t rows) const {
  int64_t v = 0;
  for (const SavedShard& s : index_->shards) {
    if (s.variable_name() != variable) continue;
    if (rows >= 0 && (s.row_offset() >= row_offset + rows || s.row_offset() + s.rows() <= row_offset)) continue;
    v = std::max(v, s.version());
  }
  return v;
}

bool CheckpointReader::HasSlot(const std::string& variable, const std::string& slot) const {
  bool any = false;
  for (const SavedShard& s : index_->shards) {
    if (s.variable_name() != variable) continue;
    any = true;
    if (std::find(s.slot_names().begin(), s.slot_names().end(), slot) == s.slot_names().end()) return false;
  }
  return any;
}

}  // namespace pstrain
