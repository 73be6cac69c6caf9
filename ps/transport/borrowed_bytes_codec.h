// Zero-copy framing for the streaming ps RPCs (gRPC edge): a flat protobuf message whose one bulk
// `bytes` field is sent straight from the tensor's memory, and received messages split into their
// small fields (parsed by protobuf) and the bulk bytes (copied once, into the destination).
// Thread-safety: pure functions; a DecodedMessage is a value.
#ifndef PSTRAIN_PS_TRANSPORT_BORROWED_BYTES_CODEC_H_
#define PSTRAIN_PS_TRANSPORT_BORROWED_BYTES_CODEC_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"

namespace pstrain {

// `small_fields` (a serialized message without field `field`) followed by field `field` holding
// `size` bytes at `data`, which are referenced, not copied. REQUIRES: `data` stays valid until
// gRPC has sent the buffer (the write completed).
grpc::ByteBuffer EncodeWithBorrowedBytes(const std::string& small_fields, int field, const char* data, size_t size);

struct DecodedMessage {
  std::string small_fields;         // every other field, re-serialized: parse with ParseFromString
  std::vector<grpc::Slice> slices;  // the received buffer (references)
  bool has_bytes = false;
  size_t bytes_size = 0;
  size_t slice_index = 0, slice_offset = 0;  // where the bulk bytes start

  // Copies the bulk bytes to `dst`. REQUIRES: dst holds bytes_size bytes.
  void CopyBytesTo(char* dst) const;
};

// Splits `buffer` into the bytes of `field` and the other fields. DataLoss for malformed wire data.
absl::Status DecodeWithBorrowedBytes(const grpc::ByteBuffer& buffer, int field, DecodedMessage* out);

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_BORROWED_BYTES_CODEC_H_
