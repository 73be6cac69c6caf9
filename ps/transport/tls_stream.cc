#include "ps/transport/tls_stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "common/security/x509_util.h"

namespace pstrain {
namespace {

absl::Status ContextError(const char* what) {
  return absl::InvalidArgumentError(absl::StrCat("tensor channel TLS: cannot ", what, ": ", OpenSslErrors()));
}

// OpenSSL writes to its socket with write(2), which raises SIGPIPE when the peer is gone; a
// library must not kill its process for that. While one of these lives, SIGPIPE is blocked in
// this thread, and one it raised is taken off the thread's pending set before it is unblocked
// (the write itself fails with EPIPE, which the caller sees).
class NoSigpipe {
 public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec none{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &none) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};

// What one recv may take in (a few 16 KiB records); under glibc's mmap threshold, so a buffer
// released between bursts comes back from the heap.
constexpr size_t kReadAheadBytes = 96 << 10;

// Whether the kernel has TLS offload ("tls" in /proc/sys/net/ipv4/tcp_available_ulp).
bool KernelTlsAvailable(std::string* ulps = nullptr) {
  std::ifstream in("/proc/sys/net/ipv4/tcp_available_ulp");
  std::string line;
  std::getline(in, line);
  if (ulps != nullptr) *ulps = line.empty() ? "unreadable" : line;
  std::istringstream words(line);
  for (std::string w; words >> w;) {
    if (w == "tls") return true;
  }
  return false;
}

// A BIO over a non-blocking socket that sends with MSG_NOSIGNAL: a peer gone away is EPIPE for the
// caller, never SIGPIPE for the process, without two signal-mask syscalls around every record.
// Used when the kernel has no TLS offload (which needs OpenSSL's own socket BIO).
int NoSignalWrite(BIO* bio, const char* data, int n) {
  const auto* socket = static_cast<const TlsStream::BioSocket*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  for (;;) {
    const ssize_t sent =
        ::send(socket->fd, data, static_cast<size_t>(n), MSG_NOSIGNAL | (socket->more ? MSG_MORE : 0));
    if (sent >= 0) return static_cast<int>(sent);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(bio);
    return -1;
  }
}

int NoSignalRead(BIO* bio, char* out, int n) {
  const auto* socket = static_cast<const TlsStream::BioSocket*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  for (;;) {
    const ssize_t got = ::recv(socket->fd, out, static_cast<size_t>(n), 0);
    if (got >= 0) return static_cast<int>(got);  // 0: the peer closed (errno left as it was)
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(bio);
    return -1;
  }
}

long NoSignalCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int NoSignalCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

// The method, made once (thread-safe static initialisation) and kept for the process.
const BIO_METHOD* NoSignalSocketMethod() {
  static const BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "pstrain no-SIGPIPE socket");
    if (m == nullptr || BIO_meth_set_write(m, NoSignalWrite) != 1 || BIO_meth_set_read(m, NoSignalRead) != 1 ||
        BIO_meth_set_ctrl(m, NoSignalCtrl) != 1 || BIO_meth_set_create(m, NoSignalCreate) != 1) {
      BIO_meth_free(m);
      return static_cast<BIO_METHOD*>(nullptr);
    }
    return m;
  }();
  return method;
}

