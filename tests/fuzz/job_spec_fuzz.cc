// libFuzzer target: the job spec (JSON into JobSpec, with every field's checks). Beyond "no crash,
// no sanitizer report": an accepted spec survives its own JSON form unchanged.
#include <cstddef>
#include <cstdint>

#include "common/config/job_spec.h"
#include "common/config/json_util.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pstrain;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<nlohmann::json> doc = ParseJson(text, "fuzz.json");
  if (!doc.ok()) return 0;
  absl::StatusOr<JobSpec> spec = JobSpecFromJson(*doc);
  if (!spec.ok()) {
    fuzz::Check(!spec.status().message().empty());
    return 0;
  }
  const nlohmann::json again = JobSpecToJson(*spec);
  absl::StatusOr<JobSpec> reread = JobSpecFromJson(again);
  fuzz::Check(reread.ok() && JobSpecToJson(*reread) == again);
  return 0;
}
