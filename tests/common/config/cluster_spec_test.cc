#include "common/config/cluster_spec.h"

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::string& tf_config) {
  auto c = ParseTfConfig(tf_config);
  EXPECT_FALSE(c.ok()) << tf_config;
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
  return std::string(c.status().message());
}

TEST(ClusterSpecTest, ParsesListsAndTask) {
  auto c = ParseTfConfig(R"({"cluster": {"chief": ["c:1"], "worker": ["w0:2", "w1:3"], "ps": ["p:4"]},
                             "task": {"type": "worker", "index": 1}, "environment": "cloud"})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cluster.NumTasks("worker"), 2);
  EXPECT_EQ(*c->cluster.Address("worker", 1), "w1:3");
  EXPECT_EQ(c->task->ToString(), "worker:1");
  EXPECT_EQ(c->rpc_layer, "grpc");
  EXPECT_TRUE(ValidateTaskForRole(*c, "worker").ok());
}

TEST(ClusterSpecTest, SparseMapAndStringIndex) {
  auto c = ParseTfConfig(R"({"cluster": {"worker": {"1": "w1:2", "3": "w3:2"}, "ps": ["p:4"]},
                             "task": {"type": "worker", "index": "3"}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task->index, 3);
  EXPECT_EQ(c->cluster.TaskIndices("worker"), (std::vector<int>{1, 3}));
  EXPECT_THAT(
      ErrorOf(R"({"cluster": {"worker": {"1": "w1:2"}, "ps": ["p:4"]}, "task": {"type": "worker", "index": 0}})"),
      HasSubstr("task.index 0 is not in cluster.worker: it has indices 1"));
}

TEST(ClusterSpecTest, IndexOutOfRangeNamesTheJob) {
  EXPECT_EQ(
      ErrorOf(R"({"cluster": {"worker": ["a:1", "b:2"], "ps": ["p:4"]}, "task": {"type": "worker", "index": 3}})"),
      "task.index 3 is out of range: cluster.worker has 2 entries (0..1)");
  EXPECT_THAT(ErrorOf(R"({"cluster": {"worker": ["a:1"], "ps": ["p:4"]}, "task": {"type": "worker", "index": -1}})"),
              HasSubstr("task.index -1 is negative"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"worker": ["a:1"], "ps": ["p:4"]}, "task": {"type": "worker", "index": "x1"}})"),
              HasSubstr("task.index \"x1\" is not a number"));
}

TEST(ClusterSpecTest, UnknownJobAndTaskType) {
  EXPECT_THAT(ErrorOf(R"({"cluster": {"boss": ["a:1"]}})"), HasSubstr("cluster.\"boss\" is not a job"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "boss", "index": 0}})"),
              HasSubstr("task.type \"boss\" is not a task type"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps", "index": 0}})"),
              HasSubstr("task.type \"ps\" has no entries in cluster; add cluster.ps"));
}

// Found by tests/fuzz/tf_config_fuzz: a task type that is not a string ended the process with an
// uncaught JSON exception (in the Kubeflow "master" check) instead of an error.
TEST(ClusterSpecTest, TaskTypeThatIsNotAStringIsAnError) {
  for (const char* type : {"1", "null", "[\"chief\"]", "{\"a\": 1}"}) {
    const std::string config = std::string(R"({"cluster": {"chief": ["a:1"]}, "task": {"type": )") + type + "}}";
    EXPECT_THAT(ErrorOf(config), HasSubstr("task.type is missing or not a string")) << config;
    const std::string kubeflow = std::string(R"({"cluster": {"master": ["a:1"]}, "task": {"type": )") + type + "}}";
    EXPECT_THAT(ErrorOf(kubeflow), HasSubstr("task.type is missing or not a string")) << kubeflow;
  }
}

