// Runs the real `pstrain plan` and role binaries as a user would, checking output and exit codes.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "common/config/json_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Result RunCommand(const std::string& command) {
  Result r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Bin(const std::string& name) { return std::string(PSTRAIN_BIN_DIR) + "/" + name; }

nlohmann::json PlanJson(const std::string& flags) {
  Result r = RunCommand("env -u TF_CONFIG " + Bin("pstrain") + " plan --format=json " + flags);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto doc = ParseJson(r.output, "plan output");
  EXPECT_TRUE(doc.ok()) << r.output;
  return doc.ok() ? *doc : nlohmann::json();
}

std::vector<int64_t> Rows(const nlohmann::json& plan, size_t var = 0) {
  std::vector<int64_t> rows;
  for (const auto& s : plan["variables"][var]["shards"]) rows.push_back(s["rows"].get<int64_t>());
  return rows;
}

TEST(PlanCommandTest, PsReplicasShowsBackupsAndTheirBytes) {
  auto plan = PlanJson("--partitioner=fixed_shards --num_shards=2 --shape=10,30 --num_ps=2 --ps_replicas=1");
  EXPECT_EQ(plan["variables"][0]["shards"][0]["ps"], 0);
  EXPECT_EQ(plan["variables"][0]["shards"][0]["backup_ps"], 1);
  EXPECT_EQ(plan["variables"][0]["shards"][1]["backup_ps"], 0);
  EXPECT_EQ(plan["ps_bytes"], nlohmann::json({1200, 1200}));  // 600 of primaries + 600 of backups each
  EXPECT_EQ(plan["ps_backup_bytes"], nlohmann::json({600, 600}));
  Result table = RunCommand("env -u TF_CONFIG " + Bin("pstrain") + " plan --job=cnn --num_ps=2 --ps_replicas=1");
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_THAT(table.output, HasSubstr("a backup of every shard on the next ps"));
  EXPECT_THAT(table.output, HasSubstr("(values of backups: "));
  Result one = RunCommand("env -u TF_CONFIG " + Bin("pstrain") + " plan --job=cnn --num_ps=1 --ps_replicas=1");
  EXPECT_EQ(one.exit_code, 2) << one.output;
  EXPECT_THAT(one.output, HasSubstr("ps_replicas <= num_ps - 1"));
}

TEST(PlanCommandTest, SingleVariableFromFlags) {
  auto plan = PlanJson("--partitioner=max_size --max_shard_bytes=1000 --shape=10,30 --dtype=float64 --num_ps=3");
  EXPECT_EQ(Rows(plan), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(plan["ps_bytes"], nlohmann::json({960, 720, 720}));
  EXPECT_EQ(plan["variables"][0]["shards"][1]["name"], "v/part_1");
  EXPECT_EQ(plan["variables"][0]["shards"][1]["offset"], 4);
  EXPECT_EQ(plan["variables"][0]["dtype"], "float64");

  auto fixed = PlanJson("--partitioner=fixed_shards --num_shards=5 --shape=13,8 --num_ps=3");
  EXPECT_EQ(Rows(fixed), (std::vector<int64_t>{3, 3, 3, 2, 2}));
  std::vector<int> ps;
  for (const auto& s : fixed["variables"][0]["shards"]) ps.push_back(s["ps"].get<int>());
  EXPECT_EQ(ps, (std::vector<int>{0, 1, 2, 0, 1}));

  auto strings = PlanJson("--partitioner=min_size --max_shards=10 --shape=100000 --dtype=string --num_ps=2");
  EXPECT_EQ(Rows(strings), (std::vector<int64_t>{14286, 14286, 14286, 14286, 14286, 14285, 14285}));
}

TEST(PlanCommandTest, TablesWithModStrategyAndOptimizerSlots) {
  auto plan = PlanJson(
      "--shape=50000000,16 --sparse=true --strategy=mod --optimizer=adagrad --partitioner=max_size "
      "--max_shard_bytes=800000000 --num_ps=4");
  EXPECT_EQ(plan["strategy"], "mod");
  EXPECT_EQ(plan["variables"][0]["sparse"], true);
  EXPECT_EQ(Rows(plan), (std::vector<int64_t>{12500000, 12500000, 12500000, 12500000}));
  EXPECT_EQ(plan["variables"][0]["shards"][3]["offset"], 3);
  EXPECT_EQ(plan["variables"][0]["shards"][3]["stride"], 4);
  EXPECT_EQ(plan["ps_bytes"], nlohmann::json({800000000, 800000000, 800000000, 800000000}));
  EXPECT_EQ(plan["slots_per_value"], 1);
  EXPECT_EQ(plan["ps_total_bytes"], nlohmann::json({1600000000, 1600000000, 1600000000, 1600000000}));
  auto adam = PlanJson("--shape=10,4 --num_ps=1 --optimizer=adam");
  EXPECT_EQ(adam["ps_slot_bytes"], nlohmann::json({320}));
  Result table = RunCommand("env -u TF_CONFIG " + Bin("pstrain") +
                            " plan --job=cnn --num_ps=2 --optimizer=adagrad --strategy=mod");
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_THAT(table.output, HasSubstr("of values + "));
  EXPECT_THAT(table.output, HasSubstr("of adagrad slots"));
  Result bad = RunCommand("env -u TF_CONFIG " + Bin("pstrain") + " plan --shape=10 --num_ps=1 --strategy=hash");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("strategy \"hash\" is unknown"));
}

