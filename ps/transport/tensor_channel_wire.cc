#include "ps/transport/tensor_channel_wire.h"

#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

constexpr uint32_t kFrameMagic = 0x46545350;  // "PSTF" read as little-endian bytes

void PutLe(uint64_t v, int bytes, char* out) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint64_t GetLe(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

}  // namespace

PrefaceKind ClassifyPreface(absl::string_view first_bytes) {
  const absl::string_view b = first_bytes.substr(0, kPrefaceBytes);
  for (auto [preface, kind] : {std::pair{kPrefacePlain, PrefaceKind::kPlain}, std::pair{kPrefaceTls, PrefaceKind::kTls},
                               std::pair{kLegacyPreface, PrefaceKind::kLegacy}}) {
    if (preface.substr(0, b.size()) == b) return b.size() == kPrefaceBytes ? kind : PrefaceKind::kIncomplete;
  }
  return PrefaceKind::kOther;
}

void EncodeFrameHeader(const FrameHeader& header, char out[kFrameHeaderBytes]) {
  PutLe(kFrameMagic, 4, out);
  PutLe(header.message_bytes, 4, out + 4);
  PutLe(header.payload_bytes, 8, out + 8);
}

absl::StatusOr<FrameHeader> DecodeFrameHeader(const char in[kFrameHeaderBytes]) {
  if (GetLe(in, 4) != kFrameMagic) {
    return absl::InternalError("tensor channel out of step: a frame does not start with the frame magic");
  }
  FrameHeader h;
  h.message_bytes = static_cast<uint32_t>(GetLe(in + 4, 4));
  h.payload_bytes = GetLe(in + 8, 8);
  if (h.message_bytes > kMaxFrameMessageBytes) {
    return absl::InternalError(absl::StrCat("tensor channel out of step: a frame announces a ", h.message_bytes,
                                            "-byte message (at most ", kMaxFrameMessageBytes, ")"));
  }
  if (h.payload_bytes > kMaxFramePayloadBytes) {
    return absl::InternalError(absl::StrCat("tensor channel out of step: a frame announces ", h.payload_bytes,
                                            " payload bytes (at most ", kMaxFramePayloadBytes, ")"));
  }
  return h;
}

std::string FrameHead(const google::protobuf::MessageLite& message, uint64_t payload_bytes) {
  std::string out(kFrameHeaderBytes, '\0');
  message.AppendToString(&out);
  EncodeFrameHeader({static_cast<uint32_t>(out.size() - kFrameHeaderBytes), payload_bytes}, out.data());
  return out;
}

}  // namespace pstrain
