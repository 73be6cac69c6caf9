// A task's start-up (task_bootstrap.h): flags, TF_CONFIG and the environment (a fake getenv, never
// the process's) give one TaskSetup, or an error whose message names the problem.
#include "common/config/task_bootstrap.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util/test_certs.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kCluster[] =
    R"("cluster": {"chief": ["10.0.0.1:2220"], "worker": ["10.0.0.2:2221", "10.0.0.3:2222"], "ps": ["10.0.0.4:2223"]})";

std::string TfConfigFor(const std::string& type, int index) {
  return std::string("{") + kCluster + R"(, "task": {"type": ")" + type + R"(", "index": )" + std::to_string(index) +
         "}}";
}

// An environment of `vars` only.
class FakeEnvironment {
 public:
  explicit FakeEnvironment(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}
  Getenv getenv() const {
    return [this](const char* name) -> const char* {
      auto it = vars_.find(name);
      return it == vars_.end() ? nullptr : it->second.c_str();
    };
  }

 private:
  std::map<std::string, std::string> vars_;
};

struct Outcome {
  absl::StatusOr<TaskSetup> setup;
  std::vector<std::string> notes;
};

// SetUpTask in an environment of `vars` only, its notes kept.
Outcome Start(const TaskFlagValues& flags, std::vector<const char*> types, std::map<std::string, std::string> vars) {
  const FakeEnvironment env(std::move(vars));
  Outcome run;
  run.setup = SetUpTask(Env::Default(), flags, types, env.getenv(), [&run](const std::string& line) { run.notes.push_back(line); });
  return run;
}

TEST(TaskBootstrapTest, AWorkerListensAtItsPortOnEveryInterfaceByDefault) {
  Outcome run = Start({}, {kWorker}, {{"TF_CONFIG", TfConfigFor("worker", 1)}});
  ASSERT_TRUE(run.setup.ok()) << run.setup.status();
  const TaskSetup& s = *run.setup;
  EXPECT_EQ(s.type, kWorker);
  EXPECT_EQ(s.task, "worker:1");
  EXPECT_EQ(s.tf_config.task->index, 1);
  EXPECT_EQ(s.tf_config.cluster.NumTasks(kWorker), 2);
  EXPECT_EQ(s.address, "10.0.0.3:2222");
  EXPECT_EQ(s.listen, "0.0.0.0:2222");
  EXPECT_EQ(s.metrics_host, "0.0.0.0");
  EXPECT_EQ(s.metrics_port, 0);
  EXPECT_EQ(s.transport.kind, TransportKind::kTensorChannel);
  EXPECT_FALSE(s.transport.tls.enabled);
  EXPECT_EQ(s.transport.caller, "worker:1");
  EXPECT_EQ(s.cpu_level, DetectCpuLevel());  // no PSTRAIN_CPU_LEVEL: the best this CPU has
  EXPECT_THAT(run.notes, ::testing::ElementsAre("cluster from TF_CONFIG (the TF_CONFIG variable)"));
}

TEST(TaskBootstrapTest, FlagsAndTheEnvironmentAreHonoured) {
  TaskFlagValues flags;
  flags.listen = "127.0.0.1:0";
  flags.ps_transport = "grpc";
  flags.metrics_port = 9100;
  Outcome run = Start(flags, {kPs}, {{"TF_CONFIG", TfConfigFor("ps", 0)}, {kCpuLevelEnv, "baseline"}});
  ASSERT_TRUE(run.setup.ok()) << run.setup.status();
  EXPECT_EQ(run.setup->task, "ps:0");
  EXPECT_EQ(run.setup->address, "10.0.0.4:2223");
  EXPECT_EQ(run.setup->listen, "127.0.0.1:0");
  EXPECT_EQ(run.setup->metrics_host, "127.0.0.1");
  EXPECT_EQ(run.setup->metrics_port, 9100);
  EXPECT_EQ(run.setup->transport.kind, TransportKind::kGrpc);
  EXPECT_EQ(run.setup->cpu_level, CpuLevel::kBaseline);
  ASSERT_TRUE(ConfigureCpuLevel(nullptr).ok());  // back to the default for the other tests
}

