// The cluster from a Slurm step (slurm_cluster.h) and its place in a task's start-up
// (task_bootstrap.h): node lists, tasks per node, roles, ports, layouts, precedence and errors, all
// from a fake environment (never the process's).
#include "common/config/slurm_cluster.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/config/task_bootstrap.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using Vars = std::map<std::string, std::string>;

std::function<const char*(const char*)> GetenvOf(const Vars& vars) {
  return [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(SlurmHostlistTest, ExpandsNamesAndRangesInOrder) {
  EXPECT_THAT(*ExpandSlurmHostlist("n1"), ElementsAre("n1"));
  EXPECT_THAT(*ExpandSlurmHostlist("node[01-03,7]"), ElementsAre("node01", "node02", "node03", "node7"));
  EXPECT_THAT(*ExpandSlurmHostlist("n[1-2],m5,o[3-4,6,7-9]"),
              ElementsAre("n1", "n2", "m5", "o3", "o4", "o6", "o7", "o8", "o9"));
  // Slurm's order is kept: node9 before node10, b before a.
  EXPECT_THAT(*ExpandSlurmHostlist("node[9-10],b,a"), ElementsAre("node9", "node10", "b", "a"));
  EXPECT_THAT(*ExpandSlurmHostlist("gpu[008-011]"), ElementsAre("gpu008", "gpu009", "gpu010", "gpu011"));
  EXPECT_THAT(*ExpandSlurmHostlist("rack[1-2]-ib"), ElementsAre("rack1-ib", "rack2-ib"));
  EXPECT_THAT(*ExpandSlurmHostlist("r[1-2]n[1-2]"), ElementsAre("r1n1", "r1n2", "r2n1", "r2n2"));
  EXPECT_THAT(*ExpandSlurmHostlist("localhost"), ElementsAre("localhost"));
}

TEST(SlurmHostlistTest, RefusesMalformedLists) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"n[1-2", "'[' without its ']'"},
      {"n1-2]", "']' without its '['"},
      {"n[[1]]", "brackets inside brackets"},
      {"n[]", "empty range"},
      {"n[3-1]", "runs backwards"},
      {"n[a-b]", "not N or N-M"},
      {"n[1-]", "not N or N-M"},
      {"n[1-2-3]", "not N or N-M"},
      {"a,,b", "empty name between commas"},
      {"a,", "empty name between commas"},
      {"n[0-999999]", "more than 65536 names"},
      {"n[1-2],n2", "n2 is named twice"},
      {"n[1234567890]", "not N or N-M"},
  };
  for (const auto& [list, why] : cases) {
    absl::StatusOr<std::vector<std::string>> got = ExpandSlurmHostlist(list);
    ASSERT_FALSE(got.ok()) << list;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << list;
    EXPECT_THAT(Message(got.status()), HasSubstr(why)) << list;
    EXPECT_THAT(Message(got.status()), StartsWith("SLURM_STEP_NODELIST \"" + list + "\"")) << list;
  }
}