TEST(ClusterSpecTest, EvaluatorMayBeOutsideTheCluster) {
  auto c =
      ParseTfConfig(R"({"cluster": {"worker": ["a:1"], "ps": ["p:2"]}, "task": {"type": "evaluator", "index": 0}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task->type, "evaluator");
}

TEST(ClusterSpecTest, AtMostOneChiefAndEvaluator) {
  EXPECT_THAT(ErrorOf(R"({"cluster": {"chief": ["a:1", "b:2"]}})"),
              HasSubstr("cluster.chief has 2 entries; there must be at most one chief"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"evaluator": ["a:1", "b:2"]}})"), HasSubstr("at most one evaluator"));
}

// Two tasks at one address make a run that mixes their shards and says "done": refused, naming both.
TEST(ClusterSpecTest, TheSameAddressTwiceIsRefusedNamingBothTasks) {
  EXPECT_EQ(ErrorOf(R"({"cluster": {"worker": ["h:1", "h:1"], "ps": ["p:2"]}})"),
            "cluster gives worker:0 and worker:1 the same address \"h:1\"; every task needs its own host:port "
            "(give worker:1 another port)");
  EXPECT_THAT(ErrorOf(R"({"cluster": {"chief": ["h:1"], "ps": ["h:1"], "worker": ["w:2"]}})"),
              HasSubstr("cluster gives chief:0 and ps:0 the same address \"h:1\""));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"evaluator": ["w:2"], "ps": ["p:1"], "worker": ["w:2"]}})"),
              HasSubstr("evaluator:0 and worker:0 the same address"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"ps": {"1": "h:1", "7": "h:1"}, "worker": ["w:2"]}})"),
              HasSubstr("ps:1 and ps:7 the same address"));
  // localhost is 127.0.0.1, and host names are not case-sensitive.
  EXPECT_THAT(ErrorOf(R"({"cluster": {"ps": ["localhost:5"], "worker": ["127.0.0.1:5"]}})"),
              HasSubstr("ps:0 and worker:0 the same address \"127.0.0.1:5\" (as \"localhost:5\")"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"ps": ["Host:5"], "worker": ["host:5"]}})"), HasSubstr("the same address"));
  // The same host on other ports, or other hosts on one port, are distinct tasks.
  EXPECT_TRUE(ParseTfConfig(R"({"cluster": {"ps": ["h:1", "h:2"], "worker": ["w:1", "w2:1"]}})").ok());
}

TEST(ClusterSpecTest, MalformedAddresses) {
  EXPECT_THAT(ErrorOf(R"({"cluster": {"worker": [""]}})"), HasSubstr("cluster.worker[0] is an empty address"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"worker": ["localhost"]}})"),
              HasSubstr("cluster.worker[0] \"localhost\" has no port"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"ps": ["h:99999"]}})"), HasSubstr("invalid port \"99999\"; ports are 1..65535"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"ps": ["h:abc"]}})"), HasSubstr("invalid port \"abc\""));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"ps": [":80"]}})"), HasSubstr("has no host"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"ps": [42]}})"), HasSubstr("cluster.ps[0] must be a \"host:port\" string"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"ps": "h:1"}})"), HasSubstr("cluster.ps must be a list"));
  EXPECT_TRUE(ParseTfConfig(R"({"cluster": {"ps": ["[::1]:2222"]}})").ok());
}

// --listen takes port 0 (a free port) but nothing beyond 65535, which the socket layer would wrap.
TEST(ClusterSpecTest, ListenAddresses) {
  EXPECT_TRUE(ValidateListenAddress("127.0.0.1:0", "--listen").ok());
  EXPECT_TRUE(ValidateListenAddress("[::]:2222", "--listen").ok());
  EXPECT_FALSE(ValidateAddress("127.0.0.1:0", "cluster.ps[0]").ok());
  const std::pair<const char*, const char*> bad[] = {
      {"127.0.0.1:70000", "--listen \"127.0.0.1:70000\" has an invalid port \"70000\"; ports are 0..65535"},
      {"127.0.0.1:4294967297", "invalid port \"4294967297\""},
      {"127.0.0.1:-1", "invalid port \"-1\""},
      {"localhost", "--listen \"localhost\" has no port"},
      {":2222", "has no host"},
      {"", "--listen is an empty address"},
      {"::1:2222", "write IPv6 hosts in brackets"},
  };
  for (const auto& [address, message] : bad) {
    EXPECT_THAT(ValidateListenAddress(address, "--listen").message(), HasSubstr(message)) << address;
  }
}

