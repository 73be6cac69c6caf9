// Pull and push throughput of a ps over loopback gRPC, against raw loopback TCP measured in the
// same run as the ceiling. Prints one table: per shard size and client count, GB/s and calls/s
// for pull and push, and each as a fraction of the raw TCP stream.
//
// Usage: ps_throughput_benchmark [--seconds=0.5] [--max_mib=64] [--clients=1,2,4]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "common/protocol_version.h"
#include "ps/grpc_ps_client.h"
#include "ps/ps_grpc_server.h"
#include "ps/ps_server.h"

ABSL_FLAG(double, seconds, 0.5, "measuring time per cell");
ABSL_FLAG(int, max_mib, 64, "largest shard size in MiB");
ABSL_FLAG(int, min_kib, 4, "smallest shard size in KiB");
ABSL_FLAG(std::string, clients, "1,2,4", "concurrent client counts");

namespace pstrain {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// ---- raw loopback TCP: one connection streaming `total` bytes in 4 MiB writes. ----
double RawTcpStreamGBps(double seconds) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  ::listen(listener, 1);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> received{0};
  std::thread reader([&] {
    int fd = ::accept(listener, nullptr, nullptr);
    std::vector<char> buf(4 << 20);
    for (;;) {
      ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n <= 0) break;
      received += n;
    }
    ::close(fd);
  });
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  std::vector<char> buf(4 << 20, 1);
  // Warm up, then measure what the reader received.
  for (int i = 0; i < 16; ++i) ::write(fd, buf.data(), buf.size());
  const int64_t start_bytes = received.load();
  const auto start = Clock::now();
  while (Seconds(start, Clock::now()) < seconds) {
    size_t done = 0;
    while (done < buf.size()) {
      ssize_t n = ::write(fd, buf.data() + done, buf.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }
  const double elapsed = Seconds(start, Clock::now());
  const int64_t bytes = received.load() - start_bytes;
  ::shutdown(fd, SHUT_WR);
  reader.join();
  ::close(fd);
  ::close(listener);
  (void)stop;
  return static_cast<double>(bytes) / elapsed / 1e9;
}

// ---- ps over gRPC ----
struct Cell {
  double pull_gbps = 0, push_gbps = 0, pull_per_s = 0, push_per_s = 0;
};

std::string ShardName(int client) { return "bench/part_" + std::to_string(client); }

absl::Status CreateShards(PsClient* client, int64_t floats, int clients) {
  CreateShardsRequest r;
  r.set_protocol_version(kProtocolVersion);
  for (int c = 0; c < clients; ++c) {
    ShardSpecProto* s = r.add_shards();
    s->set_shard_name(ShardName(c));
    s->set_variable_name(ShardName(c));
    s->add_full_shape(floats);
    s->set_rows(floats);
    s->set_dtype(DT_FLOAT);
    s->mutable_initializer()->set_type("zeros");
  }
  r.mutable_optimizer()->set_type("sgd");
  r.mutable_optimizer()->mutable_learning_rate()->set_initial(1e-3);
  CreateShardsResponse resp;
  return client->CreateShards(r, &resp);
}

// Runs `op` on `clients` threads for `seconds`; returns calls per second over all threads.
double RunConcurrent(int clients, double seconds, const std::function<bool(int)>& op) {
  std::atomic<int64_t> calls{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      int64_t n = 0;
      while (n < 2 || Seconds(start, Clock::now()) < seconds) {
        if (!op(c)) {
          failed = true;
          break;
        }
        ++n;
      }
      calls += n;
    });
  }
  for (auto& t : threads) t.join();
  if (failed) return -1;
  return static_cast<double>(calls.load()) / Seconds(start, Clock::now());
}