bool IsIpAddress(const std::string& host) {
  unsigned char addr[16];
  return inet_pton(AF_INET, host.c_str(), addr) == 1 || inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const TlsContext>> TlsContext::Create(const TlsConfig& config, Side side) {
  SSL_CTX* ctx = SSL_CTX_new(side == Side::kClient ? TLS_client_method() : TLS_server_method());
  if (ctx == nullptr) return ContextError("create a context");
  std::shared_ptr<const TlsContext> out(new TlsContext(ctx, side));
  ASSIGN_OR_RETURN(X509Ptr ca, ParseCertificate(config.ca_pem, "the CA"));
  ASSIGN_OR_RETURN(X509Ptr cert, ParseCertificate(config.cert_pem, config.cert_path));
  ASSIGN_OR_RETURN(PkeyPtr key, ParsePrivateKey(config.key_pem, "the key of " + config.cert_path));
  // TLS 1.3 only (both ends are pstrain), AES-128-GCM first: the cheapest with AES instructions, and
  // one the kernel can take over. No session tickets: connections are pooled, never resumed.
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256") !=
          1 ||
      SSL_CTX_set_num_tickets(ctx, 0) != 1) {
    return ContextError("set the protocol version and ciphers");
  }
  SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS | SSL_OP_NO_RENEGOTIATION);
  // Idle connections hold no record buffers (a ps holds thousands of connections).
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  // Read ahead: one recv takes in several records, not a header and then a body per record.
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_read_buffer_len(ctx, kReadAheadBytes);
  if (X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca.get()) != 1) return ContextError("trust the cluster CA");
  if (SSL_CTX_use_certificate(ctx, cert.get()) != 1 || SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    return ContextError("use the task's certificate and key");
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

std::string KernelTlsStatus() {
  std::string ulps;
  if (KernelTlsAvailable(&ulps)) return "kernel TLS available: sends go from the tensors to the socket in one copy";
  return absl::StrCat("no kernel TLS (tcp_available_ulp: ", ulps,
                      "; load the tls module to enable it): OpenSSL encrypts in user space");
}

absl::StatusOr<std::unique_ptr<TlsStream>> TlsStream::Create(std::shared_ptr<const TlsContext> context, int fd,
                                                             const std::string& peer_host) {
  SSL* ssl = SSL_new(context->get());
  // The kernel can take over only a session on OpenSSL's socket BIO; without it, sends go through
  // the BIO above, and no call needs SIGPIPE blocked.
  static const bool kernel_tls = KernelTlsAvailable();
  if (ssl == nullptr) {
    return absl::InternalError(absl::StrCat("tensor channel TLS: cannot start a session: ", OpenSslErrors()));
  }
  std::unique_ptr<TlsStream> stream(new TlsStream(std::move(context), ssl, fd));  // frees `ssl`
  stream->socket_.fd = fd;
  BIO* bio = nullptr;
  if (!kernel_tls && NoSignalSocketMethod() != nullptr) {
    bio = BIO_new(NoSignalSocketMethod());
    if (bio != nullptr) {
      BIO_set_data(bio, &stream->socket_);
      SSL_set_bio(ssl, bio, bio);  // owned by the session
    }
  }
  if (bio == nullptr && SSL_set_fd(ssl, fd) != 1) {
    return absl::InternalError(absl::StrCat("tensor channel TLS: cannot start a session: ", OpenSslErrors()));
  }
  stream->block_sigpipe_ = bio == nullptr;
  if (stream->context_->side() == TlsContext::Side::kClient) {
    SSL_set_connect_state(ssl);
    const bool named = IsIpAddress(peer_host)
                           ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), peer_host.c_str())
                           : SSL_set1_host(ssl, peer_host.c_str()) && SSL_set_tlsext_host_name(ssl, peer_host.c_str());
    if (peer_host.empty() || !named) {
      return absl::InvalidArgumentError(absl::StrCat("tensor channel TLS: cannot check the ps's certificate for \"",
                                                     peer_host, "\": ", OpenSslErrors()));
    }
  } else {
    SSL_set_accept_state(ssl);
  }
  return stream;
}

TlsStream::TlsStream(std::shared_ptr<const TlsContext> context, SSL* ssl, int fd)
    : context_(std::move(context)), ssl_(ssl), fd_(fd) {}

TlsStream::~TlsStream() { SSL_free(ssl_); }

