#include "common/metrics/http_metrics_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace pstrain {
namespace {

std::string Response(const std::string& status, const std::string& content_type, const std::string& body,
                     bool head_only, const std::string& extra_headers = "") {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", content_type, "\r\nContent-Length: ", body.size(),
                      "\r\n", extra_headers, "Connection: close\r\n\r\n", head_only ? "" : body);
}

std::string TextResponse(const std::string& status, const std::string& body, bool head_only = false,
                         const std::string& extra_headers = "") {
  return Response(status, "text/plain; charset=utf-8", body, head_only, extra_headers);
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

struct Connection {
  std::string in;
  std::string out;
  size_t written = 0;
  bool responding = false;
  std::chrono::steady_clock::time_point deadline;
};

// The length of the request head when `in` holds a complete one (blank line included), else 0.
size_t HeadLength(const std::string& in) {
  const size_t crlf = in.find("\r\n\r\n");
  if (crlf != std::string::npos) return crlf + 4;
  const size_t lf = in.find("\n\n");
  return lf == std::string::npos ? 0 : lf + 2;
}

}  // namespace

std::string HttpMetricsResponse(const std::string& request_head, const HttpMetricsServer::RenderFn& render) {
  const std::string line = request_head.substr(0, request_head.find_first_of("\r\n"));
  std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (parts.size() != 3 || parts[2].rfind("HTTP/1.", 0) != 0 || parts[1].empty() || parts[1][0] != '/') {
    return TextResponse("400 Bad Request", "malformed request line\n");
  }
  const std::string& method = parts[0];
  const std::string path = parts[1].substr(0, parts[1].find('?'));
  if (method != "GET" && method != "HEAD") {
    return TextResponse("405 Method Not Allowed", "only GET /metrics is served\n", false, "Allow: GET, HEAD\r\n");
  }
  if (path != "/metrics")
    return TextResponse("404 Not Found", "not found: the metrics are at /metrics\n", method == "HEAD");
  return Response("200 OK", "text/plain; version=0.0.4; charset=utf-8", render(), method == "HEAD");
}

absl::StatusOr<std::unique_ptr<HttpMetricsServer>> HttpMetricsServer::Start(const std::string& host, int port,
                                                                            RenderFn render,
                                                                            HttpMetricsServerOptions options) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("metrics port ", port, " is not in 0..65535"));
  }
  const std::string where = absl::StrCat(host, ":", port);
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", where, ": ", gai_strerror(rc)));
  }
  int fd = -1;
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 16) != 0) {
      error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", where, ": ", error));
  sockaddr_storage bound = {};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int actual = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                       : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  SetNonBlocking(fd);
  std::unique_ptr<HttpMetricsServer> server(new HttpMetricsServer(fd, actual, std::move(render), options));
  if (pipe2(server->wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("cannot serve metrics: pipe: ", std::strerror(errno)));
  }
  // The thread starts with every signal blocked: signals are for the task's main thread
  // (stop_signals.h), whenever this server was started.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return server;
}

HttpMetricsServer::HttpMetricsServer(int listen_fd, int port, RenderFn render, HttpMetricsServerOptions options)
    : listen_fd_(listen_fd), port_(port), render_(std::move(render)), options_(options) {}

HttpMetricsServer::~HttpMetricsServer() {
  Stop();
  close(listen_fd_);
  for (int fd : wake_fds_) {
    if (fd >= 0) close(fd);
  }
}

void HttpMetricsServer::Stop() {
  if (!thread_.joinable()) return;
  const char byte = 1;
  (void)!write(wake_fds_[1], &byte, 1);
  thread_.join();
}

void HttpMetricsServer::Serve() {
  std::map<int, Connection> conns;
  const auto timeout = std::chrono::microseconds(absl::ToInt64Microseconds(options_.io_timeout));
  while (true) {
    std::vector<pollfd> fds = {{wake_fds_[0], POLLIN, 0}};
    const bool accepting = static_cast<int>(conns.size()) < options_.max_connections;
    if (accepting) fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& [fd, c] : conns) fds.push_back({fd, static_cast<short>(c.responding ? POLLOUT : POLLIN), 0});
    if (poll(fds.data(), fds.size(), 250) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // Stop()
    const auto now = std::chrono::steady_clock::now();
    if (accepting && (fds[1].revents & POLLIN)) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) conns[fd].deadline = now + timeout;
    }
    for (const pollfd& p : fds) {
      auto it = conns.find(p.fd);
      if (it == conns.end() || p.revents == 0) continue;
      Connection& c = it->second;
      bool done = (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0 && !(p.revents & POLLIN);
      if (!done && !c.responding && (p.revents & POLLIN)) {
        char buf[4096];
        const ssize_t n = recv(p.fd, buf, sizeof(buf), 0);
        if (n <= 0) {
          done = n == 0 || (errno != EAGAIN && errno != EINTR);
        } else {
          c.in.append(buf, n);
          bytes_received_ += n;
          c.deadline = now + timeout;
          const size_t head = HeadLength(c.in);
          if (head > 0 && head <= options_.max_request_bytes) {
            c.out = HttpMetricsResponse(c.in.substr(0, head), render_);
            c.responding = true;
          } else if (c.in.size() > options_.max_request_bytes) {
            c.out = TextResponse("431 Request Header Fields Too Large", "request head too large\n");
            c.responding = true;
          }
        }
      } else if (!done && c.responding && (p.revents & POLLOUT)) {
        const ssize_t n = send(p.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
        if (n > 0) {
          c.written += n;
          c.deadline = now + timeout;
        } else if (errno != EAGAIN && errno != EINTR) {
          done = true;
        }
        done = done || c.written == c.out.size();
      }
      if (done) {
        close(p.fd);
        conns.erase(it);
      }
    }
    for (auto it = conns.begin(); it != conns.end();) {
      if (now > it->second.deadline) {
        close(it->first);
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& [fd, c] : conns) close(fd);
}

}  // namespace pstrain