Cell MeasurePs(const std::string& address, int64_t bytes, int clients, double seconds) {
  const int64_t floats = bytes / 4;
  std::vector<std::unique_ptr<PsClient>> stubs;
  for (int c = 0; c < clients; ++c) stubs.push_back(NewGrpcPsClient(address, "ps:0"));
  Cell cell;
  absl::Status s = CreateShards(stubs[0].get(), floats, clients);
  if (!s.ok()) {
    std::fprintf(stderr, "CreateShards: %s\n", s.ToString().c_str());
    return cell;
  }
  std::vector<PushRequest> pushes(clients);
  std::vector<PushResponse> pushed(clients);
  std::vector<PullRequest> pulls(clients);
  std::vector<PullResponse> pulled(clients);  // reused across calls, as a worker would
  for (int c = 0; c < clients; ++c) {
    pulls[c].add_shard_names(ShardName(c));
    ShardGradient* g = pushes[c].add_gradients();
    g->set_name(ShardName(c));
    g->mutable_gradient()->set_dtype(DT_FLOAT);
    g->mutable_gradient()->add_shape(floats);
    g->mutable_gradient()->mutable_data()->assign(static_cast<size_t>(bytes), '\0');
  }
  auto pull = [&](int c) {
    absl::Status st = stubs[c]->Pull(pulls[c], &pulled[c]);
    if (!st.ok()) std::fprintf(stderr, "pull: %s\n", st.ToString().c_str());
    return st.ok();
  };
  auto push = [&](int c) {
    absl::Status st = stubs[c]->Push(pushes[c], &pushed[c]);
    if (!st.ok()) std::fprintf(stderr, "push: %s\n", st.ToString().c_str());
    return st.ok();
  };
  RunConcurrent(clients, seconds / 5, pull);  // warm-up: connections, buffers
  cell.pull_per_s = RunConcurrent(clients, seconds, pull);
  RunConcurrent(clients, seconds / 5, push);
  cell.push_per_s = RunConcurrent(clients, seconds, push);
  cell.pull_gbps = cell.pull_per_s * static_cast<double>(bytes) / 1e9;
  cell.push_gbps = cell.push_per_s * static_cast<double>(bytes) / 1e9;
  return cell;
}

std::string SizeName(int64_t bytes) {
  if (bytes >= (1 << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

int Main() {
  const double seconds = absl::GetFlag(FLAGS_seconds);
  std::vector<int> client_counts;
  for (absl::string_view c : absl::StrSplit(absl::GetFlag(FLAGS_clients), ',')) client_counts.push_back(std::stoi(std::string(c)));
  const double raw = RawTcpStreamGBps(std::max(1.0, seconds * 2));
  std::printf("raw loopback TCP, one connection, 4 MiB writes: %.2f GB/s\n\n", raw);

  PsServer ps(PsServer::Options{"ps:0"});
  auto server = PsGrpcServer::Start(&ps, "127.0.0.1:0");
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  const std::string address = "127.0.0.1:" + std::to_string((*server)->port());
  std::printf("%-8s %7s | %9s %9s %7s | %9s %9s %7s\n", "shard", "clients", "pull GB/s", "pulls/s", "vs TCP",
              "push GB/s", "updates/s", "vs TCP");
  for (int64_t bytes = int64_t{absl::GetFlag(FLAGS_min_kib)} << 10; bytes <= (int64_t{absl::GetFlag(FLAGS_max_mib)} << 20); bytes *= 4) {
    for (int clients : client_counts) {
      Cell c = MeasurePs(address, bytes, clients, seconds);
      std::printf("%-8s %7d | %9.3f %9.1f %6.0f%% | %9.3f %9.1f %6.0f%%\n", SizeName(bytes).c_str(), clients,
                  c.pull_gbps, c.pull_per_s, 100 * c.pull_gbps / raw, c.push_gbps, c.push_per_s,
                  100 * c.push_gbps / raw);
      std::fflush(stdout);
    }
  }
  std::printf("\nraw loopback TCP again (ceiling drift check): %.2f GB/s\n", RawTcpStreamGBps(std::max(1.0, seconds * 2)));
  (*server)->Shutdown(absl::Seconds(1));
  return 0;
}

}  // namespace
}  // namespace pstrain

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return pstrain::Main();
}
