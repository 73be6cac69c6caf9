// Bad input to the processes that compute gradients: data files whose headers or cells lie
// (class: sizes trusted before allocating), and training that turns NaN or infinite (class:
// training garbage in silence; Keras's TerminateOnNaN).
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"
#include "common/platform/env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/data/dataset.h"
#include "worker/data/file_reader.h"
#include "worker/local/local_trainer.h"
#include "worker/step/divergence_check.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

std::string Temp(const std::string& name) { return absl::StrCat(::testing::TempDir(), "/bad_input_", ::getpid(), "_", name); }

std::string BigEndian(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
}

TEST(DatasetBadInputTest, IdxHeadersThatPromiseTooMuchAreRefused) {
  const std::string labels = Temp("labels");
  std::ofstream(labels, std::ios::binary) << BigEndian(0x801) << BigEndian(2) << "\x01\x02";
  // dims whose product overflows int64 or exceeds the bytes present.
  const uint32_t dims[][3] = {{0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {2, 0x80000000, 0x80000000}, {2, 28, 28}};
  for (const auto& d : dims) {
    const std::string images = Temp("images");
    std::ofstream(images, std::ios::binary) << BigEndian(0x803) << BigEndian(d[0]) << BigEndian(d[1])
                                            << BigEndian(d[2]) << std::string(16, '\0');
    absl::StatusOr<Dataset> data = LoadIdxDataset(Env::Default(), images, labels);
    ASSERT_FALSE(data.ok()) << d[0] << "x" << d[1] << "x" << d[2];
    EXPECT_EQ(data.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(data.status().message()), HasSubstr(images));
  }
}

TEST(DatasetBadInputTest, FilesLargerThanTheBudgetStopWhileReading) {
  // A gzip bomb: 20 MB of zeros compress to ~20 KB.
  const std::string bomb = Temp("bomb.gz");
  gzFile f = gzopen(bomb.c_str(), "wb9");
  const std::string zeros(1 << 20, '\0');
  for (int i = 0; i < 20; ++i) gzwrite(f, zeros.data(), static_cast<unsigned>(zeros.size()));
  gzclose(f);
  absl::StatusOr<std::string> data = ReadMaybeGzipFile(Env::Default(), bomb, 1 << 20);
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(std::string(data.status().message()), HasSubstr("holds more than"));
  EXPECT_TRUE(ReadMaybeGzipFile(Env::Default(), bomb, 32 << 20).ok());
  EXPECT_FALSE(ReadMaybeGzipFile(Env::Default(), "/dev/zero", 1 << 20).ok());           // endless
  EXPECT_FALSE(ReadMaybeGzipFile(Env::Default(), ::testing::TempDir(), 1 << 20).ok());  // a directory
  // A FIFO without a writer: refused at once (an open for reading would wait forever).
  const std::string fifo = Temp("fifo");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  absl::StatusOr<std::string> from_fifo = ReadMaybeGzipFile(Env::Default(), fifo, 1 << 20);
  EXPECT_EQ(from_fifo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(from_fifo.status().message()), HasSubstr("data file " + fifo + " is a FIFO"));
}

TEST(DatasetBadInputTest, CsvCellsMustBeFiniteAndLabelsClassIds) {
  const struct {
    const char* line;
    const char* message;
  } cases[] = {{"1,nan,0", "not a finite number"},
               {"1,inf,0", "not a finite number"},
               {"1,-1e39,0", "not a finite number"},
               {"1,2,1e20", "is not a class id"},
               {"1,2,-1", "is not a class id"},
               {"1,2,2.5", "is not a class id"}};
  for (const auto& c : cases) {
    const std::string path = Temp("bad.csv");
    std::ofstream(path) << "0,0,0\n" << c.line << "\n";
    absl::StatusOr<Dataset> d = LoadCsvDataset(Env::Default(), path, -1, false, true);
    ASSERT_FALSE(d.ok()) << c.line;
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(path + ":2"));
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(c.message)) << c.line;
  }
}

TEST(DivergenceCheckTest, NamesTheStepAndTheVariable) {
  const std::vector<VariableSpec> vars = {{"dense/kernel", {2, 1}}, {"dense/bias", {1}}};
  std::vector<Tensor> values;
  values.emplace_back(DType::kFloat32, std::vector<int64_t>{2, 1});
  values.emplace_back(DType::kFloat32, std::vector<int64_t>{1});
  EXPECT_TRUE(CheckVariablesFinite("step 3", "after the update", vars, values).ok());
  EXPECT_TRUE(CheckStepFinite("step 3", 0.5, vars, values).ok());
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    values[1].flat()[0] = bad;
    absl::Status s = CheckVariablesFinite("step 7", "after the update", vars, values);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("training diverged at step 7: variable dense/bias holds 1 non-finite values"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("terminate_on_nan"));
    s = CheckStepFinite("step 7", 0.5, vars, values);
    EXPECT_THAT(std::string(s.message()), HasSubstr("the gradient of variable dense/bias holds 1 non-finite"));
  }
  values[1].flat()[0] = 0;
  absl::Status s = CheckStepFinite("step 9", std::nan(""), vars, values);
  EXPECT_THAT(std::string(s.message()), HasSubstr("the training loss is NaN; every gradient is finite"));
}

