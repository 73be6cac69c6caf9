// Framing and socket I/O of the ps's tensor channel (TensorCallRequest in proto/ps.proto): the
// connection preface, frame headers, and blocking reads and writes that stop at a deadline.
// A frame is: magic (4 bytes), message size (4), payload size (8), all little-endian, then the
// serialized message, then the payload (raw tensor bytes). Part of the RPC edge.
// Thread-safety: a FrameIo is used by one thread at a time; the functions are pure.
#ifndef PSTRAIN_PS_TENSOR_CHANNEL_WIRE_H_
#define PSTRAIN_PS_TENSOR_CHANNEL_WIRE_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"

namespace pstrain {

// What a tensor-channel client writes first. An HTTP/2 client starts with "PRI * HT", so the ps
// tells the two apart on its one port by these 8 bytes.
inline constexpr absl::string_view kTensorChannelPreface("PSTRNTC1", 8);
// Messages in a frame are small (names, shapes, versions); anything larger is a corrupt stream.
inline constexpr uint32_t kMaxFrameMessageBytes = uint32_t{16} << 20;
inline constexpr size_t kFrameHeaderBytes = 16;

// Bytes a receiver has agreed to take in but not yet received, shared by its connections: a bound
// on what announced-but-undelivered messages and payloads can make it allocate, whatever a peer
// announces. Thread-safe.
class ByteBudget {
 public:
  explicit ByteBudget(int64_t limit) : limit_(limit) {}
  // Takes `n` bytes now, or ResourceExhausted when that would pass the limit.
  absl::Status TryTake(int64_t n);
  // Takes `n` bytes once they fit (or nothing else is taken, so one request larger than the
  // limit still proceeds alone).
  void Take(int64_t n);
  void Give(int64_t n);
  int64_t taken() const;

 private:
  const int64_t limit_;
  mutable absl::Mutex mu_;
  int64_t taken_ ABSL_GUARDED_BY(mu_) = 0;
};

// Room taken from a ByteBudget (ByteBudget::Take) until Release or destruction: held from the
// moment a payload is announced until its bytes have arrived. Not thread-safe; one per payload.
class ByteReservation {
 public:
  ByteReservation(ByteBudget* budget, int64_t n);  // REQUIRES: budget outlives the reservation
  ~ByteReservation() { Release(); }
  ByteReservation(const ByteReservation&) = delete;
  ByteReservation& operator=(const ByteReservation&) = delete;
  void Release();

 private:
  ByteBudget* budget_;
  const int64_t bytes_;
};

// Blocking I/O on a connected socket, each call bounded by one deadline.
class FrameIo {
 public:
  // `peer_close` words the error when the other end closes (e.g. "the ps closed the connection").
  // REQUIRES: `fd` is a blocking stream socket.
  FrameIo(int fd, absl::Time deadline, std::string peer_close);

  // Writes all of `parts`. Unavailable when the connection fails, DeadlineExceeded at the deadline.
  absl::Status Write(std::vector<iovec> parts);
  // Reads exactly `n` bytes into `dst`. Same codes as Write.
  absl::Status Read(char* dst, size_t n);
  // Reads and drops `n` bytes.
  absl::Status Skip(uint64_t n);

  // One frame: `message`, then `payload` (borrowed, sent without copies).
  absl::Status WriteFrame(const google::protobuf::MessageLite& message, const std::vector<absl::string_view>& payload);
  // Reads a frame's header and message; the caller then reads exactly `*payload_bytes` bytes.
  // Internal for a malformed frame (bad magic, oversized or unparsable message): the connection
  // is out of step and must be closed. The message's memory grows only as its bytes arrive; with
  // `budget`, those bytes are taken from it until the message is parsed (ResourceExhausted when
  // it is spent: close the connection).
  absl::Status ReadFrameStart(google::protobuf::MessageLite* message, uint64_t* payload_bytes,
                              ByteBudget* budget = nullptr);

  // Whether the last failure was the peer closing the connection before any byte of a frame.
  bool closed_between_frames() const { return closed_between_frames_; }

 private:
  // Sets SO_RCVTIMEO / SO_SNDTIMEO to what is left of the deadline; DeadlineExceeded when none is.
  absl::Status ArmTimeout(int option);
  absl::Status Failure(const char* what, int err) const;

  const int fd_;
  const absl::Time deadline_;
  const std::string peer_close_;
  bool closed_between_frames_ = false;
};

// setsockopt of an int-valued option; failures are ignored (the options tune, they do not gate).
void SetSocketInt(int fd, int level, int option, int value);

// Turns on TCP keepalive probes and a bound on unacknowledged data, so a peer whose host vanished
// (no FIN, no RST) fails the connection within about 80 s, as gRPC's keepalive pings would; a peer
// that is merely slow or parked answers the probes and is never cut off.
void SetDeadPeerDetection(int fd);

// Splits "host:port", "[v6]:port" or ":port"; false when there is no port.
bool SplitHostPort(const std::string& address, std::string* host, std::string* port);

// Encodes a frame header.
void EncodeFrameHeader(uint32_t message_bytes, uint64_t payload_bytes, char out[kFrameHeaderBytes]);
// Decodes one; Internal when the magic is wrong or the message size exceeds kMaxFrameMessageBytes.
absl::Status DecodeFrameHeader(const char in[kFrameHeaderBytes], uint32_t* message_bytes, uint64_t* payload_bytes);

}  // namespace pstrain

#endif  // PSTRAIN_PS_TENSOR_CHANNEL_WIRE_H_