TEST(SlurmTasksPerNodeTest, ExpandsRepetitions) {
  EXPECT_THAT(*ExpandSlurmTasksPerNode("2(x3),1"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(*ExpandSlurmTasksPerNode("5"), ElementsAre(5));
  EXPECT_THAT(*ExpandSlurmTasksPerNode("3,2(x2)"), ElementsAre(3, 2, 2));
}

TEST(SlurmTasksPerNodeTest, RefusesMalformedCounts) {
  for (const char* bad : {"", "0", "2(x0)", "2(x3", "x", "2(y3)", "2,,1", "-1", "2(x)", "1(x70000)"}) {
    absl::StatusOr<std::vector<int>> got = ExpandSlurmTasksPerNode(bad);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_THAT(Message(got.status()), StartsWith(std::string("SLURM_STEP_TASKS_PER_NODE \"") + bad + "\"")) << bad;
  }
}

TEST(SlurmTasksFlagTest, KeepsTheOrderWritten) {
  absl::StatusOr<std::vector<SlurmRole>> roles = ParseSlurmTasks("ps:2,worker:4,chief:1,evaluator:1");
  ASSERT_TRUE(roles.ok()) << roles.status();
  ASSERT_EQ(roles->size(), 4u);
  EXPECT_EQ((*roles)[0].type, "ps");
  EXPECT_EQ((*roles)[0].count, 2);
  EXPECT_EQ((*roles)[1].type, "worker");
  EXPECT_EQ((*roles)[1].count, 4);
  EXPECT_EQ((*roles)[2].type, "chief");
  EXPECT_EQ((*roles)[3].type, "evaluator");
}

TEST(SlurmTasksFlagTest, RefusesWhatCannotTrain) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ps:2,worker:2", "no chief"},
      {"chief:1,worker:2", "no ps"},
      {"chief:1,ps:2", "no worker"},
      {"chief:2,ps:1,worker:1", "one chief, not 2"},
      {"chief:1,ps:1,worker:1,evaluator:2", "one evaluator, not 2"},
      {"master:1,ps:1,worker:1", "\"master:1\" is not TYPE:COUNT"},
      {"chief:1,ps:1,worker:1,ps:1", "ps is given twice"},
      {"chief:1,ps:0,worker:1", "\"ps:0\" needs a count from 1"},
      {"chief:1,ps,worker:1", "\"ps\" needs a count"},
      {"chief:1,ps:x,worker:1", "\"ps:x\" needs a count"},
      {"chief:1;ps:1;worker:1", "\"chief:1;ps:1;worker:1\" needs a count"},
  };
  for (const auto& [flag, why] : cases) {
    absl::StatusOr<std::vector<SlurmRole>> got = ParseSlurmTasks(flag);
    ASSERT_FALSE(got.ok()) << flag;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << flag;
    EXPECT_THAT(Message(got.status()), HasSubstr(why)) << flag;
    EXPECT_THAT(Message(got.status()), StartsWith("--slurm_tasks=" + flag)) << flag;
  }
}

// A step of 7 tasks on node[01-03]: 3 on node01, 2 on each of the others.
Vars SevenTaskStep(int rank) {
  return {
      {"SLURM_PROCID", std::to_string(rank)},   {"SLURM_STEP_NUM_TASKS", "7"}, {"SLURM_STEP_NODELIST", "node[01-03]"},
      {"SLURM_STEP_TASKS_PER_NODE", "3,2(x2)"}, {"SLURM_JOB_ID", "42"},        {"SLURM_STEP_ID", "0"}};
}

std::vector<std::string> Addresses(const SlurmCluster& c, const char* job) {
  return c.tf_config.cluster.Addresses(job);
}

TEST(SlurmClusterTest, BlockLayoutGivesRanksTheirRolesInOrderAndPortsByLocalIndex) {
  Vars vars = SevenTaskStep(4);
  vars["SLURMD_NODENAME"] = "node02";
  vars["SLURM_LOCALID"] = "1";
  absl::StatusOr<SlurmCluster> c = ResolveSlurmCluster("chief:1,ps:2,worker:4", 9000, GetenvOf(vars));
  ASSERT_TRUE(c.ok()) << c.status();
  // Ranks 0-2 on node01, 3-4 on node02, 5-6 on node03.
  EXPECT_THAT(Addresses(*c, kChief), ElementsAre("node01:9000"));
  EXPECT_THAT(Addresses(*c, kPs), ElementsAre("node01:9001", "node01:9002"));
  EXPECT_THAT(Addresses(*c, kWorker), ElementsAre("node02:9000", "node02:9001", "node03:9000", "node03:9001"));
  EXPECT_FALSE(c->tf_config.cluster.HasJob(kEvaluator));
  EXPECT_EQ(c->rank, 4);
  EXPECT_EQ(c->tf_config.task->ToString(), "worker:1");
  EXPECT_THAT(c->description, StartsWith("cluster from Slurm: rank 4 of 7 on node02 is worker:1 at node02:9001 (job 42 "
                                         "step 0, block distribution"));
  EXPECT_THAT(c->description, HasSubstr("worker: node02:9000, node02:9001, node03:9000, node03:9001"));
}