TEST(PlanCommandTest, JobPresetAsTableAndFromTfConfig) {
  Result r = RunCommand("env -u TF_CONFIG " + Bin("pstrain") + " plan --job=cnn --num_ps=2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dense/kernel/part_1"));
  EXPECT_THAT(r.output, HasSubstr("ps 1 holds"));
  const std::string tf_config =
      R"('{"cluster": {"worker": ["localhost:1"], "ps": ["localhost:2", "localhost:3", "localhost:4"]}}')";
  Result from_env = RunCommand("TF_CONFIG=" + tf_config + " " + Bin("pstrain") + " plan --job=cnn --format=json");
  EXPECT_EQ(from_env.exit_code, 0) << from_env.output;
  EXPECT_THAT(from_env.output, HasSubstr("\"ps_bytes\""));
  auto doc = ParseJson(from_env.output, "plan");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["ps_bytes"].size(), 3u);
}

// A job with a dynamic table: one shard per ps, shown as dynamic with its budget, its row overhead
// in each ps's bytes and in the budget check; backups refused naming the table.
TEST(PlanCommandTest, DynamicTablesShowTheirCapAndBudget) {
  const std::string job = testing::TempDir() + "/plan_dynamic_job.json";
  {
    std::ofstream out(job);
    out << R"({"model": {"numeric_inputs": 2,
                         "fields": [{"name": "user", "embedding_dim": 4, "dynamic": {"max_rows": 1000}},
                                    {"name": "ad", "vocabulary_size": 10, "embedding_dim": 4}],
                         "layers": [{"type": "dense", "units": 1}]},
               "optimizer": "adagrad", "data": {"dataset": "criteo"}, "schedule": {"steps": 10}})";
  }
  const std::string plan = "env -u TF_CONFIG " + Bin("pstrain") + " plan --job=" + job + " --num_ps=2";
  nlohmann::json doc = PlanJson("--job=" + job + " --num_ps=2");
  const nlohmann::json& user = doc["variables"][0];
  EXPECT_EQ(user["name"], "user/embeddings");
  EXPECT_EQ(user["dynamic"]["placement"], "hash");
  EXPECT_EQ(Rows(doc), (std::vector<int64_t>{500, 500}));
  EXPECT_EQ(user["shards"][1]["name"], "user/embeddings/dyn_1_of_2");
  EXPECT_EQ(user["shards"][1]["ps"], 1);
  const int64_t shard = 500 * 4 * 4 * 2 + 500 * 55;  // values and adagrad's slot, and the row overhead
  EXPECT_EQ(user["dynamic"]["shard_budget_bytes"], shard);
  EXPECT_EQ(doc["ps_dynamic_overhead_bytes"], nlohmann::json({500 * 55, 500 * 55}));
  Result table = RunCommand(plan);
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_THAT(table.output, HasSubstr("user/embeddings: dynamic, cap 500 rows per ps (max_rows 1000), hash placement"));
  EXPECT_THAT(table.output, HasSubstr("of dynamic tables' row overhead"));
  Result over = RunCommand(plan + " --memory_budget_bytes=" + std::to_string(shard));
  EXPECT_EQ(over.exit_code, 2) << over.output;
  EXPECT_THAT(over.output, HasSubstr("and dynamic tables' row overhead"));
  Result backups = RunCommand(plan + " --ps_replicas=1");
  EXPECT_EQ(backups.exit_code, 2) << backups.output;
  EXPECT_THAT(backups.output, HasSubstr("dynamic table user/embeddings"));
}

