// Small OpenSSL helpers shared by the TLS configuration, the certificate tool and the tensor
// channel's TLS: owning pointers for OpenSSL objects, PEM parsing, a certificate's common name,
// and OpenSSL's error queue as text.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_SECURITY_X509_UTIL_H_
#define PSTRAIN_COMMON_SECURITY_X509_UTIL_H_

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pstrain {

struct X509Deleter {
  void operator()(X509* p) const { X509_free(p); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

// The first certificate / private key in `pem`. InvalidArgument naming `what` when none parses.
absl::StatusOr<X509Ptr> ParseCertificate(absl::string_view pem, absl::string_view what);
absl::StatusOr<PkeyPtr> ParsePrivateKey(absl::string_view pem, absl::string_view what);

// The subject's common name ("" when it has none).
std::string CommonName(const X509* cert);

// OpenSSL's queued errors, joined, and the queue cleared ("no details" when empty).
std::string OpenSslErrors();

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_SECURITY_X509_UTIL_H_