TEST(SlurmClusterTest, CyclicLayoutSpreadsConsecutiveRanksOverTheNodes) {
  Vars vars = SevenTaskStep(3);
  vars["SLURM_DISTRIBUTION"] = "cyclic:block";
  vars["SLURMD_NODENAME"] = "node01";
  vars["SLURM_LOCALID"] = "1";
  absl::StatusOr<SlurmCluster> c = ResolveSlurmCluster("chief:1,ps:2,worker:4", 8888, GetenvOf(vars));
  ASSERT_TRUE(c.ok()) << c.status();
  // Round-robin: node01 gets ranks 0, 3, 6; node02 1, 4; node03 2, 5.
  EXPECT_THAT(Addresses(*c, kChief), ElementsAre("node01:8888"));
  EXPECT_THAT(Addresses(*c, kPs), ElementsAre("node02:8888", "node03:8888"));
  EXPECT_THAT(Addresses(*c, kWorker), ElementsAre("node01:8889", "node02:8889", "node03:8889", "node01:8890"));
  EXPECT_EQ(c->tf_config.task->ToString(), "worker:0");
  EXPECT_THAT(c->description, HasSubstr("cyclic distribution"));
}

TEST(SlurmClusterTest, TheEvaluatorTakesARankButStaysOutOfTheCluster) {
  Vars vars = SevenTaskStep(6);
  absl::StatusOr<SlurmCluster> c = ResolveSlurmCluster("chief:1,ps:2,worker:3,evaluator:1", 8888, GetenvOf(vars));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tf_config.task->ToString(), "evaluator:0");
  EXPECT_FALSE(c->tf_config.cluster.HasJob(kEvaluator));
  EXPECT_EQ(c->tf_config.cluster.NumTasks(kWorker), 3);
  EXPECT_THAT(c->description, HasSubstr("is evaluator:0 (outside the training cluster)"));
  // The other ranks see the same cluster, without the evaluator.
  absl::StatusOr<SlurmCluster> chief =
      ResolveSlurmCluster("chief:1,ps:2,worker:3,evaluator:1", 8888, GetenvOf(SevenTaskStep(0)));
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_EQ(chief->tf_config.cluster.jobs(), c->tf_config.cluster.jobs());
}

// TensorFlow's resolver pairs tasks with GPUs and lists none on a node without any.
TEST(SlurmClusterTest, NodesWithoutGpusStillGetEveryTask) {
  Vars vars = SevenTaskStep(0);
  vars["CUDA_VISIBLE_DEVICES"] = "";
  absl::StatusOr<SlurmCluster> c = ResolveSlurmCluster("chief:1,ps:2,worker:4", 8888, GetenvOf(vars));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tf_config.cluster.NumTasks(kChief) + c->tf_config.cluster.NumTasks(kPs) +
                c->tf_config.cluster.NumTasks(kWorker),
            7);
}

struct BadStep {
  std::string name;
  std::string tasks;
  int port_base;
  Vars change;  // set ("" erases)
  absl::StatusCode code;
  std::string message;
};

