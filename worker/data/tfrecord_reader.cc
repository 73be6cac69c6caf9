#include "worker/data/tfrecord_reader.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "worker/data/crc32c.h"
#include "worker/data/file_reader.h"

namespace pstrain {
namespace {

constexpr size_t kHeaderBytes = 12;  // length (8) + its masked CRC (4)
constexpr size_t kCrcBytes = 4;
constexpr size_t kReadChunkBytes = 1 << 20;

uint64_t LoadLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

uint32_t LoadLe32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void AppendLe(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string TfRecordWhere(absl::string_view file, int64_t index) {
  return absl::StrCat("TFRecord file ", file, ", record ", index, ": ");
}

TfRecordParser::TfRecordParser(int64_t max_record_bytes) : max_record_bytes_(max_record_bytes) {}

void TfRecordParser::BeginFile(std::string name) {
  file_ = std::move(name);
  index_ = 0;
  header_bytes_ = 0;
  in_data_ = false;
  need_ = 0;
  partial_.clear();
}

absl::Status TfRecordParser::StartData() {
  const uint64_t length = LoadLe64(header_);
  if (MaskCrc32c(Crc32c(absl::string_view(header_, 8))) != LoadLe32(header_ + 8)) {
    return absl::DataLossError(absl::StrCat(TfRecordWhere(file_, index_),
                                            "the checksum of the record's length does not match: the file is "
                                            "corrupt, or not a TFRecord file (a GZIP file must be whole)"));
  }
  if (length > static_cast<uint64_t>(max_record_bytes_)) {
    return absl::DataLossError(absl::StrCat(TfRecordWhere(file_, index_), "the record claims ", length,
                                            " bytes, more than the limit of ", max_record_bytes_,
                                            " bytes for one record; the file is corrupt"));
  }
  need_ = length + kCrcBytes;
  in_data_ = true;
  header_bytes_ = 0;
  partial_.clear();
  return absl::OkStatus();
}

absl::Status TfRecordParser::Emit(absl::string_view data_and_crc, const TfRecordFn& on_record) {
  TfRecord record;
  record.index = index_;
  record.data = data_and_crc.substr(0, data_and_crc.size() - kCrcBytes);
  record.checksum_ok =
      MaskCrc32c(Crc32c(record.data)) == LoadLe32(data_and_crc.data() + data_and_crc.size() - kCrcBytes);
  in_data_ = false;
  ++index_;
  return on_record(record);
}

absl::Status TfRecordParser::Feed(absl::string_view bytes, const TfRecordFn& on_record) {
  while (!bytes.empty()) {
    if (!in_data_) {
      const size_t take = std::min(kHeaderBytes - header_bytes_, bytes.size());
      std::memcpy(header_ + header_bytes_, bytes.data(), take);
      header_bytes_ += take;
      bytes.remove_prefix(take);
      if (header_bytes_ < kHeaderBytes) break;
      RETURN_IF_ERROR(StartData());
    }
    if (partial_.empty() && bytes.size() >= need_) {  // the whole record is in this chunk: no copy
      absl::string_view whole = bytes.substr(0, need_);
      bytes.remove_prefix(need_);
      RETURN_IF_ERROR(Emit(whole, on_record));
      continue;
    }
    // The record spans chunks: hold what came, never more than the record (need_ passed the limit
    // check), growing only as bytes arrive.
    const size_t take = static_cast<size_t>(std::min<uint64_t>(need_ - partial_.size(), bytes.size()));
    partial_.append(bytes.data(), take);
    bytes.remove_prefix(take);
    if (partial_.size() == need_) {
      std::string whole;
      whole.swap(partial_);
      RETURN_IF_ERROR(Emit(whole, on_record));
    }
  }
  return absl::OkStatus();
}

absl::Status TfRecordParser::EndFile() {
  if (!in_data_ && header_bytes_ == 0) return absl::OkStatus();
  const uint64_t have = in_data_ ? kHeaderBytes + partial_.size() : header_bytes_;
  const std::string expected =
      in_data_ ? absl::StrCat(kHeaderBytes + need_) : absl::StrCat("at least ", kHeaderBytes + kCrcBytes);
  return absl::DataLossError(absl::StrCat(TfRecordWhere(file_, index_), "the file is truncated: it ends after ",
                                          have, " bytes of the record, which needs ", expected));
}

absl::Status ReadTfRecordFile(const std::string& path, int64_t max_record_bytes, const TfRecordFn& on_record) {
  TfRecordParser parser(max_record_bytes);
  parser.BeginFile(path);
  RETURN_IF_ERROR(ReadMaybeGzipFileInChunks(
      path, kReadChunkBytes, [&](absl::string_view chunk) { return parser.Feed(chunk, on_record); }));
  return parser.EndFile();
}

absl::StatusOr<int64_t> CountTfRecords(const std::string& path, int64_t max_record_bytes) {
  int64_t count = 0;
  RETURN_IF_ERROR(ReadTfRecordFile(path, max_record_bytes, [&](const TfRecord&) {
    ++count;
    return absl::OkStatus();
  }));
  return count;
}

std::string FrameTfRecord(absl::string_view data) {
  std::string out;
  out.reserve(data.size() + kHeaderBytes + kCrcBytes);
  AppendLe(data.size(), 8, &out);
  AppendLe(MaskCrc32c(Crc32c(out)), 4, &out);
  out.append(data.data(), data.size());
  AppendLe(MaskCrc32c(Crc32c(data)), 4, &out);
  return out;
}

}  // namespace pstrain
