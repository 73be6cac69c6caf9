// Turns bytes in Criteo's TSV layout (criteo_line.h), fed in chunks of any size from one or more
// files, into CtrData. Lines end with '\n' (a last line without one counts); every line is one
// example, so an empty line is a bad line. A bad line is an error naming file:line and the field,
// quoting a bounded excerpt, unless skip_bad_lines, which counts it instead.
//
// Memory: examples are parsed into blocks of rows (each its own mapping, returned to the system
// when freed) and moved into CtrData's exact-size columns at Finish(), block by block, so memory
// holds about one copy of the examples (264 bytes each with Criteo's fields) plus one block, never
// a vector's doubling slack, plus one partial line of at most max_line_bytes.
// Thread-safety: one parser per thread; ParseCriteoBuffer is a pure function (the fuzzing entry).
#ifndef PSTRAIN_WORKER_DATA_CRITEO_PARSER_H_
#define PSTRAIN_WORKER_DATA_CRITEO_PARSER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "worker/data/criteo_line.h"
#include "worker/data/ctr_data.h"
#include "worker/data/mapped_array.h"

namespace pstrain {

class CriteoParser {
 public:
  struct Options {
    bool skip_bad_lines = false;
    // Keep only the lines whose index among all lines fed (from 0, across files) is congruent
    // to `part` modulo `num_parts`; other lines are not parsed (nor checked) at all.
    int part = 0;
    int num_parts = 1;
  };

  // REQUIRES: ValidateCriteoFormat(format) is OK and 0 <= part < num_parts.
  CriteoParser(CriteoFormat format, Options options);

  // Starts the next file: its lines are numbered from 1 and errors name it `name`.
  void BeginFile(std::string name);
  // The next bytes of the current file. InvalidArgument (file:line, field, excerpt) on the first
  // bad line unless skip_bad_lines; ResourceExhausted when memory runs out. The parser must not
  // be fed after an error.
  absl::Status Feed(absl::string_view bytes);
  // Ends the current file, parsing a last line that has no '\n'. Errors as Feed.
  absl::Status EndFile();
  // The examples parsed so far, moved out; the parser is spent.
  CtrData Finish();

 private:
  struct Block {  // columns of `capacity` rows, left uninitialised (only written rows are read)
    int64_t rows = 0;
    int64_t capacity = 0;
    MappedArray<float> labels, numeric;
    MappedArray<int64_t> ids;
  };

  bool Owned() const { return options_.num_parts == 1 || line_index_ % options_.num_parts == options_.part; }
  void AppendPartial(absl::string_view piece);
  absl::Status EndLine(absl::string_view line);
  absl::Status BadLine(absl::string_view why);
  // The block the next row goes into; null when there is no memory for a new one.
  Block* WritableBlock();

  const CriteoFormat format_;
  const Options options_;
  std::string file_;
  int64_t file_line_ = 1;   // 1-based line number within file_
  int64_t line_index_ = 0;  // 0-based over all files, for the parts
  // The line being assembled across Feed calls: its length so far, and its bytes (kept only
  // when this part owns it, and never more than max_line_bytes of them).
  bool in_line_ = false;
  int64_t partial_bytes_ = 0;
  std::string partial_;
  std::vector<Block> blocks_;
  int64_t bad_lines_ = 0;
  std::string first_bad_line_;
};

// All of `buffer` as the contents of one file called `name`: the parser fed once. Errors as
// CriteoParser, plus InvalidArgument for a bad format.
absl::StatusOr<CtrData> ParseCriteoBuffer(absl::string_view buffer, const CriteoFormat& format, const std::string& name,
                                          bool skip_bad_lines);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_CRITEO_PARSER_H_
