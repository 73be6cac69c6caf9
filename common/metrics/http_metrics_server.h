// HttpMetricsServer: a small HTTP/1.1 server for Prometheus scrapes. GET (or HEAD) /metrics
// answers 200 with the text that `render` returns (Content-Type text/plain; version=0.0.4); any
// other path 404, any other method 405, a malformed request 400, a request head over
// max_request_bytes 431. One response per connection (Connection: close).
// Bounded: at most max_connections connections at once (further ones wait in the listen backlog),
// each closed after io_timeout without progress. One thread serves everything with poll(2); it
// blocks every signal, so signals keep going to the thread that waits for them.
// Thread-safety: Start/Stop from any thread; `render` runs on the server's thread.
#ifndef PSTRAIN_COMMON_METRICS_HTTP_METRICS_SERVER_H_
#define PSTRAIN_COMMON_METRICS_HTTP_METRICS_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace pstrain {

struct HttpMetricsServerOptions {
  int max_connections = 8;
  size_t max_request_bytes = 8192;
  absl::Duration io_timeout = absl::Seconds(10);
};

class HttpMetricsServer {
 public:
  using RenderFn = std::function<std::string()>;

  // Listens on host:port ("0.0.0.0", "127.0.0.1", "::", a host name; port 0 picks a free one).
  // InvalidArgument for a bad port; Unavailable naming the address when it cannot listen.
  static absl::StatusOr<std::unique_ptr<HttpMetricsServer>> Start(const std::string& host, int port, RenderFn render,
                                                                  HttpMetricsServerOptions options = {});
  ~HttpMetricsServer();  // Stop()

  int port() const { return port_; }
  // Request bytes read from all connections so far: shows that a request's first part arrived.
  int64_t bytes_received() const { return bytes_received_.load(); }
  // Closes the listener and every connection; joins the thread. Idempotent.
  void Stop();

 private:
  HttpMetricsServer(int listen_fd, int port, RenderFn render, HttpMetricsServerOptions options);
  void Serve();

  const int listen_fd_;
  const int port_;
  const RenderFn render_;
  const HttpMetricsServerOptions options_;
  int wake_fds_[2] = {-1, -1};  // a pipe: Stop() writes, Serve() wakes up and returns
  std::atomic<int64_t> bytes_received_{0};
  std::thread thread_;
};

// The response to one request head (everything up to the blank line): status line, headers, body.
// Exposed for tests; `render` is called only for GET /metrics.
std::string HttpMetricsResponse(const std::string& request_head, const HttpMetricsServer::RenderFn& render);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_METRICS_HTTP_METRICS_SERVER_H_
