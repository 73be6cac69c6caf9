// libFuzzer target: the CSV reader. The first input byte picks the label column (-1 or 0..6),
// whether there is a header and whether labels are classes; the rest is the file. Beyond "no
// crash, no sanitizer report": an accepted file gives one label or target per example, and every
// value is finite.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/platform/env.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/data/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pstrain;
  if (size < 1) return 0;
  const int64_t label_column = (data[0] & 7) == 7 ? -1 : (data[0] & 7);
  const bool header = (data[0] & 8) != 0, classification = (data[0] & 16) != 0;
  const std::string path =
      fuzz::WriteScratch("data.csv", absl::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  absl::StatusOr<Dataset> d = LoadCsvDataset(Env::Default(), path, label_column, header, classification);
  if (!d.ok()) return 0;
  fuzz::Check(static_cast<int64_t>(d->features.size()) == d->size * d->example_floats());
  if (classification) {
    fuzz::Check(static_cast<int64_t>(d->labels.size()) == d->size);
  } else {
    fuzz::Check(static_cast<int64_t>(d->targets.size()) == d->size * d->target_width);
    for (float t : d->targets) fuzz::Check(std::isfinite(t));
  }
  for (float f : d->features) fuzz::Check(std::isfinite(f));
  return 0;
}
