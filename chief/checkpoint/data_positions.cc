#include "chief/checkpoint/data_positions.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"
#include "common/platform/file_rules.h"
#include "common/platform/status_macros.h"
#include "nlohmann/json.hpp"

namespace pstrain {

DataPositions::DataPositions(int num_parts) : num_parts_(num_parts), positions_(num_parts, 0) {}

void DataPositions::Assign(int worker, Closure* closure) {
  if (closure->kind != Closure::Kind::kTrain || closure->data_position >= 0) return;
  if (closure->data_part < 0) closure->data_part = worker;
  absl::MutexLock lock(&mu_);
  closure->data_position = positions_[closure->data_part];
  positions_[closure->data_part] += closure->num_steps;
}

std::vector<int64_t> DataPositions::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return positions_;
}

void DataPositions::Reset(std::vector<int64_t> positions) {
  absl::MutexLock lock(&mu_);
  positions_ = std::move(positions);
}

std::vector<int64_t> DataPositions::FromStep(int64_t global_step, int num_parts) {
  return std::vector<int64_t>(num_parts, global_step);
}

std::string DataPositions::ToJson(int64_t global_step, const std::vector<int64_t>& positions) {
  nlohmann::json j;
  j["global_step"] = global_step;
  j["positions"] = positions;
  return j.dump() + "\n";
}

absl::StatusOr<std::optional<std::vector<int64_t>>> DataPositions::Load(Env* env, const std::string& dir,
                                                                       int num_parts) {
  const std::string path = absl::StrCat(dir, "/", kDataPositionsFile);
  if (!env->FileExists(path)) return std::optional<std::vector<int64_t>>();
  // A checkpoint's file: a regular file itself (no symlink, FIFO or device), of bounded size.
  ASSIGN_OR_RETURN(std::string text, env->ReadRegularFile(path, kDataPositionsJsonFile.max_bytes));
  ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(text, path));
  const nlohmann::json* list = doc.is_object() && doc.contains("positions") ? &doc["positions"] : nullptr;
  if (list == nullptr || !list->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected {\"positions\": [...]}"));
  }
  std::vector<int64_t> positions;
  for (const nlohmann::json& p : *list) {
    if (!p.is_number_integer() || p.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": positions must be integers >= 0"));
    }
    positions.push_back(p.get<int64_t>());
  }
  if (static_cast<int>(positions.size()) != num_parts) {
    return absl::InvalidArgumentError(absl::StrCat(path, " holds ", positions.size(), " data parts; this job has ",
                                                   num_parts, " workers"));
  }
  return std::optional<std::vector<int64_t>>(std::move(positions));
}

}  // namespace pstrain
