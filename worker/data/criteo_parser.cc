#include "worker/data/criteo_parser.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

// Blocks start small (tiny inputs, fuzzing) and double up to 64Ki rows (17 MB with Criteo's
// fields), so the tail of the last block wastes little.
constexpr int64_t kFirstBlockRows = 1024;
constexpr int64_t kMaxBlockRows = 65536;

template <typename T>
void AppendRows(const MappedArray<T>& from, int64_t count, std::vector<T>* to) {
  to->insert(to->end(), from.get(), from.get() + count);
}

}  // namespace

CriteoParser::CriteoParser(CriteoFormat format, Options options) : format_(std::move(format)), options_(options) {}

void CriteoParser::BeginFile(std::string name) {
  file_ = std::move(name);
  file_line_ = 1;
  in_line_ = false;
  partial_bytes_ = 0;
  partial_.clear();
}

absl::Status CriteoParser::Feed(absl::string_view bytes) {
  while (!bytes.empty()) {
    const char* newline = static_cast<const char*>(std::memchr(bytes.data(), '\n', bytes.size()));
    if (newline == nullptr) {
      AppendPartial(bytes);
      return absl::OkStatus();
    }
    const absl::string_view piece = bytes.substr(0, static_cast<size_t>(newline - bytes.data()));
    bytes.remove_prefix(piece.size() + 1);
    if (in_line_) {
      AppendPartial(piece);
      RETURN_IF_ERROR(EndLine(partial_));
    } else {
      partial_bytes_ = static_cast<int64_t>(piece.size());
      RETURN_IF_ERROR(EndLine(piece));
    }
  }
  return absl::OkStatus();
}

absl::Status CriteoParser::EndFile() {
  if (in_line_) RETURN_IF_ERROR(EndLine(partial_));
  return absl::OkStatus();
}

void CriteoParser::AppendPartial(absl::string_view piece) {
  in_line_ = true;
  partial_bytes_ += static_cast<int64_t>(piece.size());
  if (!Owned()) return;
  const size_t room = static_cast<size_t>(format_.max_line_bytes) -
                      std::min(partial_.size(), static_cast<size_t>(format_.max_line_bytes));
  partial_.append(piece.data(), std::min(room, piece.size()));
}

absl::Status CriteoParser::EndLine(absl::string_view line) {
  absl::Status status;
  if (Owned()) {
    if (partial_bytes_ > format_.max_line_bytes) {
      status = BadLine(absl::StrCat("the line is ", partial_bytes_, " bytes, longer than the limit of ",
                                          format_.max_line_bytes, " (a Criteo line is a few hundred)"));
    } else {
      Block* writable = WritableBlock();
      if (writable == nullptr) {
        return absl::ResourceExhaustedError(
            absl::StrCat("out of memory reading ", file_, " at line ", file_line_, " (each example takes ",
                         4 * (1 + format_.num_numeric) + 8 * format_.num_categorical,
                         " bytes): read fewer lines per worker (more parts or workers)"));
      }
      Block& block = *writable;
      const int64_t row = block.rows;
      absl::Status parsed =
          ParseCriteoLine(line, format_, &block.labels[row], block.numeric.get() + row * format_.num_numeric,
                          block.ids.get() + row * format_.num_categorical);
      if (parsed.ok()) {
        ++block.rows;
      } else {
        status = BadLine(parsed.message());
      }
    }
  }
  ++line_index_;
  ++file_line_;
  in_line_ = false;
  partial_bytes_ = 0;
  partial_.clear();
  return status;
}

absl::Status CriteoParser::BadLine(absl::string_view why) {
  // The line's bytes are not shown (see FieldError in criteo_line.cc). Its length is the count
  // of every byte fed, not of the kept prefix, so the message does not depend on chunking.
  std::string message = absl::StrCat(file_, ":", file_line_, ": ", why, "; the line has ", partial_bytes_, " bytes");
  if (options_.skip_bad_lines) {
    if (bad_lines_++ == 0) first_bad_line_ = std::move(message);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(message, ". Fix the file, or skip and count bad lines with skip_bad_lines"));
}

CriteoParser::Block* CriteoParser::WritableBlock() {
  if (blocks_.empty() || blocks_.back().rows == blocks_.back().capacity) {
    Block block;
    block.capacity = blocks_.empty() ? kFirstBlockRows : std::min(2 * blocks_.back().capacity, kMaxBlockRows);
    block.labels = MappedArray<float>(block.capacity);
    block.numeric = MappedArray<float>(block.capacity * format_.num_numeric);
    block.ids = MappedArray<int64_t>(block.capacity * format_.num_categorical);
    if (!block.labels.ok() || !block.numeric.ok() || !block.ids.ok()) return nullptr;
    blocks_.push_back(std::move(block));
  }
  return &blocks_.back();
}

CtrData CriteoParser::Finish() {
  CtrData data;
  data.num_numeric = format_.num_numeric;
  data.num_categorical = format_.num_categorical;
  for (const Block& block : blocks_) data.size += block.rows;
  // reserve() leaves the pages untouched until the copies below write them, and each block is
  // freed once copied, so the peak is one copy of the examples plus a block.
  data.labels.reserve(data.size);
  data.numeric.reserve(data.size * format_.num_numeric);
  data.ids.reserve(data.size * format_.num_categorical);
  for (Block& block : blocks_) {
    AppendRows(block.labels, block.rows, &data.labels);
    AppendRows(block.numeric, block.rows * format_.num_numeric, &data.numeric);
    AppendRows(block.ids, block.rows * format_.num_categorical, &data.ids);
    block = Block();
  }
  blocks_.clear();
  data.bad_lines_skipped = bad_lines_;
  data.first_bad_line = std::move(first_bad_line_);
  return data;
}

absl::StatusOr<CtrData> ParseCriteoBuffer(absl::string_view buffer, const CriteoFormat& format, const std::string& name,
                                          bool skip_bad_lines) {
  RETURN_IF_ERROR(ValidateCriteoFormat(format));
  CriteoParser::Options options;
  options.skip_bad_lines = skip_bad_lines;
  CriteoParser parser(format, options);
  parser.BeginFile(name);
  RETURN_IF_ERROR(parser.Feed(buffer));
  RETURN_IF_ERROR(parser.EndFile());
  return parser.Finish();
}

}  // namespace pstrain
