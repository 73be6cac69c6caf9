// Non-blocking byte streams under the tensor channel: a TCP socket as it is (PlainStream, here) or
// through TLS (TlsStream, tls_stream.h). A read or write moves what it can now and says what it
// waits for otherwise, so the ps serves many connections from a few threads and a client waits
// for its own socket against its deadline (WaitForSocket).
// Thread-safety: a stream is used by one thread at a time.
#ifndef PSTRAIN_PS_TRANSPORT_BYTE_STREAM_H_
#define PSTRAIN_PS_TRANSPORT_BYTE_STREAM_H_

#include <sys/uio.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/platform/env.h"

namespace pstrain {

// What a stream that moved nothing waits for.
enum class Want { kNothing, kRead, kWrite };

struct IoResult {
  size_t bytes = 0;            // moved now
  Want want = Want::kNothing;  // bytes == 0 and ok: wait for this, then try again
  bool eof = false;            // the peer closed the connection cleanly (reads)
  absl::Status error;          // the connection failed: Unavailable naming why

  bool ok() const { return error.ok() && !eof; }
};

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to `n` (> 0) bytes into `dst`.
  virtual IoResult Read(char* dst, size_t n) = 0;
  // Writes a prefix of `parts` (count > 0, the first part non-empty).
  virtual IoResult Write(const iovec* parts, size_t count) = 0;
  // Bytes already received and decoded (TLS): readable without waiting for the socket.
  virtual bool HasBufferedInput() const { return false; }
  virtual int fd() const = 0;
};

// A connected non-blocking socket. Does not own `fd`.
class PlainStream : public ByteStream {
 public:
  explicit PlainStream(int fd) : fd_(fd) {}
  IoResult Read(char* dst, size_t n) override;
  IoResult Write(const iovec* parts, size_t count) override;
  int fd() const override { return fd_; }

 private:
  const int fd_;
};

// Unavailable naming `what` ("receiving") and errno `err`.
absl::Status SocketError(const char* what, int err);

// Waits until `fd` is ready for `want`, or `deadline` by `env`'s clock (checked at least every
// 100 ms, so a test's fake clock is seen). DeadlineExceeded at the deadline.
absl::Status WaitForSocket(int fd, Want want, absl::Time deadline, Env* env);

// setsockopt of an int-valued option; failures are ignored (the options tune, they do not gate).
void SetSocketInt(int fd, int level, int option, int value);

// TCP keepalive probes and a bound on unacknowledged data, so a peer whose host vanished (no FIN,
// no RST) fails the connection within about 80 s, as gRPC's keepalive pings would; a peer that is
// merely slow or parked answers the probes and is never cut off.
void SetDeadPeerDetection(int fd);

// Sets O_NONBLOCK on `fd`.
void SetNonBlocking(int fd);

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_BYTE_STREAM_H_
