// Pull and push throughput of a ps over loopback, per transport (the tensor channel, unary gRPC,
// each plaintext or with mutual TLS), against raw loopback TCP measured in the same run as the
// ceiling. Prints one table: per shard size, transport and client count, GB/s and calls/s for pull
// and push, and each as a fraction of the raw TCP stream; then, when both were measured, each TLS
// transport against its plaintext one (the cost of TLS), the two measured alternately in one run.
//
// Usage: ps_throughput_benchmark [--seconds=0.5] [--min_kib=4] [--max_mib=64] [--clients=1,2,4]
//          [--repeats=3] [--transports=tensor_channel,tensor_channel_tls,grpc,grpc_tls] [--nopull] [--nopush]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
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
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/security/cert_authority.h"
#include "common/wire/protocol_version.h"
#include "ps/client/grpc_ps_client.h"
#include "ps/server/ps_grpc_server.h"
#include "ps/store/ps_server.h"
#include "ps/transport/tls_stream.h"

ABSL_FLAG(double, seconds, 0.5, "measuring time per cell");
ABSL_FLAG(int, max_mib, 64, "largest shard size in MiB");
ABSL_FLAG(int, min_kib, 4, "smallest shard size in KiB");
ABSL_FLAG(std::string, clients, "1,2,4", "concurrent client counts");
ABSL_FLAG(std::string, transports, "tensor_channel",
          "transports to measure, comma-separated: tensor_channel, tensor_channel_tls, grpc (unary calls), grpc_tls");
ABSL_FLAG(int, repeats, 3, "measurements per cell, alternating with raw TCP; medians are printed");
ABSL_FLAG(bool, pull, true, "measure pulls");
ABSL_FLAG(bool, push, true, "measure pushes");

namespace pstrain {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// CPU seconds (user + system) this process has used: both ends of every transfer run here, so CPU
// per byte is a cost figure that holds up when other work shares the machine.
double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// ---- raw loopback TCP on one connection ----
// message_bytes == 0: a one-way stream of 4 MiB writes (the ceiling). Otherwise request/response:
// `message_bytes` one way, a 1-byte answer back, as a push or pull of that size needs at least.
bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

double RawTcpGBps(size_t message_bytes, double seconds, double* cpu_s_per_gb = nullptr) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  ::listen(listener, 1);
  const size_t chunk = message_bytes == 0 ? (4 << 20) : message_bytes;
  std::atomic<int64_t> received{0};
  std::thread server([&] {
    int fd = ::accept(listener, nullptr, nullptr);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::vector<char> buf(chunk);
    for (;;) {
      if (message_bytes == 0) {
        ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n <= 0) break;
        received += n;
      } else {
        if (!ReadAll(fd, buf.data(), message_bytes)) break;
        received += static_cast<int64_t>(message_bytes);
        char ack = 1;
        if (!WriteAll(fd, &ack, 1)) break;
      }
    }
    ::close(fd);
  });
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  std::vector<char> buf(chunk, 1);
  auto one_message = [&] {
    if (!WriteAll(fd, buf.data(), buf.size())) return false;
    char ack;
    return message_bytes == 0 || ReadAll(fd, &ack, 1);
  };
  for (int i = 0; i < 8; ++i) one_message();  // warm-up
  const int64_t start_bytes = received.load();
  const auto start = Clock::now();
  const double cpu_start = CpuSeconds();
  while (Seconds(start, Clock::now()) < seconds && one_message()) {
  }
  const double elapsed = Seconds(start, Clock::now());
  const int64_t bytes = received.load() - start_bytes;
  if (cpu_s_per_gb != nullptr) *cpu_s_per_gb = (CpuSeconds() - cpu_start) / (static_cast<double>(bytes) / 1e9);
  ::shutdown(fd, SHUT_WR);
  server.join();
  ::close(fd);
  ::close(listener);
  return static_cast<double>(bytes) / elapsed / 1e9;
}

// ---- ps over the network ----
enum class Op { kPull, kPush };

