#include "common/security/tls_config.h"

#include <sys/stat.h>

#include <openssl/x509_vfy.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/platform/env.h"
#include "common/platform/file_rules.h"
#include "common/platform/status_macros.h"
#include "common/security/x509_util.h"

namespace pstrain {
namespace {

struct StoreDeleter {
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
};
struct StoreCtxDeleter {
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
};

constexpr char kHowToMake[] = "make the cluster's files with: pstrain certs --out DIR --cluster TF_CONFIG_FILE";

absl::StatusOr<std::string> ReadPem(Env* env, const std::string& path, const char* what) {
  absl::StatusOr<std::string> pem = env->ReadFile(path);  // file_rules.h: a regular file, symlinks followed
  if (pem.ok() && static_cast<int64_t>(pem->size()) > kTlsFile.max_bytes) {
    pem = absl::OutOfRangeError(absl::StrCat("it holds more than ", kTlsFile.max_bytes, " bytes, the most a ",
                                             kTlsFile.kind, " may hold"));
  }
  if (!pem.ok()) {
    return absl::Status(pem.status().code(), absl::StrCat("cannot read the TLS ", what, " ", path, ": ",
                                                          pem.status().message(), " (", kHowToMake, ")"));
  }
  return pem;
}

// OK when `cert` is signed by `ca` and valid now.
absl::Status VerifyAgainstCa(X509* cert, X509* ca, const std::string& cert_path, const std::string& ca_path) {
  std::unique_ptr<X509_STORE, StoreDeleter> store(X509_STORE_new());
  std::unique_ptr<X509_STORE_CTX, StoreCtxDeleter> ctx(X509_STORE_CTX_new());
  if (store == nullptr || ctx == nullptr || X509_STORE_add_cert(store.get(), ca) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert, nullptr) != 1) {
    return absl::InternalError(absl::StrCat("cannot check ", cert_path, ": ", OpenSslErrors()));
  }
  if (X509_verify_cert(ctx.get()) == 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the certificate ", cert_path, " does not verify against the CA ",
                                                 ca_path, ": ",
                                                 X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())),
                                                 " (the files must come from one run of pstrain certs)"));
}

}  // namespace

TlsFiles TlsFilesWithEnvironment(TlsFiles flags, const std::function<const char*(const char*)>& getenv) {
  auto fill = [&getenv](std::string* field, const char* name) {
    if (!field->empty()) return;
    if (const char* v = getenv(name)) *field = v;
  };
  fill(&flags.dir, "PSTRAIN_TLS_DIR");
  fill(&flags.ca, "PSTRAIN_TLS_CA");
  fill(&flags.cert, "PSTRAIN_TLS_CERT");
  fill(&flags.key, "PSTRAIN_TLS_KEY");
  return flags;
}

std::string TaskCertFileName(const std::string& task) { return absl::StrReplaceAll(task, {{":", "-"}}) + ".crt"; }
std::string TaskKeyFileName(const std::string& task) { return absl::StrReplaceAll(task, {{":", "-"}}) + ".key"; }

absl::StatusOr<TlsConfig> LoadTlsConfig(Env* env, const TlsFiles& files, const std::string& task) {
  TlsConfig config;
  if (files.empty()) return config;
  std::string ca = files.ca, cert = files.cert, key = files.key;
  if (!files.dir.empty()) {
    if (ca.empty()) ca = files.dir + "/ca.crt";
    if (task.empty() && (cert.empty() || key.empty())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "with --tls_dir=", files.dir, " alone this command does not know which task's certificate to present; ",
          "name it with --tls_cert and --tls_key"));
    }
    if (cert.empty()) cert = files.dir + "/" + TaskCertFileName(task);
    if (key.empty()) key = files.dir + "/" + TaskKeyFileName(task);
  }
  if (ca.empty() || cert.empty() || key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS needs a CA, a certificate and a key: give --tls_dir, or all three of --tls_ca, ",
                     "--tls_cert and --tls_key (",
                     ca.empty()     ? "the CA"
                     : cert.empty() ? "the certificate"
                                    : "the key",
                     " is missing)"));
  }
  ASSIGN_OR_RETURN(config.ca_pem, ReadPem(env, ca, "CA"));
  ASSIGN_OR_RETURN(config.cert_pem, ReadPem(env, cert, "certificate"));
  ASSIGN_OR_RETURN(config.key_pem, ReadPem(env, key, "key"));
  ASSIGN_OR_RETURN(X509Ptr ca_cert, ParseCertificate(config.ca_pem, ca));
  ASSIGN_OR_RETURN(X509Ptr own, ParseCertificate(config.cert_pem, cert));
  ASSIGN_OR_RETURN(PkeyPtr own_key, ParsePrivateKey(config.key_pem, key));
  if (X509_check_private_key(own.get(), own_key.get()) != 1) {
    OpenSslErrors();  // clears the queue
    return absl::InvalidArgumentError(absl::StrCat("the key ", key, " does not belong to the certificate ", cert));
  }
  RETURN_IF_ERROR(VerifyAgainstCa(own.get(), ca_cert.get(), cert, ca));
  config.identity = CommonName(own.get());
  if (!task.empty() && config.identity != task) {
    return absl::InvalidArgumentError(absl::StrCat("the certificate ", cert, " is for ",
                                                   config.identity.empty() ? "no task" : config.identity,
                                                   ", but this task is ", task, "; give this task its own"));
  }
  config.cert_path = cert;
  config.enabled = true;
  // Warnings, not errors: a task still runs, but its operator learns what a reader of its files
  // could do.
  if (!files.dir.empty() && env->FileExists(files.dir + "/ca.key")) {
    config.warnings.push_back(absl::StrCat(
        "the TLS directory ", files.dir, " holds ca.key, the cluster CA's private key: whoever reads it can make "
        "certificates for any task; keep it off the cluster (a task needs only ca.crt and its own certificate and key)"));
  }
  struct stat st;
  if (::stat(key.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    config.warnings.push_back(absl::StrCat("the private key ", key, " may be read by other users (mode ",
                                           absl::StrFormat("%04o", st.st_mode & 0777), "); chmod 600 it"));
  }
  return config;
}

std::string DescribeTls(const TlsConfig& config) {
  if (!config.enabled) {
    return "WARNING: plaintext: no TLS configured (--tls_dir or PSTRAIN_TLS_DIR), so anyone who can reach this "
           "task's port can read and change the model and stop the job; use it only on a trusted network";
  }
  std::string line = absl::StrCat("mutual TLS as ", config.identity, " (", config.cert_path, ")");
  for (const std::string& warning : config.warnings) absl::StrAppend(&line, "; WARNING: ", warning);
  return line;
}

}  // namespace pstrain
