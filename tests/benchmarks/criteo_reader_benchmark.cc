// Reading speed of the Criteo TSV reader: parses the given files (plain or gzip) into memory, as
// a worker does at start-up, and prints lines/s and MB/s of text, best of --repeats runs.
//
// Usage: criteo_reader_benchmark [--repeats=3] [--table_size=100000] FILE...
// Prints a table line and a last line `RESULT {"lines": N, "seconds": S, "lines_per_sec": ...}`.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "worker/data/criteo_reader.h"

ABSL_FLAG(int, repeats, 3, "runs; the best is printed");
ABSL_FLAG(int64_t, table_size, 100000, "rows of every categorical field's table (the hashing modulus)");

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  pstrain::CriteoOptions options;
  options.files_or_globs.assign(args.begin() + 1, args.end());
  options.table_sizes.assign(options.num_categorical, absl::GetFlag(FLAGS_table_size));
  double file_bytes = 0.0;
  for (const std::string& f : options.files_or_globs) {
    struct stat info;
    if (::stat(f.c_str(), &info) == 0) file_bytes += static_cast<double>(info.st_size);
  }
  double best = 1e300;
  int64_t lines = 0;
  for (int r = 0; r < std::max(1, absl::GetFlag(FLAGS_repeats)); ++r) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<pstrain::CtrData> data = pstrain::ReadCriteo(options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!data.ok()) {
      std::fprintf(stderr, "criteo_reader_benchmark: %s\n", std::string(data.status().message()).c_str());
      return 2;
    }
    lines = data->size;
    best = std::min(best, seconds);
  }
  std::printf("%lld lines, %.1f MB on disk: %.3f s, %.0f lines/s, %.0f MB/s (best of %d)\n",
              static_cast<long long>(lines), file_bytes / 1e6, best, static_cast<double>(lines) / best,
              file_bytes / 1e6 / best, absl::GetFlag(FLAGS_repeats));
  std::printf("RESULT {\"lines\": %lld, \"seconds\": %.4f, \"lines_per_sec\": %.0f}\n", static_cast<long long>(lines),
              best, static_cast<double>(lines) / best);
  return 0;
}