TEST(TaskBootstrapTest, TheChiefBinaryAlsoRunsTheEvaluator) {
  Outcome chief = Start({}, {kChief, kEvaluator}, {{"TF_CONFIG", TfConfigFor("chief", 0)}});
  ASSERT_TRUE(chief.setup.ok()) << chief.setup.status();
  EXPECT_EQ(chief.setup->type, kChief);
  EXPECT_EQ(chief.setup->listen, "0.0.0.0:2220");

  // The evaluator is not in the cluster (as TensorFlow's): no address, nothing to listen on.
  Outcome evaluator = Start({}, {kChief, kEvaluator}, {{"TF_CONFIG", TfConfigFor("evaluator", 0)}});
  ASSERT_TRUE(evaluator.setup.ok()) << evaluator.setup.status();
  EXPECT_EQ(evaluator.setup->type, kEvaluator);
  EXPECT_EQ(evaluator.setup->task, "evaluator:0");
  EXPECT_EQ(evaluator.setup->address, "");
  EXPECT_EQ(evaluator.setup->listen, "");
  EXPECT_EQ(evaluator.setup->metrics_host, "0.0.0.0");
}

TEST(TaskBootstrapTest, BadConfigurationsAreNamed) {
  struct Case {
    const char* name;
    TaskFlagValues flags;
    std::vector<const char*> types;
    std::map<std::string, std::string> vars;
    absl::StatusCode code;
    std::string message;
  };
  TaskFlagValues listen_without_port;
  listen_without_port.listen = "localhost";
  TaskFlagValues listen_port_too_big;
  listen_port_too_big.listen = "127.0.0.1:70000";
  TaskFlagValues udp;
  udp.ps_transport = "udp";
  const std::string worker = TfConfigFor("worker", 0);
  const Case cases[] = {
      {"no TF_CONFIG", {}, {kWorker}, {}, absl::StatusCode::kFailedPrecondition, "bad TF_CONFIG: TF_CONFIG is not set"},
      {"malformed",
       {},
       {kWorker},
       {{"TF_CONFIG", "{\"cluster\": {\"ps\": ["}},
       absl::StatusCode::kInvalidArgument,
       "bad TF_CONFIG: "},
      {"wrong role",
       {},
       {kChief, kEvaluator},
       {{"TF_CONFIG", worker}},
       absl::StatusCode::kInvalidArgument,
       "bad TF_CONFIG: task.type is \"worker\" but this is the chief binary"},
      {"no task",
       {},
       {kPs},
       {{"TF_CONFIG", std::string("{") + kCluster + "}"}},
       absl::StatusCode::kInvalidArgument,
       "bad TF_CONFIG: TF_CONFIG has no \"task\"; this binary needs {\"type\": \"ps\""},
      {"index beyond the cluster",
       {},
       {kWorker},
       {{"TF_CONFIG", TfConfigFor("worker", 5)}},
       absl::StatusCode::kInvalidArgument,
       "bad TF_CONFIG: task.index 5 is out of range"},
      {"listen without a port",
       listen_without_port,
       {kWorker},
       {{"TF_CONFIG", worker}},
       absl::StatusCode::kInvalidArgument,
       "bad configuration: --listen \"localhost\" has no port"},
      {"listen port too big",
       listen_port_too_big,
       {kChief, kEvaluator},
       {{"TF_CONFIG", TfConfigFor("chief", 0)}},
       absl::StatusCode::kInvalidArgument,
       "bad configuration: --listen \"127.0.0.1:70000\" has an invalid port \"70000\""},
      {"unknown ps transport",
       udp,
       {kWorker},
       {{"TF_CONFIG", worker}},
       absl::StatusCode::kInvalidArgument,
       "bad configuration: unknown ps transport \"udp\""},
      {"unknown CPU level",
       {},
       {kPs},
       {{"TF_CONFIG", TfConfigFor("ps", 0)}, {kCpuLevelEnv, "avx9"}},
       absl::StatusCode::kInvalidArgument,
       "bad configuration: PSTRAIN_CPU_LEVEL=\"avx9\" is not a CPU level"},
  };
  for (const Case& c : cases) {
    Outcome run = Start(c.flags, c.types, c.vars);
    ASSERT_FALSE(run.setup.ok()) << c.name;
    EXPECT_EQ(run.setup.status().code(), c.code) << c.name << ": " << run.setup.status();
    EXPECT_THAT(std::string(run.setup.status().message()), StartsWith(c.message)) << c.name;
  }
  EXPECT_EQ(ActiveCpuLevel(), DetectCpuLevel());  // a bad level changes nothing
}

