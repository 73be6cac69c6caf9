#include "common/checkpoint/checkpoint_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/checkpoint/checksum.h"
#include "common/checkpoint/dynamic_shard_files.h"
#include "common/plan/memory_budget.h"
#include "common/platform/checked_math.h"
#include "common/platform/confined_path.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor_proto.h"

namespace pstrain {
namespace {

// REQUIRES: an entry validated by ReadCheckpointIndex (its sizes fit).
int64_t RowElements(const SavedShard& s) {
  int64_t n = 1;
  for (int i = 1; i < s.full_shape_size(); ++i) n *= s.full_shape(i);
  return n;
}

int64_t TotalRows(const SavedShard& s) { return s.full_shape_size() == 0 ? 1 : s.full_shape(0); }

int64_t StrideOf(const SavedShard& s) { return std::max<int64_t>(s.row_stride(), 1); }

size_t RowBytes(const SavedShard& s) {
  return static_cast<size_t>(RowElements(s)) * static_cast<size_t>(DTypeSize(FromProtoDType(s.dtype())));
}

// Files are checksummed and rows gathered through a buffer of at most this size.
constexpr size_t kPieceBytes = size_t{8} << 20;

bool SameLayout(const SavedShard& a, const SavedShard& b) {
  return std::equal(a.full_shape().begin(), a.full_shape().end(), b.full_shape().begin(), b.full_shape().end()) &&
         a.dtype() == b.dtype();
}

// Whether rows offset_a + i * stride_a and offset_b + j * stride_b can ever coincide.
bool LatticesMeet(int64_t offset_a, int64_t stride_a, int64_t offset_b, int64_t stride_b) {
  return (offset_a - offset_b) % std::gcd(stride_a, stride_b) == 0;
}

// The local rows [*l0, *l1) of slice `s` whose global rows fall within the range of `select`
// (not all of them need be selected when the strides differ); false when there are none.
bool LocalRowsFor(const SavedShard& s, const RowSelection& select, int64_t* l0, int64_t* l1) {
  const int64_t ss = StrideOf(s);
  if (s.rows() == 0 || select.rows == 0 || !LatticesMeet(s.row_offset(), ss, select.offset, select.stride)) {
    return false;
  }
  const int64_t t_lo = select.offset, t_hi = select.offset + (select.rows - 1) * select.stride;
  const int64_t s_lo = s.row_offset();
  *l0 = t_lo <= s_lo ? 0 : (t_lo - s_lo + ss - 1) / ss;
  *l1 = t_hi < s_lo ? 0 : std::min(s.rows(), (t_hi - s_lo) / ss + 1);
  return *l0 < *l1;
}

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
  std::vector<absl::string_view> parts;
  parts.emplace_back(reinterpret_cast<const char*>(values.raw()), values.num_bytes());
  for (const Tensor& t : slots) parts.emplace_back(reinterpret_cast<const char*>(t.raw()), t.num_bytes());
  Checksum64Stream checksum;
  for (absl::string_view part : parts) checksum.Update(part);
  SavedShard saved;
  saved.set_shard_name(spec.shard_name());
  saved.set_variable_name(spec.variable_name());
  *saved.mutable_full_shape() = spec.full_shape();
  saved.set_row_offset(spec.row_offset());
  saved.set_rows(spec.rows());
  saved.set_row_stride(std::max<int64_t>(spec.row_stride(), 1));
  saved.set_dtype(spec.dtype());
  saved.set_file(ShardFileName(spec.shard_name()));
  saved.set_checksum(checksum.Digest());
  saved.set_version(version);
  for (const std::string& n : slot_names) saved.add_slot_names(n);
  RETURN_IF_ERROR(env->WriteFileAtomicParts(dir + "/" + saved.file(), parts));
  return saved;
}

CheckpointReader::CheckpointReader(Env* env, std::string dir, const CheckpointIndex* index, int64_t max_bytes)
    : env_(env),
      dir_(std::move(dir)),
      index_(index),
      max_bytes_(max_bytes > 0 ? max_bytes : MemoryBudgetBytes(env, 0).value_or(kFallbackMemoryBudgetBytes)) {}

absl::StatusOr<std::string> CheckpointReader::FilePath(const SavedShard& shard) const {
  absl::StatusOr<std::string> path = PathInDir(dir_, shard.file(), "checkpoint file");
  if (!path.ok()) return absl::DataLossError(path.status().message());
  return path;
}

absl::Status CheckpointReader::VerifyFile(const SavedShard& shard) {
  ASSIGN_OR_RETURN(const std::string path, FilePath(shard));
  absl::StatusOr<int64_t> expected_or = SavedShardFileBytes(shard);
  if (!expected_or.ok()) return absl::DataLossError(absl::StrCat(path, ": ", expected_or.status().message()));
  if (auto it = verified_.find(shard.file()); it != verified_.end()) {
    if (it->second == &shard) return absl::OkStatus();
    // pstrain names each slice's file after its shard: two slices of one file are an edit.
    return absl::DataLossError(absl::StrCat("checkpoint file ", path, " is listed for two slices, ",
                                            it->second->shard_name(), " and ", shard.shard_name()));
  }
  absl::StatusOr<uint64_t> size = env_->FileSize(path);
  if (!size.ok()) {
    const bool missing = size.status().code() == absl::StatusCode::kNotFound;
    return absl::DataLossError(absl::StrCat("checkpoint file ", path, missing ? " is missing: " : " is unusable: ",
                                            size.status().message()));
  }
  // Never more than the index promises: a file of another size is not read at all.
  const uint64_t expected = static_cast<uint64_t>(*expected_or);
  if (*size != expected) {
    return absl::DataLossError(absl::StrCat("checkpoint file ", path, " holds ", *size, " bytes, expected ", expected,
                                            " (truncated or corrupted)"));
  }
  std::string piece(static_cast<size_t>(std::min<uint64_t>(expected, kPieceBytes)), '\0');
  Checksum64Stream checksum;
  for (uint64_t off = 0; off < expected; off += piece.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(piece.size(), expected - off));
    absl::Status s = env_->ReadFileRange(path, off, n, piece.data());
    if (!s.ok()) return absl::DataLossError(absl::StrCat("checkpoint file ", path, ": ", s.message()));
    checksum.Update(absl::string_view(piece.data(), n));
  }
  if (checksum.Digest() != shard.checksum()) {
    return absl::DataLossError(
        absl::StrFormat("checkpoint file %s fails its checksum (index %016x, file %016x): "
                        "the checkpoint is corrupted",
                        path, shard.checksum(), checksum.Digest()));
  }
  verified_[shard.file()] = &shard;
  return absl::OkStatus();
}

