// TLS for the tensor channel (OpenSSL): a context per end built from the task's TLS material
// (common/security/tls_config.h) that trusts only the cluster CA, presents the task's certificate
// and requires the peer's; and a non-blocking ByteStream over one connection. Where the kernel
// offers TLS offload (the `tls` module, "tls" in /proc/sys/net/ipv4/tcp_available_ulp), OpenSSL
// hands the session keys to it after the handshake and sends go straight from the caller's
// buffers to the socket (one copy, as over plain TCP); otherwise OpenSSL encrypts in user space.
// Thread-safety: a TlsContext is shared by any number of connections; a TlsStream is used by one
// thread at a time.
#ifndef PSTRAIN_PS_TRANSPORT_TLS_STREAM_H_
#define PSTRAIN_PS_TRANSPORT_TLS_STREAM_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/security/tls_config.h"
#include "ps/transport/byte_stream.h"

namespace pstrain {

class TlsContext {
 public:
  enum class Side { kClient, kServer };
  // InvalidArgument when OpenSSL refuses the material. REQUIRES: config.enabled.
  static absl::StatusOr<std::shared_ptr<const TlsContext>> Create(const TlsConfig& config, Side side);
  ~TlsContext();

  SSL_CTX* get() const { return ctx_; }
  Side side() const { return side_; }

 private:
  TlsContext(SSL_CTX* ctx, Side side) : ctx_(ctx), side_(side) {}
  SSL_CTX* const ctx_;
  const Side side_;
};

// What the kernel offers ("kernel TLS available" or why not), for a start-up line.
std::string KernelTlsStatus();

class TlsStream : public ByteStream {
 public:
  // A TLS session over the connected non-blocking socket `fd` (not owned). A client names the host
  // it dialled: the peer's certificate must be for it (a DNS name or an IP address).
  static absl::StatusOr<std::unique_ptr<TlsStream>> Create(std::shared_ptr<const TlsContext> context, int fd,
                                                           const std::string& peer_host = "");
  ~TlsStream() override;

  // Advances the handshake. OK once done; with `*want` set when it waits for the socket;
  // Unauthenticated naming the reason when a certificate is refused (either side's); Unavailable
  // when the connection fails.
  absl::Status Handshake(Want* want);
  // The peer certificate's common name, its task ("worker:0"). REQUIRES: the handshake is done.
  std::string PeerIdentity() const;
  // Whether the kernel encrypts this connection's sends.
  bool kernel_send() const;

  IoResult Read(char* dst, size_t n) override;
  IoResult Write(const iovec* parts, size_t count) override;
  bool HasBufferedInput() const override;
  int fd() const override { return fd_; }

 private:
  TlsStream(std::shared_ptr<const TlsContext> context, SSL* ssl, int fd);
  // The IoResult of an SSL call that returned `rc` <= 0.
  IoResult Failed(int rc, const char* what);

  const std::shared_ptr<const TlsContext> context_;
  SSL* const ssl_;
  const int fd_;
  bool kernel_send_ = false;
  // On OpenSSL's socket BIO (kernel TLS possible), whose write(2) raises SIGPIPE: every SSL call
  // blocks it in this thread meanwhile.
  bool block_sigpipe_ = false;

 public:
  // What the no-SIGPIPE BIO (tls_stream.cc) writes to: the socket, and whether more records of the
  // same write follow (sent with MSG_MORE, so the kernel sends full segments and wakes the peer
  // once per burst rather than once per 16 KiB record).
  struct BioSocket {
    int fd = -1;
    bool more = false;
  };

 private:
  BioSocket socket_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_TLS_STREAM_H_
