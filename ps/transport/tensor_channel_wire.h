// The format of the ps's tensor channel (TensorCallRequest / TensorCallResponse in proto/ps.proto),
// shared by its client and server ends. A connection goes:
//   client: 8-byte preface, kPrefacePlain or kPrefaceTls (what tells it from gRPC on the one port)
//   ps:     the same 8 bytes when it serves the channel that way; otherwise one error frame, closed
//   (TLS only) the TLS handshake, both sides presenting cluster certificates
//   client: a frame whose call is `hello` (protocol version, task); ps: the answer (its version and
//           task), or an error frame (FAILED_PRECONDITION naming both versions) and the close
//   then calls: one request frame, one response frame, in turn.
// A frame is a 16-byte header (magic "PSTF", message size u32, payload size u64, little-endian),
// the serialized message, then the payload (raw tensor bytes).
// Thread-safety: pure functions and constants.
#ifndef PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_WIRE_H_
#define PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/wire/message_limits.h"
#include "google/protobuf/message_lite.h"

namespace pstrain {

inline constexpr size_t kPrefaceBytes = 8;
inline constexpr absl::string_view kPrefacePlain("PSTRTC3P", kPrefaceBytes);
inline constexpr absl::string_view kPrefaceTls("PSTRTC3T", kPrefaceBytes);
// What protocol version 2's clients send: they are answered with an error frame they understand.
inline constexpr absl::string_view kLegacyPreface("PSTRNTC1", kPrefaceBytes);

inline constexpr size_t kFrameHeaderBytes = 16;
// Messages in a frame are small (names, shapes, versions); anything larger is a corrupt stream.
inline constexpr uint32_t kMaxFrameMessageBytes = uint32_t{16} << 20;
// No pull or push carries more than one message's worth of tensor bytes (the ps's limit).
inline constexpr uint64_t kMaxFramePayloadBytes = static_cast<uint64_t>(kMaxMessageBytes);

enum class PrefaceKind {
  kIncomplete,  // a prefix of a preface: read more
  kPlain,       // the tensor channel over TCP
  kTls,         // the tensor channel over TLS
  kLegacy,      // a protocol version 2 client
  kOther,       // anything else (gRPC: "PRI * HTTP/2.0" or a TLS ClientHello)
};

// What the first bytes of a connection (at most kPrefaceBytes) say it is.
PrefaceKind ClassifyPreface(absl::string_view first_bytes);

struct FrameHeader {
  uint32_t message_bytes = 0;
  uint64_t payload_bytes = 0;
};

void EncodeFrameHeader(const FrameHeader& header, char out[kFrameHeaderBytes]);
// Internal when the magic is wrong, or the message or the payload exceeds its limit: the stream is
// out of step and the connection must close.
absl::StatusOr<FrameHeader> DecodeFrameHeader(const char in[kFrameHeaderBytes]);

// The header and serialized `message` of a frame whose payload is `payload_bytes` long, in one
// buffer (one write, one TLS record).
std::string FrameHead(const google::protobuf::MessageLite& message, uint64_t payload_bytes);

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_WIRE_H_
