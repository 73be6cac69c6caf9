#include "common/security/x509_util.h"

#include <openssl/err.h>
#include <openssl/pem.h>

#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

struct BioDeleter {
  void operator()(BIO* p) const { BIO_free(p); }
};

std::unique_ptr<BIO, BioDeleter> MemoryBio(absl::string_view pem) {
  return std::unique_ptr<BIO, BioDeleter>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

}  // namespace

absl::StatusOr<X509Ptr> ParseCertificate(absl::string_view pem, absl::string_view what) {
  auto bio = MemoryBio(pem);
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(what, " holds no PEM certificate (", OpenSslErrors(), ")"));
  }
  return cert;
}

absl::StatusOr<PkeyPtr> ParsePrivateKey(absl::string_view pem, absl::string_view what) {
  auto bio = MemoryBio(pem);
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(what, " holds no PEM private key (", OpenSslErrors(), ")"));
  }
  return key;
}

std::string CommonName(const X509* cert) {
  const X509_NAME* name = X509_get_subject_name(cert);
  const int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (i < 0) return "";
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                     static_cast<size_t>(ASN1_STRING_length(data)));
}

std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    absl::StrAppend(&out, out.empty() ? "" : "; ", buf);
  }
  return out.empty() ? "no details" : out;
}

}  // namespace pstrain
