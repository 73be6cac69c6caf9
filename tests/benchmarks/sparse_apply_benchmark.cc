// The ps's sparse-apply rate (rows/s on one core) on a big table shard, beside a plain random-row
// read-modify-write loop over arrays of the same size in the same run (the memory-bound limit).
//
// The table: --rows x --dim float32 (default 12,500,000 x 16: what one of 4 ps holds of a
// 50,000,000 x 16 table split by max_size), with Adagrad (one accumulator per value), so the ps
// shard is 2 x 800 MB. Each push carries --batch distinct row ids, drawn either uniformly or
// Zipf-like (exponent --zipf_a over the rows, the hot ids scattered over the table), built before
// timing. Measured, alternating, --repeats times each (medians printed):
//   rmw:    for each id, every element of its value row and of its accumulator row read, changed
//           and written back (v += g; a += g * g): the same rows and bytes the apply touches, with
//           no optimizer arithmetic, no validation, no locking;
//   apply:  ApplyRowGradients, the optimizer code the ps runs on the summed rows;
//   ps:     PsServer::Push of one sparse entry through LocalPsClient: id checks, NaN/Inf scan,
//           duplicate summing, the shard's lock and the apply (everything but the network).
// Ratio = rows/s divided by the rmw loop's rows/s. Single-threaded: figures are per core.
// With --concurrent_pull, a second table follows: ps pushes on one thread while another thread
// pulls rows of the same shard (gathering under the shard's lock held shared), both rows/s, so
// what the lock costs when pulls and pushes meet shows beside the single-thread figure.
//
// Usage: sparse_apply_benchmark [--rows=12500000] [--dim=16] [--batch=16384] [--seconds=1]
//          [--repeats=3] [--zipf_a=1.05] [--distributions=uniform,zipf]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "common/wire/protocol_version.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/ps_server.h"
#include "ps/store/sparse_apply.h"
#include "tests/benchmarks/row_batches.h"

ABSL_FLAG(int64_t, rows, 12500000, "rows of the table shard");
ABSL_FLAG(int64_t, dim, 16, "floats per row");
ABSL_FLAG(int64_t, batch, 16384, "distinct row ids per push");
ABSL_FLAG(double, seconds, 1.0, "time per measurement");
ABSL_FLAG(int, repeats, 3, "measurements per method, alternating; medians are printed");
ABSL_FLAG(double, zipf_a, 1.05, "Zipf exponent of the skewed batches");
ABSL_FLAG(std::string, distributions, "uniform,zipf", "id distributions to measure");
ABSL_FLAG(bool, concurrent_pull, true,
          "also measure ps pushes while another thread pulls the same batches' rows (the shard lock's cost)");

