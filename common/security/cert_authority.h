// Makes a cluster's TLS material (what `pstrain certs` writes): a CA of its own, and for each task
// a certificate whose common name is the task ("ps:0") and whose subject alternative names are the
// hosts peers dial it by, usable as both TLS server and client. EC P-256 keys, SHA-256 signatures.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_SECURITY_CERT_AUTHORITY_H_
#define PSTRAIN_COMMON_SECURITY_CERT_AUTHORITY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pstrain {

struct CertAndKey {
  std::string cert_pem, key_pem;
};

// A self-signed CA named `name`, valid for `days` from now. Internal when OpenSSL fails.
absl::StatusOr<CertAndKey> MakeCertificateAuthority(const std::string& name, int days);

// A certificate for `common_name` signed by `ca`, valid for `days`, naming `hosts` (DNS names or
// IPv4/IPv6 addresses) as subject alternative names. InvalidArgument for an unusable CA.
absl::StatusOr<CertAndKey> IssueCertificate(const CertAndKey& ca, const std::string& common_name,
                                            const std::vector<std::string>& hosts, int days);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_SECURITY_CERT_AUTHORITY_H_
