// A cluster CA and task certificates made in memory for tests (as `pstrain certs` makes them on
// disk), for 127.0.0.1 and localhost, and a second CA to stand for a stranger's.
// Thread-safety: build before sharing; then read-only.
#ifndef PSTRAIN_TESTS_TEST_UTIL_TEST_CERTS_H_
#define PSTRAIN_TESTS_TEST_UTIL_TEST_CERTS_H_

#include <string>

#include "common/security/cert_authority.h"
#include "common/security/tls_config.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace testing_util {

class TestCa {
 public:
  explicit TestCa(const std::string& name = "test cluster CA") {
    auto ca = MakeCertificateAuthority(name, 2);
    EXPECT_TRUE(ca.ok()) << ca.status();
    if (ca.ok()) ca_ = *ca;
  }

  // TLS material for task `task` ("worker:0"), its certificate signed by this CA.
  TlsConfig For(const std::string& task) const {
    TlsConfig c;
    auto issued = IssueCertificate(ca_, task, {"127.0.0.1", "localhost", "::1"}, 2);
    EXPECT_TRUE(issued.ok()) << issued.status();
    if (!issued.ok()) return c;
    c.enabled = true;
    c.ca_pem = ca_.cert_pem;
    c.cert_pem = issued->cert_pem;
    c.key_pem = issued->key_pem;
    c.identity = task;
    c.cert_path = task + " (test)";
    return c;
  }

  const CertAndKey& ca() const { return ca_; }

 private:
  CertAndKey ca_;
};

}  // namespace testing_util
}  // namespace pstrain

#endif  // PSTRAIN_TESTS_TEST_UTIL_TEST_CERTS_H_
