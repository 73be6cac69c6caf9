// Fills one dynamic table spread over running ps tasks (`pstrain-ps` processes) with --rows distinct
// keys by PushKeys over gRPC, as workers would, and prints each ps's rows and the table's own memory
// count (GetStats), so a script can set each ps's peak RSS against rows x (values + slots) plus the
// stated per-row overhead (tests/benchmarks/dynamic_ps_scale.sh).
// Keys are a bijection of 0..rows-1 scattered over 64 bits (SplitMix64's finaliser), so every key is
// new and shards fill evenly; each ps task is fed by its own thread, batches of --batch keys.
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/plan/dynamic_shards.h"
#include "common/wire/protocol_version.h"
#include "ps/client/grpc_ps_client.h"
#include "common/plan/dynamic_key_owner.h"

ABSL_FLAG(std::string, ps, "", "comma-separated host:port of the ps tasks, in task order");
ABSL_FLAG(int64_t, rows, 1000000, "distinct keys to push (rows the table ends with)");
ABSL_FLAG(int64_t, dim, 16, "floats per row");
ABSL_FLAG(int64_t, batch, 65536, "keys per PushKeys call");

namespace pstrain {
namespace {

// SplitMix64's finaliser: a bijection of 64-bit integers.
uint64_t Scatter(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

int Main() {
  std::vector<std::string> addresses = absl::StrSplit(absl::GetFlag(FLAGS_ps), ',', absl::SkipEmpty());
  const int64_t rows = absl::GetFlag(FLAGS_rows), dim = absl::GetFlag(FLAGS_dim);
  const int64_t batch = absl::GetFlag(FLAGS_batch);
  const int n = static_cast<int>(addresses.size());
  if (n < 1 || rows < 1 || dim < 1 || batch < 1) {
    std::cerr << "give --ps=HOST:PORT,... and positive --rows, --dim, --batch\n";
    return 2;
  }
  TransportConfig config;
  config.caller = "chief:0";  // creates shards
  std::vector<std::unique_ptr<GrpcPsClient>> clients;
  for (int i = 0; i < n; ++i) {
    clients.push_back(
        std::make_unique<GrpcPsClient>(addresses[i], absl::StrCat("ps:", i), absl::Seconds(600), config));
  }
  const std::string table = "emb/embeddings";
  for (int i = 0; i < n; ++i) {
    CreateShardsRequest create;
    create.set_protocol_version(kProtocolVersion);
    create.mutable_optimizer()->set_type("adagrad");
    create.mutable_optimizer()->mutable_learning_rate()->set_initial(0.02);
    create.mutable_optimizer()->set_initial_accumulator_value(0.1);
    create.mutable_optimizer()->set_epsilon(1e-7);
    create.set_mode(UPDATE_ASYNC);
    create.set_initialize(true);
    DynamicShardSpecProto* spec = create.add_dynamic_shards();
    spec->set_shard_name(DynamicShardName(table, i, n));
    spec->set_table_name(table);
    spec->set_dim(dim);
    spec->mutable_initializer()->set_type("random_uniform");
    spec->mutable_initializer()->set_minval(-0.05);
    spec->mutable_initializer()->set_maxval(0.05);
    spec->set_seed(42);
    spec->set_shard_index(i);
    spec->set_num_shards(n);
    CreateShardsResponse created;
    const absl::Status s = clients[i]->CreateShards(create, &created);
    if (!s.ok()) {
      std::cerr << "ps:" << i << " CreateShards: " << s << "\n";
      return 1;
    }
  }
  const absl::Time start = absl::Now();
  std::vector<absl::Status> results(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      std::vector<int64_t> keys;
      std::vector<float> grads;
      int64_t step = 0;
      auto flush = [&]() -> absl::Status {
        if (keys.empty()) return absl::OkStatus();
        grads.assign(keys.size() * static_cast<size_t>(dim), 0.01f);
        PushKeysRequest push;
        push.set_step(++step);
        KeyedRows* t = push.add_tables();
        t->set_shard_name(DynamicShardName(table, i, n));
        t->set_num_keys(static_cast<int64_t>(keys.size()));
        t->set_keys(keys.data(), keys.size() * sizeof(int64_t));
        t->set_values(grads.data(), grads.size() * sizeof(float));
        PushKeysResponse pushed;
        keys.clear();
        return clients[i]->PushKeys(push, &pushed);
      };
      for (int64_t k = 0; k < rows; ++k) {
        const uint64_t key = Scatter(static_cast<uint64_t>(k));
        if (DynamicKeyOwner(key, n) != i) continue;
        keys.push_back(static_cast<int64_t>(key));
        if (static_cast<int64_t>(keys.size()) == batch) {
          results[i] = flush();
          if (!results[i].ok()) return;
        }
      }
      results[i] = flush();
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    if (!results[i].ok()) {
      std::cerr << "ps:" << i << " PushKeys: " << results[i] << "\n";
      return 1;
    }
    PsStatsRequest request;
    PsStatsResponse stats;
    const absl::Status s = clients[i]->GetStats(request, &stats);
    if (!s.ok() || stats.dynamic_shards_size() != 1) {
      std::cerr << "ps:" << i << " GetStats: " << s << "\n";
      return 1;
    }
    const DynamicShardStats& d = stats.dynamic_shards(0);
    total += d.rows();
    std::cout << absl::StrFormat("ps:%d rows %d memory_bytes %d\n", i, d.rows(), d.memory_bytes());
  }
  std::cout << absl::StrFormat("total rows %d of %d pushed in %.1f s (%.2f M rows/s)\n", total, rows, seconds,
                               static_cast<double>(rows) / seconds / 1e6);
  return total == rows ? 0 : 1;
}

}  // namespace
}  // namespace pstrain

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return pstrain::Main();
}
