// Reads TFRecord files of tf.Example into CTR examples (tf_example_ctr.h), as a worker does at
// start-up, and prints records/s, best of --repeats runs; with --dump, prints every example instead
// (label, numeric inputs, ids; tab-separated), for tests comparing values with another reader.
//
// Usage: tfrecord_reader_benchmark [--repeats=3] [--table_size=100000] [--label=label]
//          [--numeric=I1,..,I13] [--categorical=C1,..,C26] [--skip_bad_records] [--dump] FILE...
// Prints a table line and a last line `RESULT {"records": N, "seconds": S, "records_per_sec": R}`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/platform/env.h"
#include "worker/data/tf_example_ctr.h"

ABSL_FLAG(int, repeats, 3, "runs; the best is printed");
ABSL_FLAG(int64_t, table_size, 100000, "rows of every categorical field's table (the hashing modulus)");
ABSL_FLAG(std::string, label, "label", "the label's feature");
ABSL_FLAG(std::string, numeric, "", "numeric features, comma-separated (default I1..I13)");
ABSL_FLAG(std::string, categorical, "", "categorical features, comma-separated (default C1..C26)");
ABSL_FLAG(bool, skip_bad_records, false, "skip and count bad records");
ABSL_FLAG(bool, dump, false, "print the examples (one line each) instead of timing");

namespace {

std::vector<std::string> Names(const std::string& flag, const char* prefix, int count) {
  if (!flag.empty()) return absl::StrSplit(flag, ',');
  std::vector<std::string> out;
  for (int i = 1; i <= count; ++i) out.push_back(absl::StrCat(prefix, i));
  return out;
}

void Dump(const pstrain::CtrData& d) {
  for (int64_t i = 0; i < d.size; ++i) {
    std::printf("%g", d.labels[i]);
    for (int j = 0; j < d.num_numeric; ++j) std::printf("\t%.9g", d.numeric[i * d.num_numeric + j]);
    for (int c = 0; c < d.num_categorical; ++c) {
      std::printf("\t%lld", static_cast<long long>(d.ids[i * d.num_categorical + c]));
    }
    std::printf("\n");
  }
  std::fprintf(stderr, "%lld examples, %lld bad records skipped\n", static_cast<long long>(d.size),
               static_cast<long long>(d.bad_lines_skipped));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  pstrain::TfRecordCtrOptions options;
  options.files_or_globs.assign(args.begin() + 1, args.end());
  options.features.label = absl::GetFlag(FLAGS_label);
  options.features.numeric = Names(absl::GetFlag(FLAGS_numeric), "I", 13);
  options.features.categorical = Names(absl::GetFlag(FLAGS_categorical), "C", 26);
  options.table_sizes.assign(options.features.categorical.size(), absl::GetFlag(FLAGS_table_size));
  options.skip_bad_records = absl::GetFlag(FLAGS_skip_bad_records);
  double best = 1e300;
  int64_t records = 0;
  const int repeats = absl::GetFlag(FLAGS_dump) ? 1 : std::max(1, absl::GetFlag(FLAGS_repeats));
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<pstrain::CtrData> data = pstrain::ReadTfRecordCtr(pstrain::Env::Default(), options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!data.ok()) {
      std::fprintf(stderr, "tfrecord_reader_benchmark: %s\n", std::string(data.status().message()).c_str());
      return 2;
    }
    if (absl::GetFlag(FLAGS_dump)) {
      Dump(*data);
      return 0;
    }
    records = data->size;
    best = std::min(best, seconds);
  }
  std::printf("%lld records: %.3f s, %.0f records/s (best of %d)\n", static_cast<long long>(records), best,
              static_cast<double>(records) / best, repeats);
  std::printf("RESULT {\"records\": %lld, \"seconds\": %.4f, \"records_per_sec\": %.0f}\n",
              static_cast<long long>(records), best, static_cast<double>(records) / best);
  return 0;
}
