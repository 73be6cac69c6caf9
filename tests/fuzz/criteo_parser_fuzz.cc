// libFuzzer target for the Criteo TSV parser (build with clang: -DPSTRAIN_FUZZ=ON, target
// criteo_parser_fuzz; run: BUILD/bin/criteo_parser_fuzz -max_total_time=60 CORPUS_DIR).
// The first input byte picks the mode (skip bad lines or not) and a chunk size; the rest is a
// file's bytes. Checks, beyond "no crash, no sanitizer report": parsing the bytes whole and in
// chunks gives the same result, and every parsed value is in its range.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "worker/data/criteo_parser.h"

namespace {

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

void FuzzOneFormat(const pstrain::CriteoFormat& format, bool skip, size_t chunk, absl::string_view text) {
  absl::StatusOr<pstrain::CtrData> whole = pstrain::ParseCriteoBuffer(text, format, "fuzz", skip);
  pstrain::CriteoParser::Options options;
  options.skip_bad_lines = skip;
  pstrain::CriteoParser parser(format, options);
  parser.BeginFile("fuzz");
  absl::Status fed;
  for (size_t at = 0; at < text.size() && fed.ok(); at += chunk) fed = parser.Feed(text.substr(at, chunk));
  if (fed.ok()) fed = parser.EndFile();
  Check(fed.ok() == whole.ok());
  if (!whole.ok()) {
    Check(fed.message() == whole.status().message());
    Check(whole.status().message().size() < 1024);  // excerpts are bounded
    return;
  }
  const pstrain::CtrData chunked = parser.Finish();
  Check(chunked.size == whole->size && chunked.labels == whole->labels && chunked.ids == whole->ids &&
        chunked.bad_lines_skipped == whole->bad_lines_skipped);
  Check(static_cast<int64_t>(whole->labels.size()) == whole->size);
  Check(static_cast<int64_t>(whole->numeric.size()) == whole->size * format.num_numeric);
  Check(static_cast<int64_t>(whole->ids.size()) == whole->size * format.num_categorical);
  for (float label : whole->labels) Check(label == 0.0f || label == 1.0f);
  for (float x : whole->numeric) Check(std::isfinite(x) && x >= 0.0f);
  for (int64_t i = 0; i < whole->size * format.num_categorical; ++i) {
    Check(whole->ids[i] >= 0 && whole->ids[i] < format.table_sizes[i % format.num_categorical]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool skip = (data[0] & 1) != 0;
  const size_t chunk = 1 + (data[0] >> 1);
  const absl::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  // A small layout (dense coverage of field kinds) with a short line limit, and Criteo's own.
  pstrain::CriteoFormat small;
  small.num_numeric = 2;
  small.num_categorical = 3;
  small.table_sizes = {1000, 7, int64_t{1} << 62};
  small.max_line_bytes = 200;
  FuzzOneFormat(small, skip, chunk, text);
  pstrain::CriteoFormat criteo;
  criteo.table_sizes.assign(criteo.num_categorical, 100000);
  FuzzOneFormat(criteo, skip, chunk, text);
  return 0;
}