TEST(SlurmClusterTest, ABadStepOrFlagIsNamedWithTheWayOut) {
  const std::vector<BadStep> cases = {
      {"counts",
       "chief:1,ps:2,worker:2",
       8888,
       {},
       absl::StatusCode::kInvalidArgument,
       "--slurm_tasks=chief:1,ps:2,worker:2 names 5 tasks but the step has 7 (SLURM_STEP_NUM_TASKS); start it with "
       "srun --ntasks=5"},
      {"no step",
       "chief:1,ps:2,worker:4",
       8888,
       {{"SLURM_PROCID", ""}},
       absl::StatusCode::kFailedPrecondition,
       "SLURM_PROCID is not set: --slurm_tasks needs a Slurm job step; start every task with srun"},
      {"no nodelist",
       "chief:1,ps:2,worker:4",
       8888,
       {{"SLURM_STEP_NODELIST", ""}},
       absl::StatusCode::kFailedPrecondition,
       "SLURM_STEP_NODELIST is not set"},
      {"rank",
       "chief:1,ps:2,worker:4",
       8888,
       {{"SLURM_PROCID", "7"}},
       absl::StatusCode::kInvalidArgument,
       "SLURM_PROCID is 7 but the step has 7"},
      {"rank text",
       "chief:1,ps:2,worker:4",
       8888,
       {{"SLURM_PROCID", "two"}},
       absl::StatusCode::kInvalidArgument,
       "SLURM_PROCID is \"two\", not a number"},
      {"nodes",
       "chief:1,ps:2,worker:4",
       8888,
       {{"SLURM_STEP_TASKS_PER_NODE", "3,4"}},
       absl::StatusCode::kInvalidArgument,
       "SLURM_STEP_TASKS_PER_NODE \"3,4\" counts 2 nodes but SLURM_STEP_NODELIST \"node[01-03]\" names 3"},
      {"sum",
       "chief:1,ps:2,worker:4",
       8888,
       {{"SLURM_STEP_TASKS_PER_NODE", "3(x3)"}},
       absl::StatusCode::kInvalidArgument,
       "adds up to 9 tasks but SLURM_STEP_NUM_TASKS is 7"},
      {"nodelist",
       "chief:1,ps:2,worker:4",
       8888,
       {{"SLURM_STEP_NODELIST", "node[01-03"}},
       absl::StatusCode::kInvalidArgument,
       "'[' without its ']'"},
      {"plane",
       "chief:1,ps:2,worker:4",
       8888,
       {{"SLURM_DISTRIBUTION", "plane=2"}},
       absl::StatusCode::kInvalidArgument,
       "SLURM_DISTRIBUTION is \"plane=2\": --slurm_tasks places ranks by block or cyclic distribution only"},
      {"elsewhere",
       "chief:1,ps:2,worker:4",
       8888,
       {{"SLURM_LOCALID", "2"}},
       absl::StatusCode::kInvalidArgument,
       "puts rank 0 on node01 as local task 0 but Slurm started it on node01 as local task 2"},
      {"other node",
       "chief:1,ps:2,worker:4",
       8888,
       {{"SLURMD_NODENAME", "node03"}},
       absl::StatusCode::kInvalidArgument,
       "but Slurm started it on node03"},
      {"ports",
       "chief:1,ps:2,worker:4",
       65534,
       {},
       absl::StatusCode::kInvalidArgument,
       "--slurm_port_base=65534: a node runs up to 3 tasks, at ports from the base on; give a base from 1 to 65533"},
      {"port zero", "chief:1,ps:2,worker:4", 0, {}, absl::StatusCode::kInvalidArgument, "--slurm_port_base=0"},
      {"flag", "chief:1,ps:2,worker:4,chief:1", 8888, {}, absl::StatusCode::kInvalidArgument, "chief is given twice"},
  };
  for (const BadStep& c : cases) {
    Vars vars = SevenTaskStep(0);
    for (const auto& [name, value] : c.change) {
      if (value.empty()) {
        vars.erase(name);
      } else {
        vars[name] = value;
      }
    }
    absl::StatusOr<SlurmCluster> got = ResolveSlurmCluster(c.tasks, c.port_base, GetenvOf(vars));
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_EQ(got.status().code(), c.code) << c.name << ": " << got.status();
    EXPECT_THAT(Message(got.status()), HasSubstr(c.message)) << c.name;
  }
}

// --- Where the cluster comes from, in a task's start-up.

struct Outcome {
  absl::StatusOr<TaskSetup> setup;
  std::vector<std::string> notes;
};

Outcome Start(const TaskFlagValues& flags, std::vector<const char*> types, const Vars& vars) {
  Outcome run;
  run.setup = SetUpTask(Env::Default(), flags, types, GetenvOf(vars),
                        [&run](const std::string& line) { run.notes.push_back(line); });
  return run;
}

TaskFlagValues SlurmTaskFlags() {
  TaskFlagValues flags;
  flags.slurm_tasks = "chief:1,ps:2,worker:4";
  return flags;
}

TEST(SlurmBootstrapTest, WithoutTfConfigTheTaskComesFromTheStep) {
  Outcome run = Start(SlurmTaskFlags(), {kPs}, SevenTaskStep(2));
  ASSERT_TRUE(run.setup.ok()) << run.setup.status();
  EXPECT_EQ(run.setup->task, "ps:1");
  EXPECT_EQ(run.setup->address, "node01:8890");
  EXPECT_EQ(run.setup->listen, "0.0.0.0:8890");
  EXPECT_EQ(run.setup->transport.caller, "ps:1");
  ASSERT_EQ(run.notes.size(), 1u);
  EXPECT_THAT(run.notes[0], StartsWith("cluster from Slurm: rank 2 of 7 on node01 is ps:1 at node01:8890"));
}