// A Kubeflow shape is explained even when the task is then refused.
TEST(TaskBootstrapTest, NotesComeBeforeARefusal) {
  const std::string tf_config =
      R"({"cluster": {"master": ["10.0.0.1:2220"], "worker": ["10.0.0.2:2221"], "ps": ["10.0.0.4:2223"]},
          "task": {"type": "master", "index": 0}})";
  Outcome run = Start({}, {kWorker}, {{"TF_CONFIG", tf_config}});
  ASSERT_FALSE(run.setup.ok());
  EXPECT_THAT(std::string(run.setup.status().message()), HasSubstr("task.type is \"master\" (Kubeflow's legacy name of the chief)"));
  ASSERT_EQ(run.notes.size(), 2u);
  EXPECT_THAT(run.notes[0], HasSubstr("cluster.master is the chief"));
  EXPECT_THAT(run.notes[1], HasSubstr("is run as the chief"));
}

class TaskBootstrapTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/task_bootstrap_certs_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
    const TlsConfig worker = ca_.For("worker:0");
    Write("ca.crt", worker.ca_pem);
    Write("worker-0.crt", worker.cert_pem);
    Write("worker-0.key", worker.key_pem);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; }

  testing_util::TestCa ca_;
  std::string dir_;
};

TEST_F(TaskBootstrapTlsTest, TheTlsDirComesFromTheFlagOrTheEnvironment) {
  TaskFlagValues flags;
  flags.tls.dir = dir_;
  Outcome by_flag = Start(flags, {kWorker}, {{"TF_CONFIG", TfConfigFor("worker", 0)}});
  ASSERT_TRUE(by_flag.setup.ok()) << by_flag.setup.status();
  EXPECT_TRUE(by_flag.setup->transport.tls.enabled);
  EXPECT_EQ(by_flag.setup->transport.tls.identity, "worker:0");

  Outcome by_env = Start({}, {kWorker}, {{"TF_CONFIG", TfConfigFor("worker", 0)}, {"PSTRAIN_TLS_DIR", dir_}});
  ASSERT_TRUE(by_env.setup.ok()) << by_env.setup.status();
  EXPECT_TRUE(by_env.setup->transport.tls.enabled);
}

TEST_F(TaskBootstrapTlsTest, AnotherTasksCertificateOrAMissingFileIsABadConfiguration) {
  TaskFlagValues flags;
  flags.tls = {"", dir_ + "/ca.crt", dir_ + "/worker-0.crt", dir_ + "/worker-0.key"};
  Outcome foreign = Start(flags, {kWorker}, {{"TF_CONFIG", TfConfigFor("worker", 1)}});
  ASSERT_FALSE(foreign.setup.ok());
  EXPECT_EQ(foreign.setup.status().code(), absl::StatusCode::kInvalidArgument) << foreign.setup.status();
  EXPECT_THAT(std::string(foreign.setup.status().message()), StartsWith("bad configuration: "));
  EXPECT_THAT(std::string(foreign.setup.status().message()), HasSubstr("is for worker:0, but this task is worker:1"));

  Outcome missing =
      Start({}, {kWorker}, {{"TF_CONFIG", TfConfigFor("worker", 0)}, {"PSTRAIN_TLS_DIR", dir_ + "/nope"}});
  ASSERT_FALSE(missing.setup.ok());
  EXPECT_EQ(missing.setup.status().code(), absl::StatusCode::kNotFound) << missing.setup.status();
  EXPECT_THAT(std::string(missing.setup.status().message()), HasSubstr(dir_ + "/nope"));
}

}  // namespace
}  // namespace pstrain
