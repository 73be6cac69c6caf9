// A tensor-channel peer that writes and reads frames by hand over a blocking loopback socket, for
// tests that must send what a real client never would (bad sizes, stalls, old prefaces).
// Thread-safety: one thread at a time.
#ifndef PSTRAIN_TESTS_PS_TRANSPORT_RAW_CHANNEL_H_
#define PSTRAIN_TESTS_PS_TRANSPORT_RAW_CHANNEL_H_

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/wire/protocol_version.h"
#include "proto/ps.pb.h"
#include "ps/transport/tensor_channel_wire.h"
#include "tests/test_util/loopback.h"

namespace pstrain {
namespace testing_util {

class RawChannel {
 public:
  // Connects to 127.0.0.1:port; reads give up after 30 s (a test never hangs).
  explicit RawChannel(int port) : fd_(ConnectLoopback(port)) {
    timeval tv{30, 0};
    if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawChannel() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawChannel(const RawChannel&) = delete;
  RawChannel& operator=(const RawChannel&) = delete;

  int fd() const { return fd_; }
  bool Send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // Exactly `n` bytes, or what came before the peer closed (or 30 s passed).
  std::string Receive(size_t n) {
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    out.resize(got);
    return out;
  }
  // True once the peer closed the connection (a read returns nothing).
  bool ClosedByPeer() {
    char byte;
    return ::recv(fd_, &byte, 1, 0) == 0;
  }
  bool SendFrame(const google::protobuf::MessageLite& message, const std::string& payload = "") {
    return Send(FrameHead(message, payload.size()) + payload);
  }
  // The next frame's message (and its payload bytes in `payload`); false when none arrives whole.
  bool ReadFrame(TensorCallResponse* message, std::string* payload = nullptr) {
    const std::string head = Receive(kFrameHeaderBytes);
    if (head.size() != kFrameHeaderBytes) return false;
    absl::StatusOr<FrameHeader> h = DecodeFrameHeader(head.data());
    if (!h.ok()) return false;
    const std::string body = Receive(h->message_bytes);
    if (body.size() != h->message_bytes || !message->ParseFromString(body)) return false;
    const std::string bytes = Receive(h->payload_bytes);
    if (payload != nullptr) *payload = bytes;
    return bytes.size() == h->payload_bytes;
  }
  // The plaintext preface and a hello as `caller` speaking `version`; the ps's answer to the hello
  // (or to the preface, when it refused that) in `answer`. False when no answer came.
  bool Open(TensorCallResponse* answer, const std::string& caller = "worker:0", int version = kProtocolVersion) {
    if (!Send(std::string(kPrefacePlain))) return false;
    const std::string echo = Receive(kPrefaceBytes);
    if (echo != kPrefacePlain) return false;
    TensorCallRequest hello;
    hello.mutable_hello()->set_protocol_version(version);
    hello.mutable_hello()->set_caller(caller);
    return SendFrame(hello) && ReadFrame(answer);
  }
  bool Open() {
    TensorCallResponse answer;
    return Open(&answer) && answer.code() == 0;
  }

 private:
  const int fd_;
};

}  // namespace testing_util
}  // namespace pstrain

#endif  // PSTRAIN_TESTS_PS_TRANSPORT_RAW_CHANNEL_H_
