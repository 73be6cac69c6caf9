// The tensor channel's TLS against a real PsGrpcServer on 127.0.0.1: both ends must agree to use
// it, each must present a certificate of the cluster CA, the ps's must be a ps task's, and a hello
// cannot speak for another task than its certificate's.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/server/ps_grpc_server.h"
#include "ps/transport/tensor_channel_client.h"
#include "tests/ps/ps_test_util.h"
#include "tests/test_util/test_certs.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using testing_util::OnePull;
using testing_util::TestCa;

class ChannelTlsTest : public ::testing::Test {
 protected:
  // A ps presenting `tls` (disabled: plaintext).
  void Start(const TlsConfig& tls) {
    PsGrpcServer::Options options;
    options.tls = tls;
    options.log = [](const std::string&) {};
    auto server = PsGrpcServer::Start(&ps_, "127.0.0.1:0", options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  absl::Status Pull(const TlsConfig& tls, const std::string& caller) {
    TransportConfig config;
    config.tls = tls;
    config.caller = caller;
    TensorChannelClient client("127.0.0.1:" + std::to_string(server_->port()), "ps:0", config);
    PullResponse pulled;
    return client.Pull(OnePull("w"), &pulled, absl::Seconds(30));
  }

  TestCa ca_;
  PsServer ps_{PsServer::Options{"ps:0"}};
  std::unique_ptr<PsGrpcServer> server_;
};

TEST_F(ChannelTlsTest, BothEndsMustUseTls) {
  Start(ca_.For("ps:0"));
  absl::Status s = Pull(TlsConfig(), "worker:0");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("serves the tensor channel over TLS only"));
  server_.reset();
  Start(TlsConfig());
  s = Pull(ca_.For("worker:0"), "worker:0");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("serves the tensor channel in plaintext"));
}

TEST_F(ChannelTlsTest, CertificatesMustComeFromTheClusterCa) {
  Start(ca_.For("ps:0"));
  EXPECT_EQ(Pull(ca_.For("worker:0"), "worker:0").code(), absl::StatusCode::kNotFound);  // served: no shard w
  TestCa stranger("another CA");
  absl::Status s = Pull(stranger.For("worker:0"), "worker:0");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("TLS handshake failed"));
}

TEST_F(ChannelTlsTest, TheServerMustBeAPsTask) {
  Start(ca_.For("worker:5"));  // a worker's certificate where a ps is expected
  absl::Status s = Pull(ca_.For("worker:0"), "worker:0");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("presents the certificate of worker:5, not of a ps task"));
}

TEST_F(ChannelTlsTest, AHelloCannotSpeakForAnotherTask) {
  Start(ca_.For("ps:0"));
  absl::Status s = Pull(ca_.For("worker:0"), "chief:0");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("names chief:0 but the certificate is worker:0"));
}

}  // namespace
}  // namespace pstrain
