#include "worker/train_command.h"

#include <cstdio>
#include <iostream>
#include <thread>

#include "absl/strings/str_format.h"
#include "common/command_line.h"
#include "common/exit_codes.h"
#include "common/json_util.h"
#include "common/status_macros.h"
#include "worker/device.h"
#include "worker/keras_updater.h"
#include "worker/local_trainer.h"

namespace pstrain {
namespace {

const std::vector<FlagDef>& TrainFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"job", "cnn", "job spec: a preset (linear, mlp, cnn, ctr) or a JSON file"},
      {"epochs", "", "epochs to train (overrides the job's schedule)"},
      {"steps", "", "steps to train (overrides the job's schedule and --epochs)"},
      {"threads", "", "compute threads (default: all cores)"},
      {"replicas", "1", "local replicas: each batch is split over them, gradients summed"},
      {"device", "cpu", "where gradients are computed: cpu, cuda or cuda:N (builds with CUDA)"},
      {"data_dir", "", "directory of the dataset files (overrides the job's data.dir)"},
      {"seed", "", "job seed (initial weights and shuffles)"},
      {"eval", "true", "evaluate on the test set after every epoch", true},
  };
  return *flags;
}

absl::StatusOr<int64_t> IntFlag(const CommandLine& cl, const std::string& name, int64_t fallback, int64_t min) {
  if (!cl.Given(name) && cl.Get(name).empty()) return fallback;
  ASSIGN_OR_RETURN(int64_t v, cl.GetInt(name));
  if (v < min) return absl::InvalidArgumentError(absl::StrCat("--", name, " must be at least ", min, ", got ", v));
  return v;
}

nlohmann::json ReportJson(const EpochReport& r) {
  return {{"epoch", r.epoch},
          {"steps", r.steps},
          {"train_loss", r.train_loss},
          {"train_accuracy", r.train_accuracy},
          {"test_loss", r.test_loss},
          {"test_accuracy", r.test_accuracy},
          {"train_seconds", r.train_seconds},
          {"eval_seconds", r.eval_seconds},
          {"examples_per_second", r.examples_per_second}};
}

absl::Status RunTrain(const CommandLine& cl) {
  ASSIGN_OR_RETURN(JobSpec job, LoadJobSpec(cl.Get("job")));
  LocalTrainOptions options;
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  ASSIGN_OR_RETURN(int64_t threads, IntFlag(cl, "threads", cores, 1));
  ASSIGN_OR_RETURN(int64_t replicas, IntFlag(cl, "replicas", 1, 1));
  ASSIGN_OR_RETURN(options.epochs, IntFlag(cl, "epochs", 0, 1));
  ASSIGN_OR_RETURN(options.steps, IntFlag(cl, "steps", 0, 1));
  ASSIGN_OR_RETURN(int64_t seed, IntFlag(cl, "seed", static_cast<int64_t>(job.seed), 0));
  ASSIGN_OR_RETURN(options.evaluate, cl.GetBool("eval"));
  options.threads = static_cast<int>(threads);
  options.replicas = static_cast<int>(replicas);
  options.data_dir = cl.Get("data_dir");
  job.seed = static_cast<uint64_t>(seed);
  ASSIGN_OR_RETURN(GradientComputerFactory compute, ComputeFactoryForDevice(cl.Get("device"), options.replicas));
  ASSIGN_OR_RETURN(auto trainer, LocalTrainer::Create(job, options, InitializeVariable, NewKerasUpdater, compute));
  const int64_t total = trainer->total_steps(), per_epoch = trainer->steps_per_epoch();
  const int64_t epochs = (total + per_epoch - 1) / per_epoch;
  std::fprintf(stderr, "pstrain train: job %s, %lld steps (%lld per epoch) of batch %lld, %d threads, %d replicas\n",
               job.name.c_str(), static_cast<long long>(total), static_cast<long long>(per_epoch),
               static_cast<long long>(job.batch_size), options.threads, options.replicas);
  const bool classification = job.model.loss == "sparse_categorical_crossentropy";
  nlohmann::json per_epoch_json = nlohmann::json::array();
  double train_seconds = 0, examples = 0;
  EpochReport last;
  RETURN_IF_ERROR(trainer->Run([&](const EpochReport& r) {
    std::string line = absl::StrFormat("epoch %lld/%lld  step %lld  train loss %.4f", r.epoch, epochs, r.steps,
                                       r.train_loss);
    if (classification) absl::StrAppendFormat(&line, " acc %.4f", r.train_accuracy);
    if (options.evaluate) absl::StrAppendFormat(&line, "  test loss %.4f", r.test_loss);
    if (options.evaluate && classification) absl::StrAppendFormat(&line, " acc %.4f", r.test_accuracy);
    absl::StrAppendFormat(&line, "  %.1fs  %.0f examples/s", r.train_seconds, r.examples_per_second);
    std::cout << line << std::endl;
    per_epoch_json.push_back(ReportJson(r));
    train_seconds += r.train_seconds;
    examples += r.examples_per_second * r.train_seconds;
    last = r;
  }));
  nlohmann::json summary = {{"job", job.name},
                            {"steps", last.steps},
                            {"epochs", per_epoch_json.size()},
                            {"batch_size", job.batch_size},
                            {"threads", options.threads},
                            {"replicas", options.replicas},
                            {"seed", job.seed},
                            {"train_seconds", train_seconds},
                            {"examples_per_second", train_seconds > 0 ? examples / train_seconds : 0},
                            {"final_train_loss", last.train_loss},
                            {"final_train_accuracy", last.train_accuracy},
                            {"per_epoch", per_epoch_json}};
  if (options.evaluate) {
    summary["final_test_loss"] = last.test_loss;
    summary["final_test_accuracy"] = last.test_accuracy;
  }
  std::cout << DumpJson(summary) << std::endl;
  return absl::OkStatus();
}

}  // namespace

int TrainMain(int argc, char** argv) {
  const std::string summary =
      "Trains a job in this one process, no cluster: the same initial weights, data shards, loss scaling and\n"
      "optimizer as the cluster. Examples:\n"
      "  pstrain train --job=cnn --epochs=10 --threads=2\n"
      "  pstrain train --job=cnn --steps=300 --eval=false";
  auto cl = CommandLine::Parse("pstrain train", argc, argv, 2, TrainFlags());
  if (!cl.ok()) {
    std::cerr << "pstrain train: " << cl.status().message() << "\n";
    return kExitBadConfiguration;
  }
  if (cl->help()) {
    std::cout << FlagUsage("pstrain train", summary, TrainFlags());
    return kExitOk;
  }
  absl::Status s = RunTrain(*cl);
  if (!s.ok()) {
    std::cerr << "pstrain train: " << s.message() << "\n";
    return s.code() == absl::StatusCode::kDataLoss ? kExitBadConfiguration : ExitCodeFor(s);
  }
  return kExitOk;
}

}  // namespace pstrain