TEST(ClusterSpecTest, InvalidJsonGivesPosition) {
  EXPECT_THAT(ErrorOf("{\"cluster\": {\"worker\": [\"a:1\",]}}"),
              HasSubstr("TF_CONFIG is not valid JSON: error at line 1, column"));
  EXPECT_THAT(ErrorOf("{\n  \"cluster\": {\n    \"worker\": [\"a:1\"\n}"), HasSubstr("line 4"));
}

TEST(ClusterSpecTest, RpcLayerOnlyGrpc) {
  EXPECT_THAT(ErrorOf(R"({"cluster": {"ps": ["p:1"]}, "rpc_layer": "grpc+verbs"})"),
              HasSubstr("rpc_layer \"grpc+verbs\" is not served; pstrain speaks only \"grpc\""));
  EXPECT_TRUE(ParseTfConfig(R"({"cluster": {"ps": ["p:1"]}, "rpc_layer": "grpc"})").ok());
}

TEST(ClusterSpecTest, RoleChecks) {
  auto no_ps = ParseTfConfig(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})");
  ASSERT_TRUE(no_ps.ok());
  EXPECT_THAT(std::string(ValidateTaskForRole(*no_ps, "worker").message()), HasSubstr("cluster has no ps tasks"));
  auto no_worker = ParseTfConfig(R"({"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 0}})");
  ASSERT_TRUE(no_worker.ok());
  EXPECT_THAT(std::string(ValidateTaskForRole(*no_worker, "ps").message()), HasSubstr("cluster has no worker tasks"));
  auto wrong = ParseTfConfig(R"({"cluster": {"ps": ["a:1"], "worker": ["b:2"]}, "task": {"type": "ps", "index": 0}})");
  ASSERT_TRUE(wrong.ok());
  EXPECT_THAT(std::string(ValidateTaskForRole(*wrong, "worker").message()), HasSubstr("this is the worker binary"));
  auto no_task = ParseTfConfig(R"({"cluster": {"ps": ["a:1"], "worker": ["b:2"]}})");
  ASSERT_TRUE(no_task.ok());
  EXPECT_THAT(std::string(ValidateTaskForRole(*no_task, "ps").message()), HasSubstr("TF_CONFIG has no \"task\""));
}

TEST(ClusterSpecTest, TfConfigFromTheEnvironmentGiven) {
  auto getenv = [](const char* name) -> const char* {
    return std::string(name) == "TF_CONFIG" ? R"({"cluster": {"ps": ["a:1"], "worker": ["b:2"]},
                                                  "task": {"type": "ps", "index": 0}})"
                                            : nullptr;
  };
  absl::StatusOr<TfConfig> c = LoadTfConfig("", getenv);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->task.has_value());
  EXPECT_EQ(c->task->ToString(), "ps:0");
}

TEST(ClusterSpecTest, MissingTfConfig) {
  auto unset = [](const char*) -> const char* { return nullptr; };
  auto c = LoadTfConfig("", unset);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("TF_CONFIG is not set"));
  EXPECT_EQ(LoadTfConfig("/nonexistent/tf_config.json", unset).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(ErrorOf(R"({"task": {"type": "ps"}})"), HasSubstr("TF_CONFIG has no \"cluster\""));
}

