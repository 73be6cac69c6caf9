// Reads CTR data in Criteo's TSV layout (criteo_line.h says what a line holds and how fields are
// transformed) from one or many files, plain or gzip, into memory (ctr_data.h: 264 bytes per
// example with Criteo's fields).
//
// Parts: each of `num_parts` workers reads its own disjoint part, and every line of the files goes
// to exactly one part. The files (all the globs' matches, sorted by path, duplicates removed) are
// split by file when there are at least as many files as parts: file k goes to part
// k % num_parts, so no worker opens another's files (Criteo's 24 day files over up to 24
// workers). With fewer files than parts, every part reads all files and keeps line i (counting
// from 0 over the files in order) when i % num_parts == part; the other lines are skipped without
// being parsed. A part may be empty (size 0): the caller decides whether that is an error.
//
// Shuffling is the consumer's: the examples come in file order, and ShuffleForEpoch
// (shard_iterator.h) gives a permutation per epoch from the job's seed.
// Thread-safety: pure functions.
#ifndef PSTRAIN_WORKER_DATA_CRITEO_READER_H_
#define PSTRAIN_WORKER_DATA_CRITEO_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/data/ctr_data.h"

namespace pstrain {

struct CriteoOptions {
  std::vector<std::string> files_or_globs;  // paths or glob(3) patterns; plain or gzip files
  int num_numeric = 13, num_categorical = 26;
  // Per categorical field: id = int(hex, 16) % size; empty = 0; size 0 (a dynamic table): the id
  // whole (criteo_line.h).
  std::vector<int64_t> table_sizes;
  bool skip_bad_lines = false;       // count bad lines (CtrData::bad_lines_skipped) instead of failing
  int part = 0, num_parts = 1;       // this reader's disjoint part
  int64_t max_line_bytes = 1 << 16;  // a longer line is bad
};

// The files the patterns name, sorted by path with duplicates removed. NotFound naming the
// pattern when a pattern matches nothing (a plain path: when the file does not exist).
absl::StatusOr<std::vector<std::string>> ExpandDataFiles(const std::vector<std::string>& files_or_globs);

// How part `part` of `num_parts` reads `files` (as above): the files it opens and, when
// `by_line`, the line stride it keeps. REQUIRES: 0 <= part < num_parts.
struct PartFiles {
  std::vector<std::string> files;
  bool by_line = false;
};
PartFiles AssignPart(const std::vector<std::string>& files, int part, int num_parts);

// Reads this part of the files. Errors: InvalidArgument for bad options (no patterns, a part out
// of range, table sizes that do not match the fields) and, unless skip_bad_lines, for the first
// bad line (file:line, the field, an excerpt); NotFound for a missing file or a pattern that
// matches nothing; DataLoss for a corrupt or truncated gzip file. Each names the file or pattern.
absl::StatusOr<CtrData> ReadCriteo(const CriteoOptions& options);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_CRITEO_READER_H_