absl::Status TlsStream::Handshake(Want* want) {
  *want = Want::kNothing;
  ERR_clear_error();
  std::optional<NoSigpipe> no_sigpipe;
  if (block_sigpipe_) no_sigpipe.emplace();
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    kernel_send_ = BIO_get_ktls_send(SSL_get_wbio(ssl_));
    return absl::OkStatus();
  }
  const int err = SSL_get_error(ssl_, rc);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    *want = err == SSL_ERROR_WANT_READ ? Want::kRead : Want::kWrite;
    return absl::OkStatus();
  }
  const long verify = SSL_get_verify_result(ssl_);
  const std::string why = verify != X509_V_OK ? X509_verify_cert_error_string(verify) : OpenSslErrors();
  if (err == SSL_ERROR_SYSCALL && verify == X509_V_OK) {
    return absl::UnavailableError(absl::StrCat("tensor channel TLS handshake failed: the connection closed (",
                                               errno != 0 ? std::strerror(errno) : "no TLS on the other end?", ")"));
  }
  return absl::UnauthenticatedError(absl::StrCat(
      "tensor channel TLS handshake failed: ", why,
      " (both ends need certificates of the same cluster CA: pstrain certs, then --tls_dir on every task)"));
}

std::string TlsStream::PeerIdentity() const {
  X509* peer = SSL_get0_peer_certificate(ssl_);
  return peer == nullptr ? "" : CommonName(peer);
}

bool TlsStream::kernel_send() const { return kernel_send_; }

// Decoded bytes, or (read ahead) received bytes of records not decoded yet.
bool TlsStream::HasBufferedInput() const { return SSL_has_pending(ssl_) == 1; }

IoResult TlsStream::Failed(int rc, const char* what) {
  IoResult r;
  const int err = SSL_get_error(ssl_, rc);
  if (err == SSL_ERROR_WANT_READ) {
    r.want = Want::kRead;
  } else if (err == SSL_ERROR_WANT_WRITE) {
    r.want = Want::kWrite;
  } else if (err == SSL_ERROR_ZERO_RETURN) {
    r.eof = true;
  } else if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
    // The peer closed the socket without a TLS close_notify (as every pstrain end does) or it failed.
    if (errno == 0 || errno == ECONNRESET || errno == EPIPE) {
      r.eof = errno == 0;
      if (!r.eof) r.error = SocketError(what, errno);
    } else {
      r.error = SocketError(what, errno);
    }
  } else {
    r.error = absl::UnavailableError(absl::StrCat("tensor channel TLS failed while ", what, ": ", OpenSslErrors()));
  }
  return r;
}

IoResult TlsStream::Read(char* dst, size_t n) {
  ERR_clear_error();
  errno = 0;
  size_t got = 0;
  std::optional<NoSigpipe> no_sigpipe;  // a read may write too: an alert for a peer that sent garbage, or a key update
  if (block_sigpipe_) no_sigpipe.emplace();
  const int rc = SSL_read_ex(ssl_, dst, n, &got);
  if (rc == 1) {
    IoResult r;
    r.bytes = got;
    return r;
  }
  return Failed(rc, "receiving");
}

IoResult TlsStream::Write(const iovec* parts, size_t count) {
  if (kernel_send_) {
    // The kernel frames and encrypts: the parts go to the socket as they are, as over plain TCP.
    PlainStream plain(fd_);
    return plain.Write(parts, count);
  }
  IoResult r;
  std::optional<NoSigpipe> no_sigpipe;
  if (block_sigpipe_) no_sigpipe.emplace();
  for (size_t i = 0; i < count; ++i) {
    ERR_clear_error();
    errno = 0;
    size_t sent = 0;
    // One record per call (partial writes): more follow unless this is the last of the last part.
    socket_.more = parts[i].iov_len > SSL3_RT_MAX_PLAIN_LENGTH || i + 1 < count;
    const int rc = SSL_write_ex(ssl_, parts[i].iov_base, parts[i].iov_len, &sent);
    socket_.more = false;
    if (rc != 1) {
      if (r.bytes > 0) return r;  // report what went; the next call meets the wait again
      return Failed(rc, "sending");
    }
    r.bytes += sent;
    if (sent < parts[i].iov_len) return r;
  }
  return r;
}

}  // namespace pstrain