TEST(PlanCommandTest, BadFlagsExitTwoWithAMessage) {
  const std::string plan = "env -u TF_CONFIG " + Bin("pstrain") + " plan ";
  struct Case {
    std::string flags, message;
  } cases[] = {
      {"--shape=10 --num_ps=2 --partitioner=bogus", "unknown partitioner \"bogus\""},
      {"--shape=10 --num_ps=0", "--num_ps must be positive"},
      {"--shape=10", "give --num_ps=N"},
      {"--shape=10,x --num_ps=1", "not a comma-separated list"},
      {"--shape=0,4 --num_ps=1 --partitioner=fixed_shards --num_shards=2", "has no elements"},
      {"--shape=10 --num_ps=1 --partitioner=fixed_shards", "needs --num_shards"},
      {"--shape=10 --num_ps=1 --partitioner=max_size --max_shard_bytes=-3", "max_shard_bytes must be positive"},
      {"--shape=10 --num_ps=1 --dtype=complex", "unknown dtype"},
      {"--job=nope --num_ps=1", "neither a preset"},
      {"--num_ps=1", "give either --job"},
      {"--shape=10 --num_ps=1 --frobnicate=1", "unknown flag --frobnicate"},
  };
  for (const Case& c : cases) {
    Result r = RunCommand(plan + c.flags);
    EXPECT_EQ(r.exit_code, 2) << c.flags << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.flags;
  }
}

TEST(PlanCommandTest, EveryBinaryExitsTwoOnBadTfConfig) {
  for (const char* role : {"ps", "worker", "chief"}) {
    const std::string bin = Bin(std::string("pstrain-") + role);
    Result missing = RunCommand("env -u TF_CONFIG " + bin);
    EXPECT_EQ(missing.exit_code, 2) << role << ": " << missing.output;
    EXPECT_THAT(missing.output, HasSubstr("TF_CONFIG is not set")) << role;
    Result malformed = RunCommand("TF_CONFIG='{\"cluster\": [' " + bin);
    EXPECT_EQ(malformed.exit_code, 2) << role << ": " << malformed.output;
    EXPECT_THAT(malformed.output, HasSubstr("not valid JSON")) << role;
    const std::string out_of_range = std::string("TF_CONFIG='{\"cluster\": {\"worker\": [\"localhost:1\"], \"ps\": "
                                                 "[\"localhost:2\"], \"chief\": [\"localhost:3\"]}, \"task\": "
                                                 "{\"type\": \"") + role + "\", \"index\": 5}}' " + bin;
    Result range = RunCommand(out_of_range);
    EXPECT_EQ(range.exit_code, 2) << role << ": " << range.output;
    EXPECT_THAT(range.output, HasSubstr("task.index 5 is out of range")) << role;
  }
}

}  // namespace
}  // namespace pstrain
