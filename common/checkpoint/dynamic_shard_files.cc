#include "common/checkpoint/dynamic_shard_files.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/checkpoint/checksum.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

// The DynamicTableState format's first and last bytes (ps/store/dynamic_table_state.h).
constexpr char kMagic[8] = {'P', 'S', 'D', 'Y', 'N', 'T', 'B', '\0'};
constexpr uint64_t kChecksumBytes = sizeof(uint64_t);
constexpr uint64_t kPieceBytes = uint64_t{8} << 20;

absl::Status VerifyFile(Env* env, const std::string& path) {
  absl::StatusOr<uint64_t> size = env->FileSize(path);
  if (!size.ok()) {
    const bool missing = size.status().code() == absl::StatusCode::kNotFound;
    return absl::DataLossError(absl::StrCat("dynamic table file ", path,
                                            missing ? " is missing: " : " is unusable: ", size.status().message()));
  }
  if (*size < sizeof(kMagic) + kChecksumBytes) {
    return absl::DataLossError(
        absl::StrCat("dynamic table file ", path, " holds ", *size, " bytes, too few for a table (truncated)"));
  }
  const uint64_t body = *size - kChecksumBytes;
  std::string piece(static_cast<size_t>(std::min(body, kPieceBytes)), '\0');
  Checksum64Stream checksum;
  for (uint64_t off = 0; off < body; off += piece.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(piece.size(), body - off));
    absl::Status s = env->ReadFileRange(path, off, n, piece.data());
    if (!s.ok()) return absl::DataLossError(absl::StrCat("dynamic table file ", path, ": ", s.message()));
    if (off == 0 && std::memcmp(piece.data(), kMagic, sizeof(kMagic)) != 0) {
      return absl::DataLossError(absl::StrCat("dynamic table file ", path, " is not a dynamic table (bad magic)"));
    }
    checksum.Update(absl::string_view(piece.data(), n));
  }
  unsigned char tail[kChecksumBytes];
  absl::Status s = env->ReadFileRange(path, body, kChecksumBytes, reinterpret_cast<char*>(tail));
  if (!s.ok()) return absl::DataLossError(absl::StrCat("dynamic table file ", path, ": ", s.message()));
  uint64_t stored = 0;
  for (size_t i = 0; i < kChecksumBytes; ++i) stored |= static_cast<uint64_t>(tail[i]) << (8 * i);  // little-endian
  if (stored != checksum.Digest()) {
    return absl::DataLossError(absl::StrFormat(
        "dynamic table file %s fails its checksum (stored %016x, computed %016x): the checkpoint is corrupted", path,
        stored, checksum.Digest()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<SavedDynamicTableFiles>> GroupDynamicShards(const std::vector<SavedDynamicShard>& shards) {
  std::map<std::string, SavedDynamicTableFiles> tables;
  std::map<std::string, std::map<int, SavedDynamicShard>> by_index;
  for (const SavedDynamicShard& s : shards) {
    SavedDynamicTableFiles& t = tables[s.table_name()];
    if (t.table_name.empty()) {
      t.table_name = s.table_name();
      t.num_shards = s.num_shards();
    }
    if (s.num_shards() != t.num_shards) {
      return absl::DataLossError(absl::StrCat("dynamic table ", s.table_name(), " is saved as ", t.num_shards,
                                              " and as ", s.num_shards(), " shards in one checkpoint"));
    }
    if (s.shard_index() < 0 || s.shard_index() >= s.num_shards()) {
      return absl::DataLossError(
          absl::StrCat("dynamic table ", s.table_name(), " lists shard ", s.shard_index(), " of ", s.num_shards()));
    }
    if (!by_index[s.table_name()].emplace(s.shard_index(), s).second) {
      return absl::DataLossError(absl::StrCat("dynamic table ", s.table_name(), " lists shard ", s.shard_index(),
                                              " of ", s.num_shards(), " twice"));
    }
  }
  std::vector<SavedDynamicTableFiles> out;
  for (auto& [name, t] : tables) {
    const std::map<int, SavedDynamicShard>& saved = by_index[name];
    for (int i = 0; i < t.num_shards; ++i) {
      auto it = saved.find(i);
      if (it == saved.end()) {
        return absl::DataLossError(absl::StrCat("dynamic table ", name, " lacks shard ", i, " of ", t.num_shards,
                                                ": a ps did not save it, so the checkpoint is not complete"));
      }
      t.shards.push_back(it->second);
      t.rows += it->second.rows();
    }
    out.push_back(std::move(t));
  }
  return out;
}

absl::Status VerifyDynamicShardFiles(Env* env, const std::string& dir, const std::vector<SavedDynamicShard>& shards) {
  ASSIGN_OR_RETURN(std::vector<SavedDynamicTableFiles> tables, GroupDynamicShards(shards));
  for (const SavedDynamicTableFiles& t : tables) {
    for (const SavedDynamicShard& s : t.shards) RETURN_IF_ERROR(VerifyFile(env, dir + "/" + s.file()));
  }
  return absl::OkStatus();
}

}  // namespace pstrain
