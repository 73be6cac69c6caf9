// libFuzzer target: the IDX reader (Fashion-MNIST images and labels, gzipped or not). The input is
// the images file, then "\n--labels--\n", then the labels file. Beyond "no crash, no sanitizer
// report": an accepted pair has as many labels as images and every pixel in [0, 1].
#include <cstddef>
#include <cstdint>

#include "common/platform/env.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/data/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pstrain;
  auto [images, labels] =
      fuzz::SplitInput(absl::string_view(reinterpret_cast<const char*>(data), size), "\n--labels--\n");
  const std::string images_path = fuzz::WriteScratch("images.idx", images);
  const std::string labels_path = fuzz::WriteScratch("labels.idx", labels);
  absl::StatusOr<Dataset> d = LoadIdxDataset(Env::Default(), images_path, labels_path);
  if (!d.ok()) return 0;
  fuzz::Check(static_cast<int64_t>(d->labels.size()) == d->size);
  fuzz::Check(static_cast<int64_t>(d->features.size()) == d->size * d->example_floats());
  for (float f : d->features) fuzz::Check(f >= 0.0f && f <= 1.0f);
  return 0;
}