TEST(SlurmBootstrapTest, TheChiefBinaryRunsTheEvaluatorRankWithoutAnAddress) {
  TaskFlagValues flags;
  flags.slurm_tasks = "chief:1,ps:2,worker:3,evaluator:1";
  Outcome run = Start(flags, {kChief, kEvaluator}, SevenTaskStep(6));
  ASSERT_TRUE(run.setup.ok()) << run.setup.status();
  EXPECT_EQ(run.setup->type, kEvaluator);
  EXPECT_EQ(run.setup->address, "");
  EXPECT_EQ(run.setup->listen, "");
}

TEST(SlurmBootstrapTest, AnExplicitTfConfigWins) {
  const std::string tf_config =
      R"({"cluster": {"chief": ["10.0.0.1:2220"], "worker": ["10.0.0.2:2221"], "ps": ["10.0.0.4:2223"]},
          "task": {"type": "worker", "index": 0}})";
  Vars vars = SevenTaskStep(2);  // rank 2 would be ps:1
  vars["TF_CONFIG"] = tf_config;
  Outcome run = Start(SlurmTaskFlags(), {kWorker}, vars);
  ASSERT_TRUE(run.setup.ok()) << run.setup.status();
  EXPECT_EQ(run.setup->task, "worker:0");
  EXPECT_EQ(run.setup->address, "10.0.0.2:2221");
  EXPECT_THAT(run.notes, ElementsAre("cluster from TF_CONFIG (the TF_CONFIG variable); --slurm_tasks is ignored: an "
                                     "explicit TF_CONFIG wins"));

  // A TF_CONFIG file too.
  const std::string path = ::testing::TempDir() + "/slurm_tf_config_" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << tf_config;
  TaskFlagValues flags = SlurmTaskFlags();
  flags.tf_config = path;
  Outcome from_file = Start(flags, {kWorker}, SevenTaskStep(2));
  std::filesystem::remove(path);
  ASSERT_TRUE(from_file.setup.ok()) << from_file.setup.status();
  EXPECT_EQ(from_file.setup->task, "worker:0");
  EXPECT_THAT(from_file.notes, ElementsAre(HasSubstr("cluster from TF_CONFIG (the file " + path + ")")));

  // An empty TF_CONFIG is none: the step is used.
  vars["TF_CONFIG"] = "";
  Outcome empty = Start(SlurmTaskFlags(), {kPs}, vars);
  ASSERT_TRUE(empty.setup.ok()) << empty.setup.status();
  EXPECT_EQ(empty.setup->task, "ps:1");
}

TEST(SlurmBootstrapTest, ARankOfAnotherBinaryIsRefusedNamingTheRightOne) {
  Outcome run = Start(SlurmTaskFlags(), {kWorker}, SevenTaskStep(0));
  ASSERT_FALSE(run.setup.ok());
  EXPECT_EQ(run.setup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(run.setup.status()),
            "bad Slurm configuration: rank 0 is chief:0 by --slurm_tasks=chief:1,ps:2,worker:4 but this is "
            "pstrain-worker; start rank 0 with pstrain-chief (srun --multi-prog: deploy/slurm/)");
  EXPECT_TRUE(run.notes.empty());
}

TEST(SlurmBootstrapTest, ErrorsOfTheStepArePrefixed) {
  Vars vars = SevenTaskStep(0);
  vars["SLURM_STEP_NUM_TASKS"] = "5";
  Outcome run = Start(SlurmTaskFlags(), {kChief, kEvaluator}, vars);
  ASSERT_FALSE(run.setup.ok());
  EXPECT_THAT(Message(run.setup.status()),
              StartsWith("bad Slurm configuration: --slurm_tasks=chief:1,ps:2,worker:4 names 7 tasks but the step "
                         "has 5"));
}

TEST(SlurmBootstrapTest, InsideAStepWithNeitherTheErrorSaysHowToUseIt) {
  Outcome run = Start({}, {kPs}, SevenTaskStep(2));
  ASSERT_FALSE(run.setup.ok());
  EXPECT_EQ(run.setup.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(run.setup.status()), StartsWith("bad TF_CONFIG: TF_CONFIG is not set"));
  EXPECT_THAT(Message(run.setup.status()), HasSubstr("or, under srun, --slurm_tasks=chief:1,ps:N,worker:M"));
  // Outside a step the message is as before.
  Outcome outside = Start({}, {kPs}, {});
  ASSERT_FALSE(outside.setup.ok());
  EXPECT_THAT(Message(outside.setup.status()), Not(HasSubstr("slurm")));
}

}  // namespace
}  // namespace pstrain
