#include "common/security/cert_authority.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/platform/status_macros.h"
#include "common/security/x509_util.h"

namespace pstrain {
namespace {

absl::Status OpenSslFailure(const char* what) {
  return absl::InternalError(absl::StrCat("cannot ", what, ": ", OpenSslErrors()));
}

absl::StatusOr<PkeyPtr> NewKey() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (key == nullptr) return OpenSslFailure("generate an EC P-256 key");
  return key;
}

// What `write` (a PEM_write_bio_* call) writes, as a string.
template <typename Write>
absl::StatusOr<std::string> ToPem(Write write, const char* what) {
  BIO* bio = BIO_new(BIO_s_mem());
  std::string out;
  if (bio != nullptr && write(bio) == 1) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    out.assign(data, static_cast<size_t>(n));
  }
  BIO_free(bio);
  if (out.empty()) return OpenSslFailure(what);
  return out;
}

absl::StatusOr<CertAndKey> ToPems(X509* cert, EVP_PKEY* key) {
  CertAndKey out;
  ASSIGN_OR_RETURN(out.cert_pem, ToPem([cert](BIO* b) { return PEM_write_bio_X509(b, cert); }, "write a certificate"));
  ASSIGN_OR_RETURN(
      out.key_pem,
      ToPem([key](BIO* b) { return PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr); },
            "write a private key"));
  return out;
}

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return OpenSslFailure(absl::StrCat("make the extension ", value).c_str());
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok == 1 ? absl::OkStatus() : OpenSslFailure("add an extension");
}

// A certificate for `key` named `common_name`, valid `days` from now, with a random serial.
absl::StatusOr<X509Ptr> NewCertificate(EVP_PKEY* key, const std::string& common_name, int days) {
  X509Ptr cert(X509_new());
  unsigned char serial[16];
  if (cert == nullptr || RAND_bytes(serial, sizeof(serial)) != 1) return OpenSslFailure("make a certificate");
  serial[0] &= 0x7f;  // a positive serial
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  const bool ok =
      bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get())) != nullptr &&
      X509_set_version(cert.get(), 2) == 1 && X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) &&
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), int64_t{days} * 86400) && X509_set_pubkey(cert.get(), key) == 1 &&
      X509_NAME_add_entry_by_NID(X509_get_subject_name(cert.get()), NID_commonName, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0) == 1;
  BN_free(bn);
  if (!ok) return OpenSslFailure("fill a certificate");
  return cert;
}

std::string SubjectAltNames(const std::vector<std::string>& hosts) {
  std::vector<std::string> names;
  for (const std::string& h : hosts) {
    unsigned char addr[16];
    const bool ip = inet_pton(AF_INET, h.c_str(), addr) == 1 || inet_pton(AF_INET6, h.c_str(), addr) == 1;
    names.push_back(absl::StrCat(ip ? "IP:" : "DNS:", h));
  }
  return absl::StrJoin(names, ",");
}

}  // namespace

absl::StatusOr<CertAndKey> MakeCertificateAuthority(const std::string& name, int days) {
  ASSIGN_OR_RETURN(PkeyPtr key, NewKey());
  ASSIGN_OR_RETURN(X509Ptr cert, NewCertificate(key.get(), name, days));
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) != 1) return OpenSslFailure("name the CA");
  RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) return OpenSslFailure("sign the CA");
  return ToPems(cert.get(), key.get());
}

absl::StatusOr<CertAndKey> IssueCertificate(const CertAndKey& ca, const std::string& common_name,
                                            const std::vector<std::string>& hosts, int days) {
  ASSIGN_OR_RETURN(X509Ptr ca_cert, ParseCertificate(ca.cert_pem, "the CA certificate"));
  ASSIGN_OR_RETURN(PkeyPtr ca_key, ParsePrivateKey(ca.key_pem, "the CA key"));
  ASSIGN_OR_RETURN(PkeyPtr key, NewKey());
  ASSIGN_OR_RETURN(X509Ptr cert, NewCertificate(key.get(), common_name, days));
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get())) != 1) {
    return OpenSslFailure("name the issuer");
  }
  RETURN_IF_ERROR(AddExtension(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
  RETURN_IF_ERROR(AddExtension(cert.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature"));
  RETURN_IF_ERROR(AddExtension(cert.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth,clientAuth"));
  RETURN_IF_ERROR(AddExtension(cert.get(), ca_cert.get(), NID_authority_key_identifier, "keyid"));
  if (!hosts.empty()) {
    RETURN_IF_ERROR(AddExtension(cert.get(), ca_cert.get(), NID_subject_alt_name, SubjectAltNames(hosts)));
  }
  if (X509_sign(cert.get(), ca_key.get(), EVP_sha256()) <= 0) return OpenSslFailure("sign a certificate");
  return ToPems(cert.get(), key.get());
}

}  // namespace pstrain
