// The ps's end of one tensor-channel connection (tensor_channel_wire.h), as a state machine that
// never blocks: Advance() moves the connection on (preface echo, TLS handshake, hello, then calls:
// read a frame, run it on the PsServer, write the answer) until it must wait, and says for what.
// The SharedPortListener drives it from a few threads, so a waiting connection holds no thread.
// Bytes go straight between the socket and the ps's buffers (pulled snapshots out, gradients into
// pooled tensors). Every size a peer announces is checked before anything is allocated for it:
// messages grow only as their bytes arrive, within the shared message budget; a call's payload is
// reserved in the shared payload budget before its buffers exist; a refused call's payload is
// skipped (never more than one frame may carry) and the connection stays in step.
// Deadlines: the preface one until the hello is answered, then a frame's from its first byte
// until the frame is read, and an answer's from its first byte out; none while idle or while the
// ps runs the call (the ps bounds sync waits itself).
// Thread-safety: Advance from one thread at a time; the wake callback may run on any thread.
#ifndef PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_SESSION_H_
#define PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/ps.pb.h"
#include "ps/transport/byte_stream.h"
#include "ps/transport/tensor_channel_server.h"
#include "ps/transport/tls_stream.h"

namespace pstrain {

class TensorChannelSession : public std::enable_shared_from_this<TensorChannelSession> {
 public:
  // What Advance waits for.
  enum class Wait {
    kRead,   // the socket to be readable
    kWrite,  // the socket to be writable
    kCall,   // the ps to finish a parked call: the wake callback runs then
    kRoom,   // room in the payload budget (its generation to change)
    kClose,  // nothing: the connection is done (closed by the peer, failed, refused or expired)
  };

  // Use TensorChannelServer::NewSession. `server` is not owned and must outlive the session.
  TensorChannelSession(TensorChannelServer* server, int fd, std::unique_ptr<ByteStream> stream, PrefaceKind kind,
                       absl::Time preface_deadline);
  // Gives back what the session holds of the budgets.
  ~TensorChannelSession();

  Wait Advance();

  // When the connection must have moved on (InfiniteFuture: no deadline now).
  absl::Time deadline() const { return deadline_; }
  // Whether a frame is being read or written (bytes are due soon).
  bool mid_frame() const;
  // The payload budget's generation read before the last failed reservation (Wait::kRoom).
  int64_t room_generation() const { return room_generation_; }
  // Runs when a call that Advance left parked (Wait::kCall) finishes. Set before Advance.
  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }
  // The peer's task: its certificate's (TLS) or its hello's (plaintext) word.
  const std::string& peer() const { return peer_; }

 private:
  enum class Phase { kRefusePreface, kEcho, kHandshake, kHello, kIdle, kHead, kPayload, kSkip, kCall, kWrite, kDone };
  // The payload's destinations, in order; `count` gradients get their NaN/Inf counted as they land.
  struct Destination {
    char* data = nullptr;
    size_t size = 0, done = 0, scanned = 0;
    int count = -1;  // index into counted_, or -1
  };
  // Each step returns what to wait for, or nothing to go on.
  using Step = std::optional<Wait>;

  Step Echo();
  Step Handshake();
  Step ReadHead();
  Step ReadPayload();
  Step Skip();
  Step Write();
  Step AwaitCall();

  // The message of a complete frame arrived: the hello, or a call.
  Step OnHello();
  Step OnCall();
  Step PlanPull();
  Step PlanPush();
  // Reserves the payload in the shared budget before any buffer: false when it must wait.
  bool Reserve();
  void Unreserve();
  // Answers `status` after skipping the call's payload (the connection stays in step).
  Step Refuse(const absl::Status& status);
  // Closes the connection once `status` is written (a refused preface or hello).
  Step RefuseAndClose(const absl::Status& status);
  Step StartCall();
  void PullDone(absl::Status status, std::vector<PulledTensor> tensors);
  void PushDone(absl::Status status);
  // Queues `response` with `payload` for writing; then `next`.
  void Answer(const TensorCallResponse& response, std::vector<absl::string_view> payload, Phase next);
  Step Fail(const absl::Status& why);  // closes, logging protocol violations

  TensorChannelServer* const server_;
  const int fd_;
  std::unique_ptr<ByteStream> stream_;
  TlsStream* tls_ = nullptr;  // stream_, when TLS
  Phase phase_;
  absl::Time deadline_;
  std::string peer_;
  std::function<void()> wake_;

  // The frame being read.
  char header_[kFrameHeaderBytes];
  size_t header_got_ = 0;
  FrameHeader frame_;
  std::string message_;
  size_t message_got_ = 0;
  int64_t message_taken_ = 0;  // of the message budget
  TensorCallRequest request_;
  std::vector<Destination> destinations_;
  size_t destination_ = 0;
  uint64_t skip_left_ = 0;
  std::string skip_buffer_;
  int64_t reserved_ = 0;  // of the payload budget
  int64_t room_generation_ = 0;
  absl::Status refusal_;  // the answer of a call refused before it ran

  // The call's inputs and outputs.
  std::vector<std::shared_ptr<Tensor>> gradients_;
  std::vector<std::string> sparse_bytes_;  // pull: ids per entry; push: ids, values per entry
  std::vector<int64_t> counted_;           // NaN/Inf values per gradient
  std::vector<PulledTensor> pulled_;
  PushResponse pushed_;

  // A parked call's outcome, handed over by whichever thread finishes it.
  absl::Mutex call_mu_;
  bool call_done_ ABSL_GUARDED_BY(call_mu_) = false;
  bool parked_ ABSL_GUARDED_BY(call_mu_) = false;
  absl::Status call_status_ ABSL_GUARDED_BY(call_mu_);

  // The answer being written.
  std::string out_head_;
  std::vector<absl::string_view> out_payload_;
  size_t out_part_ = 0, out_offset_ = 0;
  Phase after_write_ = Phase::kIdle;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_TENSOR_CHANNEL_SESSION_H_
