// Loopback helpers for tests that start real servers: a free port on 127.0.0.1 and a check that
// something accepts connections there.
// Thread-safety: FreeLoopbackPort serializes on its own mutex; the rest keep no state.
#ifndef PSTRAIN_TESTS_TEST_UTIL_LOOPBACK_H_
#define PSTRAIN_TESTS_TEST_UTIL_LOOPBACK_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "absl/synchronization/mutex.h"

namespace pstrain {
namespace testing_util {

// A port the kernel reports free on 127.0.0.1 (closed again before returning) and not handed out
// to another test process still running: ctest runs tests in parallel, and two processes asking
// the kernel at once may be told the same port. Each port given out is claimed by a lock on its
// byte of one file in the temp dir, held until this process exits.
inline int FreeLoopbackPort() {
  static absl::Mutex mu(absl::kConstInit);
  static std::set<int> mine;  // under mu; fcntl locks do not exclude the process that holds them
  static const int lock_fd = [] {
    const char* tmp = std::getenv("TMPDIR");
    const std::string path = std::string(tmp != nullptr && *tmp != 0 ? tmp : "/tmp") + "/pstrain-test-ports.lock";
    return ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  }();
  absl::MutexLock lock(&mu);
  int port = 0;
  for (int attempt = 0; attempt < 64; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    port = ntohs(addr.sin_port);
    if (mine.count(port) != 0) continue;
    if (lock_fd < 0) break;  // no lock file: the kernel's word alone, as before
    struct flock claim {};
    claim.l_type = F_WRLCK;
    claim.l_whence = SEEK_SET;
    claim.l_start = port;
    claim.l_len = 1;
    if (::fcntl(lock_fd, F_SETLK, &claim) == 0) break;
  }
  mine.insert(port);
  return port;
}

// A socket listening on a free port of 127.0.0.1 (backlog 1), its port in *port; -1 when it
// cannot bind.
inline int ListenLoopback(int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 1) != 0) {
    ::close(fd);
    return -1;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

// A blocking socket connected to 127.0.0.1:port, or -1.
inline int ConnectLoopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True once something accepts TCP connections on 127.0.0.1:port.
inline bool LoopbackAccepts(int port) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

}  // namespace testing_util
}  // namespace pstrain

#endif  // PSTRAIN_TESTS_TEST_UTIL_LOOPBACK_H_
