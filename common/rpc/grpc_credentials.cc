#include "common/rpc/grpc_credentials.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/rpc/grpc_status.h"
#include "common/security/call_policy.h"
#include "grpcpp/security/auth_metadata_processor.h"

namespace pstrain {
namespace {

// Runs the call policy on every call of a TLS server: the method comes from the call's ":path",
// the caller from the verified client certificate's common name.
class PolicyProcessor : public grpc::AuthMetadataProcessor {
 public:
  explicit PolicyProcessor(SecurityLog log) : log_(std::move(log)) {}

  bool IsBlocking() const override { return false; }  // a table lookup: run it inline

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context, OutputMetadata* consumed,
                       OutputMetadata* response) override {
    auto path = metadata.find(":path");
    const std::string method = path == metadata.end() ? "" : std::string(path->second.data(), path->second.size());
    std::string caller;
    for (const grpc::string_ref& cn : context->FindPropertyValues("x509_common_name")) {
      caller.assign(cn.data(), cn.size());
    }
    absl::Status s = AuthorizeCall(caller, method);
    if (!s.ok()) {
      const std::string line =
          absl::StrCat("refused ", MethodName(method), " from ",
                       caller.empty() ? "a caller without a task certificate" : caller, ": ", s.message());
      if (log_) {
        log_(line);
      } else {
        std::cerr << line << std::endl;
      }
    }
    return ToGrpcStatus(s);
  }

 private:
  const SecurityLog log_;
};

}  // namespace

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsConfig& tls, SecurityLog log) {
  if (!tls.enabled) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls.ca_pem;
  options.pem_key_cert_pairs.push_back({tls.key_pem, tls.cert_pem});
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::SslServerCredentials(options);
  creds->SetAuthMetadataProcessor(std::make_shared<PolicyProcessor>(std::move(log)));
  return creds;
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsConfig& tls) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.ca_pem;
  options.pem_private_key = tls.key_pem;
  options.pem_cert_chain = tls.cert_pem;
  return grpc::SslCredentials(options);
}

}  // namespace pstrain
