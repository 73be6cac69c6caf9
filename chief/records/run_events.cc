#include "chief/records/run_events.h"

#include "absl/strings/str_cat.h"

namespace pstrain {

Scalars RunEvents::ScalarsOf(const nlohmann::json& record) {
  const bool eval = record.value("kind", "") == "eval";
  Scalars out;
  for (const auto& [key, value] : record.items()) {
    if (key == "step" || key == "wall_time") continue;
    std::string tag = key;
    if (eval && tag.rfind("test_", 0) == 0) tag = tag.substr(5);
    if (value.is_number()) {
      out.emplace_back(tag, value.get<double>());
    } else if (value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) {
        if (value[i].is_number()) out.emplace_back(absl::StrCat(tag, "/worker_", i), value[i].get<double>());
      }
    }
  }
  return out;
}

absl::Status RunEvents::Record(const nlohmann::json& record) {
  const bool eval = record.value("kind", "") == "eval";
  const double wall = record.contains("wall_time") && record["wall_time"].is_number()
                          ? start_unix_ + record["wall_time"].get<double>()
                          : UnixSeconds();
  const int64_t step = record.value("step", int64_t{0});
  absl::MutexLock lock(&mu_);
  std::unique_ptr<TfEventsWriter>& writer = eval ? eval_ : train_;
  if (writer == nullptr) {
    absl::StatusOr<std::unique_ptr<TfEventsWriter>> opened =
        TfEventsWriter::Open(absl::StrCat(model_dir_, eval ? "/eval" : "/train"), wall);
    if (!opened.ok()) return opened.status();
    writer = *std::move(opened);
  }
  return writer->Write(step, wall, ScalarsOf(record));
}

}  // namespace pstrain
