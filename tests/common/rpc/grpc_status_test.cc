#include "common/rpc/grpc_status.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

// gRPC 1.51's own messages (OpenSSL 3) for the two halves of a TLS mismatch.
TEST(GrpcStatusTest, ATlsClientMeetingAPlaintextServerIsToldSo) {
  const grpc::Status s(grpc::StatusCode::UNKNOWN,
                       "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:2222: Ssl handshake "
                       "failed: SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong version number");
  const absl::Status status = FromGrpcStatus(s, "ps:0 at 127.0.0.1:2222");
  EXPECT_THAT(status.message(), HasSubstr("ps:0 at 127.0.0.1:2222: failed to connect"));
  EXPECT_THAT(status.message(), HasSubstr("TLS mismatch: this task uses TLS and the peer does not"));
  EXPECT_THAT(status.message(), HasSubstr("--tls_dir"));
}

TEST(GrpcStatusTest, APlaintextClientMeetingATlsServerIsToldTheFlag) {
  const grpc::Status s(grpc::StatusCode::UNAVAILABLE,
                       "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:2222: Socket closed");
  const absl::Status status = FromGrpcStatus(s, "ps:0");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("if it uses TLS (--tls_dir) and this task does not"));
}

TEST(GrpcStatusTest, OtherFailuresGetNoTlsHint) {
  EXPECT_EQ(TlsMismatchHint("failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:2222: "
                            "Connection refused"),
            "");
  EXPECT_EQ(TlsMismatchHint("Deadline Exceeded"), "");
  // A certificate the peer rejects is a TLS failure on both sides, not a mismatch.
  EXPECT_EQ(TlsMismatchHint("Ssl handshake failed: SSL_ERROR_SSL: error:0A000086:SSL routines::certificate verify "
                            "failed"),
            "");
}

}  // namespace
}  // namespace pstrain