// Integers beyond int64, deep nesting, huge values and typos in TF_CONFIG (classes: integer
// overflow into wrong messages, nesting, bounded excerpts).
TEST(ClusterSpecTest, HostileTfConfigsGetTheRightMessage) {
  const std::string cluster = R"("cluster": {"worker": ["a:1"], "ps": ["p:4"]})";
  struct Case {
    std::string doc;
    const char* message;
  };
  const Case cases[] = {
      {"{" + cluster + R"(, "task": {"type": "worker", "index": 18446744073709551615}})",
       "task.index 18446744073709551615 is out of range"},
      {"{" + cluster + R"(, "task": {"type": "worker", "index": 9223372036854775807}})", "is out of range"},
      {"{" + cluster + R"(, "task": {"type": "worker", "index": "99999999999999999999"}})", "is out of range"},
      {"{" + cluster + R"(, "task": {"type": "worker", "index": 1.5}})", "must be an integer or a string of digits"},
      {R"({"cluster": {"worker": {"4294967296": "a:1"}}})", "is not a task index"},
      {R"({"cluster": {"wokrer": ["a:1"]}})", "(did you mean \"worker\"?)"},
      {"{" + cluster + R"(, "task": {"type": "wroker", "index": 0}})", "(did you mean \"worker\"?)"},
      {"{\"cluster\": " + std::string(100000, '[') + std::string(100000, ']') + "}", "deeper than 64 levels"},
      {R"({"clsuter": {"worker": ["a:1"]}})", "did you mean \"cluster\" for \"clsuter\"?"},
  };
  for (const Case& c : cases) EXPECT_THAT(ErrorOf(c.doc), HasSubstr(c.message)) << c.doc.substr(0, 80);
  // A megabyte of task type is quoted in part, not whole.
  const std::string huge = "{" + cluster + R"(, "task": {"type": ")" + std::string(1 << 20, 'w') + R"(", "index": 0}})";
  EXPECT_LT(ErrorOf(huge).size(), 400u);
  auto no_task = ParseTfConfig("{" + cluster + R"(, "tsak": {"type": "worker", "index": 0}})");
  ASSERT_TRUE(no_task.ok());
  EXPECT_THAT(std::string(ValidateTaskForRole(*no_task, "worker").message()), HasSubstr("did you mean \"task\""));
}

}  // namespace
}  // namespace pstrain

namespace pstrain {
namespace {

// The TF_CONFIGs Kubeflow's TFJob operator writes (its pkg/controller.v1/tensorflow: genClusterSpec
// and, with enableDynamicWorker, convertClusterSpecToSparseClusterSpec; the addresses of its own
// test, test-tfjob-<type>-<i>.default.svc:2222).
TEST(KubeflowTfConfigTest, MasterIsTheChiefWithANote) {
  const std::string cluster =
      R"("cluster": {"master": ["test-tfjob-master-0.default.svc:2222"],
                     "ps": ["test-tfjob-ps-0.default.svc:2222"],
                     "worker": ["test-tfjob-worker-0.default.svc:2222", "test-tfjob-worker-1.default.svc:2222"]})";
  auto master = ParseTfConfig("{" + cluster + R"(, "task": {"type": "master", "index": 0}, "environment": "cloud"})");
  ASSERT_TRUE(master.ok()) << master.status();
  EXPECT_EQ(master->task->ToString(), "chief:0");
  EXPECT_EQ(*master->cluster.Address("chief", 0), "test-tfjob-master-0.default.svc:2222");
  EXPECT_TRUE(ValidateTaskForRole(*master, "chief").ok());
  ASSERT_EQ(master->notes.size(), 2u);
  EXPECT_THAT(master->notes[0], HasSubstr("names the chief \"master\""));
  EXPECT_THAT(master->notes[1], HasSubstr("task.type \"master\""));
  // A worker of the same job sees the master as the chief too.
  auto worker = ParseTfConfig("{" + cluster + R"(, "task": {"type": "worker", "index": 1}})");
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_EQ(worker->cluster.NumTasks("chief"), 1);
  EXPECT_TRUE(ValidateTaskForRole(*worker, "worker").ok());
  EXPECT_THAT(ErrorOf(R"({"cluster": {"chief": ["c:1"], "master": ["m:1"], "ps": ["p:1"], "worker": ["w:1"]}})"),
              HasSubstr("both \"chief\" and \"master\""));
}