// One operation measured once, after raw TCP measured just before it.
struct Figures {
  double gbps = 0, per_s = 0;
  double cpu = 0;     // CPU seconds per GB
  double vs_tcp = 0;  // gbps over that raw TCP figure
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

// Pulls or pushes of `bytes`-sized shards by `clients` concurrent clients, one shard each.
Figures MeasurePs(const std::string& address, int64_t bytes, int clients, double seconds,
                  const TransportConfig& transport, Op op) {
  const int64_t floats = bytes / 4;
  std::vector<std::unique_ptr<PsClient>> stubs;
  for (int c = 0; c < clients; ++c) {
    stubs.push_back(std::make_unique<GrpcPsClient>(address, "ps:0", absl::Minutes(1), transport));
  }
  Figures f;
  absl::Status s = CreateShards(stubs[0].get(), floats, clients);
  if (!s.ok()) {
    std::fprintf(stderr, "CreateShards: %s\n", s.ToString().c_str());
    return f;
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
  auto call = [&](int c) {
    absl::Status st = op == Op::kPull ? stubs[c]->Pull(pulls[c], &pulled[c]) : stubs[c]->Push(pushes[c], &pushed[c]);
    if (!st.ok()) std::fprintf(stderr, "%s: %s\n", op == Op::kPull ? "pull" : "push", st.ToString().c_str());
    return st.ok();
  };
  RunConcurrent(clients, seconds / 5, call);  // warm-up: connections, buffers
  const double cpu = CpuSeconds();
  const auto start = Clock::now();
  f.per_s = RunConcurrent(clients, seconds, call);
  f.gbps = f.per_s * static_cast<double>(bytes) / 1e9;
  f.cpu = (CpuSeconds() - cpu) / (f.gbps * Seconds(start, Clock::now()));
  return f;
}

std::string SizeName(int64_t bytes) {
  if (bytes >= (1 << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// One transport as measured: its own ps server (plaintext or TLS) and its clients' configuration.
struct Via {
  std::string name;
  TransportConfig config;
  std::string address;
};

int Main() {
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  std::vector<int> client_counts;
  for (absl::string_view c : absl::StrSplit(absl::GetFlag(FLAGS_clients), ',')) {
    client_counts.push_back(std::stoi(std::string(c)));
  }
  // A cluster CA of this run, for the TLS transports: the ps presents ps:0's certificate, the
  // clients chief:0's (it may create shards, pull and push).
  absl::StatusOr<CertAndKey> ca = MakeCertificateAuthority("benchmark CA", 1);
  auto tls_for = [&ca](const std::string& task) {
    TlsConfig tls;
    absl::StatusOr<CertAndKey> issued = IssueCertificate(*ca, task, {"127.0.0.1"}, 1);
    tls.enabled = issued.ok();
    tls.ca_pem = ca->cert_pem;
    tls.cert_pem = issued->cert_pem;
    tls.key_pem = issued->key_pem;
    tls.identity = task;
    return tls;
  };
  if (!ca.ok()) {
    std::fprintf(stderr, "%s\n", ca.status().ToString().c_str());
    return 1;
  }
  PsServer ps(PsServer::Options{"ps:0"});
  PsGrpcServer::Options plain_options, tls_options;
  tls_options.tls = tls_for("ps:0");
  std::vector<std::unique_ptr<PsGrpcServer>> servers;
  std::string plain_address, tls_address;
  for (auto [options, address] : {std::pair{&plain_options, &plain_address}, std::pair{&tls_options, &tls_address}}) {
    auto server = PsGrpcServer::Start(&ps, "127.0.0.1:0", *options);
    if (!server.ok()) {
      std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
      return 1;
    }
    *address = "127.0.0.1:" + std::to_string((*server)->port());
    servers.push_back(*std::move(server));
  }
  std::vector<Via> vias;
  for (absl::string_view t : absl::StrSplit(absl::GetFlag(FLAGS_transports), ',')) {
    Via via;
    via.name = std::string(t);
    const bool tls = absl::EndsWith(t, "_tls");
    absl::StatusOr<TransportKind> kind = ParseTransportKind(tls ? t.substr(0, t.size() - 4) : t);
    if (!kind.ok()) {
      std::fprintf(stderr, "--transports: %s (or the same with _tls)\n", std::string(kind.status().message()).c_str());
      return 2;
    }
    via.config.kind = *kind;
    via.config.caller = "chief:0";
    if (tls) via.config.tls = tls_for("chief:0");
    via.address = tls ? tls_address : plain_address;
    vias.push_back(std::move(via));
  }
  std::printf(
      "TCP: raw loopback TCP, one connection, 4 MiB writes (the ceiling), measured right before every\n"
      "  pull and every push measurement; each figure is the median of %d measurements, the\n"
      "  transports measured in turn within each repeat.\n"
      "TCP msg: raw TCP with one message of the shard's size and a 1-byte answer per call.\n"
      "vs TCP: the median of (ps GB/s / the TCP figure measured just before it).\n"
      "cpu: CPU seconds per GB moved, both ends (client and server share this process).\n"
      "kernel TLS: %s\n\n",
      repeats, KernelTlsStatus().c_str());
  std::printf("%-7s %-18s %5s %7s %4s | %7s | %9s %9s %6s %5s | %9s %9s %6s %5s\n", "shard", "via", "TCP", "TCP msg",
              "cpu", "clients", "pull GB/s", "pulls/s", "vs TCP", "cpu", "push GB/s", "updates/s", "vs TCP", "cpu");
  std::vector<std::string> tls_lines;
  for (int64_t bytes = int64_t{absl::GetFlag(FLAGS_min_kib)} << 10;
       bytes <= (int64_t{absl::GetFlag(FLAGS_max_mib)} << 20); bytes *= 4) {
    const double raw_msg = RawTcpGBps(static_cast<size_t>(bytes), seconds);
    for (int clients : client_counts) {
      std::vector<std::vector<double>> raw(vias.size()), raw_cpu(vias.size());
      std::vector<std::array<std::vector<Figures>, 2>> runs(vias.size());  // per via, per Op
      // Raw TCP right before each ps measurement, so every ratio pairs two figures taken
      // moments apart: the machine's speed drifts between seconds more than within them.
      for (int r = 0; r < repeats; ++r) {
        for (size_t v = 0; v < vias.size(); ++v) {
          for (Op op : {Op::kPull, Op::kPush}) {
            if (!absl::GetFlag(op == Op::kPull ? FLAGS_pull : FLAGS_push)) continue;
            double cpu = 0;
            raw[v].push_back(RawTcpGBps(0, seconds, &cpu));
            raw_cpu[v].push_back(cpu);
            Figures f = MeasurePs(vias[v].address, bytes, clients, seconds, vias[v].config, op);
            f.vs_tcp = f.gbps / raw[v].back();
            runs[v][static_cast<int>(op)].push_back(f);
          }
        }
      }
      auto median = [&runs](size_t v, Op op, double Figures::*field) {
        std::vector<double> values;
        for (const Figures& f : runs[v][static_cast<int>(op)]) values.push_back(f.*field);
        return Median(std::move(values));
      };
      for (size_t v = 0; v < vias.size(); ++v) {
        std::printf("%-7s %-18s %5.2f %7.2f %4.2f | %7d", SizeName(bytes).c_str(), vias[v].name.c_str(), Median(raw[v]),
                    raw_msg, Median(raw_cpu[v]), clients);
        for (Op op : {Op::kPull, Op::kPush}) {
          std::printf(" | %9.3f %9.1f %5.0f%% %5.2f", median(v, op, &Figures::gbps), median(v, op, &Figures::per_s),
                      100 * median(v, op, &Figures::vs_tcp), median(v, op, &Figures::cpu));
        }
        std::printf("\n");
        // TLS against plaintext of the same transport, measured in turn in this run.
        for (size_t p = 0; p < vias.size(); ++p) {
          if (vias[v].name != vias[p].name + "_tls") continue;
          char line[256];
          std::snprintf(line, sizeof(line),
                        "%-7s %-18s %7d | pull %.2fx (%.3f vs %.3f GB/s) | push %.2fx (%.3f vs %.3f GB/s)",
                        SizeName(bytes).c_str(), vias[v].name.c_str(), clients,
                        median(v, Op::kPull, &Figures::gbps) / median(p, Op::kPull, &Figures::gbps),
                        median(v, Op::kPull, &Figures::gbps), median(p, Op::kPull, &Figures::gbps),
                        median(v, Op::kPush, &Figures::gbps) / median(p, Op::kPush, &Figures::gbps),
                        median(v, Op::kPush, &Figures::gbps), median(p, Op::kPush, &Figures::gbps));
          tls_lines.push_back(line);
        }
      }
      std::fflush(stdout);
    }
  }
  if (!tls_lines.empty()) {
    std::printf("\nTLS against plaintext (same transport, same run; 1.00x = no cost):\n");
    for (const std::string& l : tls_lines) std::printf("%s\n", l.c_str());
  }
  for (auto& server : servers) server->Shutdown(absl::Seconds(1));
  return 0;
}

}  // namespace
}  // namespace pstrain

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return pstrain::Main();
}
