// The metrics registry's text format, the process metrics parser, and the HTTP server over real
// loopback sockets.
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "common/metrics/http_metrics_server.h"
#include "common/metrics/metrics_endpoint.h"
#include "common/metrics/metrics_registry.h"
#include "common/metrics/process_metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util/loopback.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(MetricsRegistryTest, RendersCountersGaugesWithHelpTypeAndEscapedLabels) {
  MetricsRegistry r;
  r.GetCounter("pstrain_examples_total", "Examples trained")->Increment(3);
  r.GetCounter("pstrain_examples_total", "Examples trained")->Increment(2);  // same object
  r.GetGauge("pstrain_loss", "Loss \\ with\nnewline", {{"run", "a\"b\\c\nd"}})->Set(0.25);
  const std::string text = r.Render();
  EXPECT_THAT(text, HasSubstr("# HELP pstrain_examples_total Examples trained\n"
                              "# TYPE pstrain_examples_total counter\n"
                              "pstrain_examples_total 5\n"));
  EXPECT_THAT(text, HasSubstr("# HELP pstrain_loss Loss \\\\ with\\nnewline\n# TYPE pstrain_loss gauge\n"));
  EXPECT_THAT(text, HasSubstr("pstrain_loss{run=\"a\\\"b\\\\c\\nd\"} 0.25\n"));
}

TEST(MetricsRegistryTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  MetricsRegistry r;
  Histogram* h = r.GetHistogram("pstrain_x_seconds", "X", {0.1, 1, 10}, {{"m", "Pull"}});
  for (double v : {0.05, 0.1, 0.5, 2.0, 50.0}) h->Observe(v);
  const std::string text = r.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE pstrain_x_seconds histogram\n"
                              "pstrain_x_seconds_bucket{m=\"Pull\",le=\"0.1\"} 2\n"
                              "pstrain_x_seconds_bucket{m=\"Pull\",le=\"1\"} 3\n"
                              "pstrain_x_seconds_bucket{m=\"Pull\",le=\"10\"} 4\n"
                              "pstrain_x_seconds_bucket{m=\"Pull\",le=\"+Inf\"} 5\n"
                              "pstrain_x_seconds_sum{m=\"Pull\"} 52.65\n"
                              "pstrain_x_seconds_count{m=\"Pull\"} 5\n"));
}

TEST(MetricsRegistryTest, CollectorsJoinTheirFamiliesAndWrongTypesAreNotRendered) {
  MetricsRegistry r;
  r.GetGauge("pstrain_g", "G")->Set(1);
  EXPECT_NE(r.GetCounter("pstrain_g", "asked as a counter"), nullptr);  // usable, never rendered
  r.AddCollector([](MetricsSnapshot* s) {
    s->AddCounter("pstrain_shard_pulls_total", "Pulls", {{"shard", "w/part_0"}}, 7);
    s->AddCounter("pstrain_shard_pulls_total", "Pulls", {{"shard", "w/part_1"}}, 9);
  });
  const std::string text = r.Render();
  EXPECT_EQ(text.find("asked as a counter"), std::string::npos);
  EXPECT_THAT(text, HasSubstr("# TYPE pstrain_shard_pulls_total counter\n"
                              "pstrain_shard_pulls_total{shard=\"w/part_0\"} 7\n"
                              "pstrain_shard_pulls_total{shard=\"w/part_1\"} 9\n"));
}

TEST(MetricsRegistryTest, ValuesReadBackExactly) {
  EXPECT_EQ(FormatMetricValue(1e15), "1000000000000000");
  EXPECT_EQ(FormatMetricValue(0.1), "0.1");
  EXPECT_EQ(std::stod(FormatMetricValue(1.0 / 3)), 1.0 / 3);
  EXPECT_EQ(FormatMetricValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatMetricValue(0.0 / 0.0), "NaN");
}

TEST(ProcessMetricsTest, ParsesStatmAndStat) {
  // A command name with spaces and parentheses must not shift the fields.
  const std::string stat =
      "42 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 300 200 0 0 20 0 17 0 5000 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0";
  std::optional<ProcessSample> s = ParseProcFiles("1000 250 10 1 0 100 0\n", stat, 4096, 100, 1.7e9);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->resident_bytes, 250 * 4096);
  EXPECT_EQ(s->virtual_bytes, 1000 * 4096);
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 5.0);
  EXPECT_EQ(s->threads, 17);
  EXPECT_DOUBLE_EQ(s->start_time_seconds, 1.7e9 + 50);
  EXPECT_FALSE(ParseProcFiles("x", stat, 4096, 100, 0).has_value());
  EXPECT_FALSE(ParseProcFiles("1 2", "42 (x) S 1", 4096, 100, 0).has_value());
}