absl::Status CheckpointReader::VerifyFilesFor(const std::vector<const SavedShard*>& slices,
                                              const RowSelection& select) {
  int64_t at_most = 0;  // rows the slices can give at most (exact when the strides agree)
  for (const SavedShard* s : slices) {
    int64_t l0 = 0, l1 = 0;
    if (!LocalRowsFor(*s, select, &l0, &l1)) continue;
    RETURN_IF_ERROR(VerifyFile(*s));
    if (!CheckedAdd(at_most, l1 - l0, &at_most)) at_most = std::numeric_limits<int64_t>::max();
  }
  if (at_most < select.rows) {
    return absl::DataLossError(absl::StrCat("the saved slices of variable ", slices[0]->variable_name(), " in ", dir_,
                                            " hold at most ", at_most, " of the ", select.rows,
                                            " rows asked for: the checkpoint holds fewer rows than its index says"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<const SavedShard*>> CheckpointReader::SlicesOf(const std::string& variable) const {
  std::vector<const SavedShard*> slices;
  for (const SavedShard& s : index_->shards) {
    if (s.variable_name() == variable) slices.push_back(&s);
  }
  if (slices.empty()) {
    return absl::NotFoundError(absl::StrCat("variable ", variable, " is not in the checkpoint ", dir_));
  }
  for (const SavedShard* s : slices) {
    if (!SameLayout(*s, *slices[0])) {
      return absl::DataLossError(
          absl::StrCat("checkpoint slices of variable ", variable, " disagree on shape or dtype"));
    }
  }
  return slices;
}

absl::StatusOr<Tensor> CheckpointReader::ReadRows(const std::string& variable, int64_t row_offset, int64_t rows,
                                                  const std::string& slot) {
  ASSIGN_OR_RETURN(std::vector<const SavedShard*> slices, SlicesOf(variable));
  const SavedShard& first = *slices[0];
  if (rows < 0) {
    row_offset = 0;
    rows = TotalRows(first);
  }
  if (row_offset < 0 || rows > TotalRows(first) || row_offset > TotalRows(first) - rows) {
    return absl::InvalidArgumentError(absl::StrCat("rows [", row_offset, ", ", row_offset + rows, ") of variable ",
                                                   variable, " fall outside its ", TotalRows(first), " saved rows"));
  }
  std::vector<int64_t> shape(first.full_shape().begin(), first.full_shape().end());
  if (!shape.empty()) shape[0] = rows;
  const RowSelection select{row_offset, rows, 1};
  // An index that promises more than its files hold fails here, having allocated nothing large.
  RETURN_IF_ERROR(VerifyFilesFor(slices, select));
  const DType dtype = FromProtoDType(first.dtype());
  const std::string what = absl::StrCat("variable ", variable, " in ", dir_);
  absl::StatusOr<int64_t> out_bytes = CheckedNumBytes(shape, DTypeSize(dtype), what);
  if (!out_bytes.ok()) return absl::DataLossError(out_bytes.status().message());
  if (*out_bytes > max_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(what, " of shape ", ShapeString(shape), " would take ",
                                                     FormatBytes(*out_bytes), ", more than the memory budget of ",
                                                     FormatBytes(max_bytes_), " (raise ", kMemoryBudgetFlag, ")"));
  }
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(dtype, shape, what));
  RETURN_IF_ERROR(ReadRowsInto(variable, select, slot, &out));
  return out;
}

absl::Status CheckpointReader::ReadRowsInto(const std::string& variable, const RowSelection& select,
                                            const std::string& slot, Tensor* out) {
  ASSIGN_OR_RETURN(std::vector<const SavedShard*> slices, SlicesOf(variable));
  const int64_t total = TotalRows(*slices[0]);
  if (select.rows < 0 || select.stride < 1 || select.offset < 0 ||
      (select.rows > 0 && (select.rows - 1) > (total - 1 - select.offset) / select.stride)) {
    return absl::InvalidArgumentError(absl::StrCat(select.rows, " rows from ", select.offset, " in steps of ",
                                                   select.stride, " of variable ", variable, " fall outside its ",
                                                   total, " saved rows"));
  }
  const size_t row_bytes = RowBytes(*slices[0]);
  if (out->num_bytes() != static_cast<size_t>(select.rows) * row_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("variable ", variable, ": a ", out->num_bytes(),
                                                   "-byte tensor cannot take ", select.rows, " rows"));
  }
  std::vector<bool> covered(static_cast<size_t>(select.rows));
  int64_t copied = 0;
  for (const SavedShard* s : slices) {
    int slot_index = 0;
    if (!slot.empty()) {
      auto it = std::find(s->slot_names().begin(), s->slot_names().end(), slot);
      if (it == s->slot_names().end()) {
        return absl::NotFoundError(absl::StrCat("slot \"", slot, "\" of variable ", variable,
                                                " is not in the checkpoint's slice ", s->shard_name()));
      }
      slot_index = 1 + static_cast<int>(it - s->slot_names().begin());
    }
    RETURN_IF_ERROR(
        CopyFromSlice(*s, slot_index, select, row_bytes, reinterpret_cast<char*>(out->raw()), &covered, &copied));
  }
  if (copied != select.rows) {
    const int64_t j = std::find(covered.begin(), covered.end(), false) - covered.begin();
    return absl::DataLossError(
        absl::StrCat("no saved slice of variable ", variable, " holds row ", select.offset + j * select.stride));
  }
  return absl::OkStatus();
}

absl::Status CheckpointReader::CopyFromSlice(const SavedShard& s, int slot_index, const RowSelection& select,
                                             size_t row_bytes, char* out, std::vector<bool>* covered, int64_t* copied) {
  const int64_t ss = StrideOf(s);
  const int64_t s_lo = s.row_offset();
  int64_t l0 = 0, l1 = 0;
  if (!LocalRowsFor(s, select, &l0, &l1)) return absl::OkStatus();
  RETURN_IF_ERROR(VerifyFile(s));
  ASSIGN_OR_RETURN(const std::string path, FilePath(s));
  const uint64_t base = static_cast<uint64_t>(slot_index) * static_cast<uint64_t>(s.rows()) * row_bytes;
  auto take = [&](int64_t j) -> absl::Status {
    if ((*covered)[static_cast<size_t>(j)]) {
      return absl::DataLossError(absl::StrCat("two saved slices of variable ", s.variable_name(), " hold row ",
                                              select.offset + j * select.stride));
    }
    (*covered)[static_cast<size_t>(j)] = true;
    ++*copied;
    return absl::OkStatus();
  };
  if (ss == select.stride) {
    // The same lattice: the slice's rows l0..l1 are the selection's rows j0.. in order.
    const int64_t j0 = (s_lo + l0 * ss - select.offset) / select.stride;
    for (int64_t j = j0; j < j0 + (l1 - l0); ++j) RETURN_IF_ERROR(take(j));
    return env_->ReadFileRange(path, base + static_cast<uint64_t>(l0) * row_bytes,
                               static_cast<size_t>(l1 - l0) * row_bytes, out + j0 * row_bytes);
  }
  // Different strides (div <-> mod, another shard count): read pieces, keep the selected rows.
  const int64_t piece_rows = std::max<int64_t>(1, static_cast<int64_t>(kPieceBytes / std::max<size_t>(row_bytes, 1)));
  std::string piece(static_cast<size_t>(std::min(piece_rows, l1 - l0)) * row_bytes, '\0');
  for (int64_t l = l0; l < l1; l += piece_rows) {
    const int64_t n = std::min(piece_rows, l1 - l);
    RETURN_IF_ERROR(env_->ReadFileRange(path, base + static_cast<uint64_t>(l) * row_bytes,
                                        static_cast<size_t>(n) * row_bytes, piece.data()));
    for (int64_t k = 0; k < n; ++k) {
      const int64_t d = s_lo + (l + k) * ss - select.offset;
      if (d % select.stride != 0) continue;
      RETURN_IF_ERROR(take(d / select.stride));
      std::memcpy(out + (d / select.stride) * row_bytes, piece.data() + k * row_bytes, row_bytes);
    }
  }
  return absl::OkStatus();
}

int64_t CheckpointReader::VersionOf(const std::string& variable, const RowSelection& select) const {
  int64_t v = 0;
  const int64_t t_hi = select.offset + std::max<int64_t>(select.rows - 1, 0) * select.stride;
  for (const SavedShard& s : index_->shards) {
    if (s.variable_name() != variable || s.rows() == 0 || select.rows == 0) continue;
    const int64_t s_hi = s.row_offset() + (s.rows() - 1) * StrideOf(s);
    if (s.row_offset() > t_hi || s_hi < select.offset) continue;
    if (!LatticesMeet(s.row_offset(), StrideOf(s), select.offset, select.stride)) continue;
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

absl::Status CheckpointReader::VerifyAll() {
  std::set<std::string> variables;
  for (const SavedShard& s : index_->shards) {
    RETURN_IF_ERROR(VerifyFile(s));
    variables.insert(s.variable_name());
  }
  RETURN_IF_ERROR(VerifyDynamicShardFiles(env_, dir_, index_->dynamic_shards));
  if (variables.empty() && index_->dynamic_shards.empty()) {
    return absl::DataLossError(absl::StrCat(dir_, "/index.json lists no shards"));
  }
  for (const std::string& variable : variables) {
    ASSIGN_OR_RETURN(std::vector<const SavedShard*> slices, SlicesOf(variable));
    const int64_t total = TotalRows(*slices[0]);
    int64_t saved = 0;
    bool overflow = false;
    for (const SavedShard* s : slices) {
      if (!std::equal(s->slot_names().begin(), s->slot_names().end(), slices[0]->slot_names().begin(),
                      slices[0]->slot_names().end())) {
        return absl::DataLossError(absl::StrCat("checkpoint slices of variable ", variable, " disagree on slots"));
      }
      if (!CheckedAdd(saved, s->rows(), &saved)) overflow = true;
    }
    // Counted first: the bitmap below is only as large as the rows the verified files hold.
    if (overflow || saved != total) {
      return absl::DataLossError(absl::StrCat("the checkpoint's slices of variable ", variable, " hold ",
                                              overflow ? "more than int64 can count" : absl::StrCat(saved), " of its ",
                                              total, " rows"));
    }
    std::vector<bool> seen(static_cast<size_t>(total));
    for (const SavedShard* s : slices) {
      for (int64_t j = 0; j < s->rows(); ++j) {
        const int64_t row = s->row_offset() + j * StrideOf(*s);
        if (seen[static_cast<size_t>(row)]) {
          return absl::DataLossError(absl::StrCat("two saved slices of variable ", variable, " hold row ", row));
        }
        seen[static_cast<size_t>(row)] = true;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace pstrain
