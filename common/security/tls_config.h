// A task's TLS material: the cluster CA, its own certificate and key, read from the files given on
// its command line or in the environment (PSTRAIN_TLS_DIR or PSTRAIN_TLS_CA/_CERT/_KEY), as
// `pstrain certs` writes them. With TLS every connection is mutually authenticated: each side
// proves it holds a certificate of the cluster CA, whose common name ("worker:0") is the task it
// speaks for (common/security/call_policy.h says what that task may call).
// Thread-safety: values; the functions are pure (they read files).
#ifndef PSTRAIN_COMMON_SECURITY_TLS_CONFIG_H_
#define PSTRAIN_COMMON_SECURITY_TLS_CONFIG_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pstrain {

class Env;

// Where the files are. `dir` holds ca.crt and one <type>-<index>.crt / .key pair per task; the
// explicit paths override the files of `dir`.
struct TlsFiles {
  std::string dir, ca, cert, key;
  bool empty() const { return dir.empty() && ca.empty() && cert.empty() && key.empty(); }
};

// `flags` with each empty field taken from the environment: PSTRAIN_TLS_DIR, PSTRAIN_TLS_CA,
// PSTRAIN_TLS_CERT, PSTRAIN_TLS_KEY, looked up with `getenv` (main passes std::getenv).
TlsFiles TlsFilesWithEnvironment(TlsFiles flags, const std::function<const char*(const char*)>& getenv);

struct TlsConfig {
  bool enabled = false;  // false: plaintext
  std::string ca_pem, cert_pem, key_pem;
  std::string identity;   // the certificate's common name: the task, e.g. "worker:0"
  std::string cert_path;  // for messages
  // Key material where it should not be (DescribeTls prints them): the CA's key in the task's TLS
  // directory, or a private key that other users may read.
  std::vector<std::string> warnings;
};

// The file names `pstrain certs` gives task `task` ("worker:0" -> "worker-0.crt").
std::string TaskCertFileName(const std::string& task);
std::string TaskKeyFileName(const std::string& task);

// Reads and checks the material for `task` ("ps:1"; the files of `dir` are picked by it): the key
// must match the certificate, the certificate must be signed by the CA and name `task` (a tool
// such as `pstrain health` passes "" to accept any task's). Empty `files`: TLS off (enabled
// false). InvalidArgument naming the file and the fix for a partial set, a mismatch, a foreign or
// expired certificate; NotFound for a missing file. `env` (not owned) reads the files.
absl::StatusOr<TlsConfig> LoadTlsConfig(Env* env, const TlsFiles& files, const std::string& task);

// The line a task prints at start-up: what protects its connections, and a warning for plaintext
// or for each of config.warnings.
std::string DescribeTls(const TlsConfig& config);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_SECURITY_TLS_CONFIG_H_