TEST(ProcessMetricsTest, ThisProcessHasResidentMemory) {
  MetricsRegistry r;
  AddProcessMetrics(&r, "worker:3", "worker");
  const std::string text = r.Render();
  EXPECT_THAT(text, HasSubstr("pstrain_task_info{task=\"worker:3\",role=\"worker\"} 1\n"));
  const size_t at = text.find("\nprocess_resident_memory_bytes ");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_GT(std::stod(text.substr(at + 31)), 1e6);  // a test binary holds more than 1 MB
}

TEST(HttpMetricsResponseTest, OnlyGetMetricsIsServed) {
  auto render = [] { return std::string("pstrain_up 1\n"); };
  const std::string ok = HttpMetricsResponse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", render);
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(ok, HasSubstr("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  EXPECT_THAT(ok, HasSubstr("Content-Length: 13\r\n"));
  EXPECT_THAT(ok, ::testing::EndsWith("\r\n\r\npstrain_up 1\n"));
  EXPECT_THAT(HttpMetricsResponse("GET /metrics?x=1 HTTP/1.0\r\n\r\n", render), StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(HttpMetricsResponse("HEAD /metrics HTTP/1.1\r\n\r\n", render), ::testing::EndsWith("\r\n\r\n"));
  EXPECT_THAT(HttpMetricsResponse("GET / HTTP/1.1\r\n\r\n", render), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(HttpMetricsResponse("POST /metrics HTTP/1.1\r\n\r\n", render), StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(HttpMetricsResponse("garbage\r\n\r\n", render), StartsWith("HTTP/1.1 400"));
}

// Sends `request` and reads until the server closes; "" when it cannot connect.
std::string Exchange(int port, const std::string& request) {
  const int fd = testing_util::ConnectLoopback(port);
  if (fd < 0) return "";
  if (!request.empty()) send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, n);
  close(fd);
  return out;
}

TEST(HttpMetricsServerTest, ServesScrapesOverLoopback) {
  MetricsRegistry r;
  Counter* c = r.GetCounter("pstrain_scrapes_total", "Scrapes");
  auto server = HttpMetricsServer::Start("127.0.0.1", 0, [&] {
    c->Increment();
    return r.Render();
  });
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  EXPECT_THAT(Exchange(port, "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"), HasSubstr("\npstrain_scrapes_total 1\n"));
  // Split across several writes.
  const int fd = testing_util::ConnectLoopback(port);
  ASSERT_GE(fd, 0);
  const int64_t read_before = (*server)->bytes_received();
  send(fd, "GET /met", 8, MSG_NOSIGNAL);
  // The second part once the server has read the first.
  for (int i = 0; i < 5000 && (*server)->bytes_received() < read_before + 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ((*server)->bytes_received(), read_before + 8);
  send(fd, "rics HTTP/1.1\r\n\r\n", 17, MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, n);
  close(fd);
  EXPECT_THAT(out, HasSubstr("\npstrain_scrapes_total 2\n"));
  EXPECT_THAT(Exchange(port, "GET /other HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Exchange(port, "GET /metrics HTTP/1.1\r\nX: " + std::string(10000, 'a')), StartsWith("HTTP/1.1 431"));
}

TEST(HttpMetricsServerTest, IdleConnectionsAreClosedAndDoNotBlockOthers) {
  MetricsRegistry r;
  HttpMetricsServerOptions options;
  options.max_connections = 2;
  options.io_timeout = absl::Milliseconds(300);
  auto server = HttpMetricsServer::Start(
      "127.0.0.1", 0, [&] { return r.Render(); }, options);
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();
  // Two silent clients take every slot; a scrape waits in the backlog until they time out.
  const int a = testing_util::ConnectLoopback(port), b = testing_util::ConnectLoopback(port);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_THAT(Exchange(port, "GET /metrics HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 200"));
  char byte;
  EXPECT_EQ(recv(a, &byte, 1, 0), 0);  // closed by the server after the timeout
  close(a);
  close(b);
  (*server)->Stop();
  (*server)->Stop();  // idempotent
}

TEST(HttpMetricsServerTest, BadAddressesAreNamed) {
  auto r = HttpMetricsServer::Start("no-such-host.invalid", 0, [] { return std::string(); });
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("no-such-host.invalid"));
  EXPECT_EQ(HttpMetricsServer::Start("127.0.0.1", 70000, [] { return std::string(); }).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ListenHost("0.0.0.0:2222"), "0.0.0.0");
  EXPECT_EQ(ListenHost("[::1]:2222"), "::1");
  MetricsRegistry reg;
  auto off = ServeMetrics(&reg, "127.0.0.1", 0, "test");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, nullptr);
}

}  // namespace
}  // namespace pstrain

namespace pstrain {
namespace {

TEST(MetricsRegistryTest, SetMaxNeverGoesBack) {
  Gauge g;
  g.SetMax(5);
  g.SetMax(3);
  EXPECT_EQ(g.value(), 5);
  g.SetMax(7);
  EXPECT_EQ(g.value(), 7);
}

}  // namespace
}  // namespace pstrain