// Plain SGD, as the ps applies it, so an absurd learning rate blows up.
class Sgd : public ParameterUpdater {
 public:
  explicit Sgd(double lr) : lr_(lr) {}
  absl::Status Apply(const std::vector<Tensor>& grads, std::vector<Tensor>* params) override {
    for (size_t v = 0; v < grads.size(); ++v) {
      for (int64_t i = 0; i < grads[v].num_elements(); ++i) {
        (*params)[v].flat()[i] = static_cast<float>((*params)[v].flat()[i] - lr_ * grads[v].flat()[i]);
      }
    }
    return absl::OkStatus();
  }

 private:
  double lr_;
};

TEST(DivergenceCheckTest, LocalTrainingStopsAtTheFirstNonFiniteStep) {
  for (bool terminate : {true, false}) {
    JobSpec job = *JobSpecFromJson(*ParseJson(R"({"model": {"input_shape": [2], "loss": "mse",
        "layers": [{"type": "dense", "units": 1}]}, "optimizer": {"type": "sgd", "learning_rate": 1e30},
        "data": {"dataset": "synthetic_linear", "num_examples": 256}, "batch_size": 32,
        "schedule": {"steps": 20}})", "test"));
    job.terminate_on_nan = terminate;
    job.divergence_loss_factor = 0;  // the loss-growth rule would stop it first (tested below)
    LocalTrainOptions options;
    options.evaluate = false;
    auto init = [](const VariableSpec&, uint64_t, Tensor* t) {
      for (float& v : t->flat()) v = 0.1f;
      return absl::OkStatus();
    };
    auto sgd = [](const OptimizerSpec& o, const std::vector<VariableSpec>&, uint64_t)
        -> absl::StatusOr<std::unique_ptr<ParameterUpdater>> { return std::make_unique<Sgd>(o.learning_rate.initial); };
    auto trainer = LocalTrainer::Create(Env::Default(), job, options, init, sgd, NewCpuGradientComputer);
    ASSERT_TRUE(trainer.ok()) << trainer.status();
    absl::Status s = (*trainer)->Run([](const EpochReport&) {});
    if (!terminate) {
      EXPECT_TRUE(s.ok()) << s;  // off: trains on, as the user asked
      continue;
    }
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(s.message()), ::testing::ContainsRegex("training diverged at step [0-9]+: "));
    EXPECT_THAT(std::string(s.message()), HasSubstr("dense/"));
  }
}

}  // namespace
}  // namespace pstrain

namespace pstrain {
namespace {

// Finite garbage: a loss that grows by orders of magnitude without turning NaN is divergence.
TEST(LossGrowthBadInputTest, LossFarAboveTheFirstStepsStopsTheJob) {
  LossGrowthCheck check(1000);
  EXPECT_TRUE(check.Observe("step 1", 2.3).ok());
  EXPECT_TRUE(check.Observe("step 2", 40).ok());  // noisy, but within 1000 x the reference
  const absl::Status s = check.Observe("step 3", 1e31);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("training diverged at step 3: the training loss is 1e+31"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("divergence_loss_factor"));
}

TEST(LossGrowthBadInputTest, SmallLossesUseAReferenceOfAtLeastOneAndOffMeansOff) {
  LossGrowthCheck check(1000);
  EXPECT_TRUE(check.Observe("step 1", 1e-6).ok());  // a trained model resumed: a tiny loss
  EXPECT_TRUE(check.Observe("step 2", 500).ok());   // not above 1000 x max(1, 1e-6)
  EXPECT_FALSE(check.Observe("step 3", 2e6).ok());
  LossGrowthCheck off(0);
  EXPECT_TRUE(off.Observe("step 1", 1).ok());
  EXPECT_TRUE(off.Observe("step 2", 1e31).ok());
  LossGrowthCheck nan(1000);  // non-finite losses are TerminateOnNaN's
  EXPECT_TRUE(nan.Observe("step 1", 1).ok());
  EXPECT_TRUE(nan.Observe("step 2", std::numeric_limits<double>::infinity()).ok());
}

}  // namespace
}  // namespace pstrain

namespace pstrain {
namespace {

// A loss that already grows during the first steps does not raise its own reference.
TEST(LossGrowthBadInputTest, ALossGrowingFromTheStartIsCaughtEarly) {
  LossGrowthCheck check(1000);
  EXPECT_TRUE(check.Observe("step 1", 1.5).ok());
  EXPECT_TRUE(check.Observe("step 2", 150).ok());
  EXPECT_FALSE(check.Observe("step 3", 15000).ok());  // 1000 x the lowest (1.5), not x the mean
}

}  // namespace
}  // namespace pstrain