// "master" is the chief's legacy name: a ps or worker given it is told which type to set, not to
// add a chief to the cluster.
TEST(KubeflowTfConfigTest, MasterGivenToAPsOrWorkerSaysWhatToSet) {
  const std::string error = ErrorOf(R"({"cluster": {"ps": ["p:1"], "worker": ["w:1"]}, "task": {"type": "master"}})");
  EXPECT_THAT(error, HasSubstr("task.type \"master\" is Kubeflow's legacy name of the chief"));
  EXPECT_THAT(error, HasSubstr("a ps or a worker sets task.type to \"ps\" or \"worker\""));
  auto c = ParseTfConfig(R"({"cluster": {"master": ["m:1"], "ps": ["p:1"], "worker": ["w:1"]}, "task": {"type": "master"}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ValidateTaskForRole(*c, "ps").message(),
            "task.type is \"master\" (Kubeflow's legacy name of the chief) but this is the ps binary; set task.type "
            "to \"ps\", or run pstrain-chief for the chief");
}

TEST(KubeflowTfConfigTest, SparseClusterOfAWorker) {
  auto c = ParseTfConfig(R"({"sparseCluster": {"worker": {"0": "test-tfjob-worker-0.default.svc:2222"},
      "ps": ["test-tfjob-ps-0.default.svc:2222", "test-tfjob-ps-1.default.svc:2222"]},
      "task": {"type": "worker", "index": 0}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->sparse);
  EXPECT_EQ(*c->cluster.Address("worker", 0), "test-tfjob-worker-0.default.svc:2222");
  EXPECT_EQ(c->cluster.NumTasks("ps"), 2);
  EXPECT_TRUE(ValidateTaskForRole(*c, "worker").ok());
  EXPECT_THAT(c->notes.at(0), HasSubstr("sparseCluster"));
}

TEST(KubeflowTfConfigTest, SparseClusterOfAPsHoldsOnlyItsOwnAddress) {
  auto ps0 = ParseTfConfig(R"({"sparseCluster": {"worker": {}, "ps": ["test-tfjob-ps-0.default.svc:2222"]},
                               "task": {"type": "ps", "index": 0}})");
  ASSERT_TRUE(ps0.ok()) << ps0.status();
  EXPECT_EQ(*ps0->cluster.Address("ps", 0), "test-tfjob-ps-0.default.svc:2222");
  EXPECT_TRUE(ValidateTaskForRole(*ps0, "ps").ok());
  // ps 1 gets its own address as the list's one entry.
  auto ps1 = ParseTfConfig(R"({"sparseCluster": {"worker": {}, "ps": ["test-tfjob-ps-1.default.svc:2222"]},
                               "task": {"type": "ps", "index": 1}})");
  ASSERT_TRUE(ps1.ok()) << ps1.status();
  EXPECT_EQ(*ps1->cluster.Address("ps", 1), "test-tfjob-ps-1.default.svc:2222");
  EXPECT_TRUE(ValidateTaskForRole(*ps1, "ps").ok());
}

TEST(KubeflowTfConfigTest, SparseClusterOfTheChiefIsRefusedWithAWayOut) {
  EXPECT_THAT(ErrorOf(R"({"sparseCluster": {"worker": {}, "ps": []}, "task": {"type": "chief", "index": 0}})"),
              HasSubstr("--tf_config=FILE"));
  EXPECT_THAT(ErrorOf(R"({"sparseCluster": {"worker": {}, "ps": []}, "task": {"type": "master", "index": 0}})"),
              HasSubstr("sparseCluster"));
  EXPECT_THAT(ErrorOf(R"({"cluster": {"ps": ["p:1"]}, "sparseCluster": {"ps": ["p:1"]}})"),
              HasSubstr("both \"cluster\" and \"sparseCluster\""));
}

}  // namespace
}  // namespace pstrain