namespace pstrain {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBatches = 64;  // distinct batches cycled through while timing

// `kBatches` batches of `batch` distinct ids in [0, rows).
std::vector<std::vector<int64_t>> MakeBatches(const std::string& distribution, int64_t rows, int64_t batch, double a) {
  return DistinctIndexBatches(distribution, rows, batch, a, kBatches);
}

std::vector<float> GradRows(int64_t batch, int64_t dim) {
  std::vector<float> g(static_cast<size_t>(batch * dim));
  for (size_t i = 0; i < g.size(); ++i) g[i] = 1e-3f * static_cast<float>(i % 13) - 6e-3f;
  return g;
}

// Push rows/s on this thread while another thread pulls the same batches' rows: (push, pull).
std::pair<double, double> Contended(LocalPsClient& client, const std::vector<PushRequest>& pushes,
                                    const std::vector<std::vector<int64_t>>& batches) {
  std::vector<PullRequest> pulls(kBatches);
  for (int k = 0; k < kBatches; ++k) *pulls[k].add_sparse() = pushes[k].sparse(0);
  for (PullRequest& p : pulls) p.mutable_sparse(0)->clear_values();
  std::atomic<bool> done{false};
  std::atomic<int64_t> pulled{0};
  const auto start = Clock::now();
  std::thread puller([&] {
    PullResponse got;
    for (int k = 0; !done.load(); k = (k + 1) % kBatches) {
      if (!client.Pull(pulls[k], &got).ok()) std::abort();
      pulled += static_cast<int64_t>(batches[k].size());
    }
  });
  const int64_t batch = static_cast<int64_t>(batches[0].size());
  const double push = RowsPerSecond(absl::GetFlag(FLAGS_seconds), batch, kBatches, [&](int k) {
    PushResponse pushed;
    if (!client.Push(pushes[k], &pushed).ok()) std::abort();
  });
  done = true;
  puller.join();
  return {push, static_cast<double>(pulled.load()) / std::chrono::duration<double>(Clock::now() - start).count()};
}

OptimizerProto Adagrad() {
  OptimizerProto o;
  o.set_type("adagrad");
  o.mutable_learning_rate()->set_initial(0.01);
  return o;
}

void Run() {
  const int64_t rows = absl::GetFlag(FLAGS_rows), dim = absl::GetFlag(FLAGS_dim), batch = absl::GetFlag(FLAGS_batch);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  std::printf("table shard %lld x %lld float32 + adagrad accumulator (%.2f GB), %lld distinct ids per push\n",
              static_cast<long long>(rows), static_cast<long long>(dim), 2.0 * rows * dim * 4 * 1e-9,
              static_cast<long long>(batch));

  // The ps: one table shard holding every row.
  PsServer ps(PsServer::Options{"ps:0"});
  LocalPsClient client(&ps);
  CreateShardsRequest create;
  create.set_protocol_version(kProtocolVersion);
  ShardSpecProto* spec = create.add_shards();
  spec->set_shard_name("emb");
  spec->set_variable_name("emb");
  spec->add_full_shape(rows);
  spec->add_full_shape(dim);
  spec->set_rows(rows);
  spec->set_row_stride(1);
  spec->set_dtype(DT_FLOAT);
  spec->set_sparse(true);
  spec->mutable_initializer()->set_type("zeros");
  *create.mutable_optimizer() = Adagrad();
  create.set_initialize(true);
  CreateShardsResponse created;
  if (absl::Status s = client.CreateShards(create, &created); !s.ok()) {
    std::fprintf(stderr, "cannot create the shard: %s\n", std::string(s.message()).c_str());
    return;
  }
  // The same memory again for apply-only and the rmw loop (values and accumulator).
  std::vector<float> values(static_cast<size_t>(rows * dim), 0.0f), accum(values.size(), 0.1f);
  auto optimizer = *Optimizer::Create(Adagrad());
  const std::vector<float> grads = GradRows(batch, dim);

  std::printf("\n%-8s  %14s  %14s  %14s  %11s  %11s\n", "ids", "rmw rows/s", "apply rows/s", "ps rows/s", "apply / rmw",
              "ps / rmw");
  std::vector<std::pair<std::string, std::pair<double, double>>> concurrent;
  for (const std::string& distribution :
       std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_distributions), ','))) {
    const auto batches = MakeBatches(distribution, rows, batch, absl::GetFlag(FLAGS_zipf_a));
    std::vector<PushRequest> pushes(kBatches);
    std::vector<RowGradients> updates(kBatches);
    for (int k = 0; k < kBatches; ++k) {
      SparseRows* r = pushes[k].add_sparse();
      r->set_shard_name("emb");
      r->set_num_ids(batch);
      r->set_ids(std::string(reinterpret_cast<const char*>(batches[k].data()), batch * sizeof(int64_t)));
      r->set_values(std::string(reinterpret_cast<const char*>(grads.data()), grads.size() * sizeof(float)));
      updates[k].rows = batches[k];
      updates[k].grads = grads;
    }
    std::vector<double> rmw, apply, push;
    for (int rep = 0; rep < absl::GetFlag(FLAGS_repeats); ++rep) {
      rmw.push_back(RowsPerSecond(seconds, batch, kBatches, [&](int k) {
        const float* g = grads.data();
        for (int64_t id : batches[k]) {
          float* v = values.data() + id * dim;
          float* a = accum.data() + id * dim;
          for (int64_t e = 0; e < dim; ++e) {
            const float x = g[e];
            v[e] += x;
            a[e] += x * x;
          }
          g += dim;
        }
      }));
      apply.push_back(RowsPerSecond(seconds, batch, kBatches, [&](int k) {
        const std::vector<absl::Span<float>> slots = {absl::MakeSpan(accum)};
        ApplyRowGradients(*optimizer, updates[k], dim, absl::MakeSpan(values), slots, rep);
      }));
      push.push_back(RowsPerSecond(seconds, batch, kBatches, [&](int k) {
        PushResponse pushed;
        if (absl::Status s = client.Push(pushes[k], &pushed); !s.ok()) std::abort();
      }));
    }
    const double r = Median(rmw), a = Median(apply), p = Median(push);
    std::printf("%-8s  %14.3g  %14.3g  %14.3g  %11.2f  %11.2f\n", distribution.c_str(), r, a, p, a / r, p / r);
    if (absl::GetFlag(FLAGS_concurrent_pull)) concurrent.push_back({distribution, Contended(client, pushes, batches)});
  }
  if (!concurrent.empty())
    std::printf("\n%-8s  %22s  %22s\n", "ids", "push rows/s (+ pulls)", "pull rows/s (+ pushes)");
  for (const auto& [distribution, c] : concurrent) {
    std::printf("%-8s  %22.3g  %22.3g\n", distribution.c_str(), c.first, c.second);
  }
}

}  // namespace
}  // namespace pstrain

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  pstrain::Run();
  return 0;
}
