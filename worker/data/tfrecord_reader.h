// Reads TFRecord files, TensorFlow's container of records (tf.io.TFRecordWriter): each record is
//
//   uint64 length | uint32 masked CRC-32C of the length | length bytes | uint32 masked CRC-32C of them
//
// little-endian, masks as crc32c.h. A GZIP-compressed file (TensorFlow's compression_type "GZIP":
// the whole stream gzipped) is recognised by its magic bytes and read through zlib, as every data
// file is (file_reader.h); plain files are read as they are.
//
// Bad data never crashes nor makes the reader hold more than one record: a length whose checksum
// does not match, a length over the limit and a file cut inside a record are errors naming the
// file and the record index (the position of the records after them is lost, so they cannot be
// skipped); a record whose data checksum does not match is handed over marked as such, for the
// caller to fail on or skip.
// Thread-safety: one TfRecordParser per thread; the functions are pure.
#ifndef PSTRAIN_WORKER_DATA_TFRECORD_READER_H_
#define PSTRAIN_WORKER_DATA_TFRECORD_READER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pstrain {

// A record's data is at most this many bytes unless the caller says otherwise: a tf.Example of a
// CTR example is a few hundred bytes, and a corrupt length must not make the reader wait for (or
// hold) gigabytes.
inline constexpr int64_t kDefaultMaxTfRecordBytes = int64_t{64} << 20;

struct TfRecord {
  int64_t index = 0;         // 0-based within its file
  absl::string_view data;    // valid during the callback only
  bool checksum_ok = false;  // the data's masked CRC-32C matched
};
using TfRecordFn = std::function<absl::Status(const TfRecord&)>;

// "TFRecord file F, record N: " — how every message about a record starts.
std::string TfRecordWhere(absl::string_view file, int64_t index);

// Turns the bytes of TFRecord files, fed in chunks of any size, into records.
class TfRecordParser {
 public:
  // REQUIRES: max_record_bytes >= 0.
  explicit TfRecordParser(int64_t max_record_bytes = kDefaultMaxTfRecordBytes);

  // Starts the next file: its records are numbered from 0 and errors name it `name`.
  void BeginFile(std::string name);
  // The next bytes of the file: calls `on_record` for each record they complete. DataLoss (file,
  // record index) when a length's checksum does not match or a length passes the limit; a non-OK
  // status from `on_record` is returned as is. The parser must not be fed after an error.
  absl::Status Feed(absl::string_view bytes, const TfRecordFn& on_record);
  // Ends the file: DataLoss (file, record index, bytes present and expected) when it stops inside
  // a record.
  absl::Status EndFile();
  // Records completed in the current file.
  int64_t records() const { return index_; }

 private:
  absl::Status StartData();
  absl::Status Emit(absl::string_view data_and_crc, const TfRecordFn& on_record);

  const int64_t max_record_bytes_;
  std::string file_;
  int64_t index_ = 0;
  char header_[12];
  size_t header_bytes_ = 0;   // of the current record's header seen so far
  bool in_data_ = false;      // the header is complete; the data and its CRC follow
  uint64_t need_ = 0;         // data + CRC bytes of the current record
  std::string partial_;       // data + CRC bytes seen so far, when a record spans chunks
};

// Reads one file (plain or gzip) record by record. Errors as TfRecordParser, plus those of
// reading the file (file_reader.h: NotFound, a directory, DataLoss for corrupt gzip).
absl::Status ReadTfRecordFile(const std::string& path, int64_t max_record_bytes, const TfRecordFn& on_record);

// The records of a file, its framing checked; a record whose data checksum fails counts too (as a
// job that skips bad records still spends steps on the file's records).
absl::StatusOr<int64_t> CountTfRecords(const std::string& path, int64_t max_record_bytes = kDefaultMaxTfRecordBytes);

// The bytes of one framed record, as tf.io.TFRecordWriter writes it (tests and tools).
std::string FrameTfRecord(absl::string_view data);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_TFRECORD_READER_H_
