#include "chief/tool/train_command.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/str_format.h"
#include "chief/checkpoint/checkpoint_manager.h"
#include "chief/checkpoint/initial_dynamic_tables.h"
#include "common/config/command_line.h"
#include "common/config/json_util.h"
#include "common/graph/initial_weights.h"
#include "common/plan/dynamic_shards.h"
#include "common/plan/memory_budget.h"
#include "common/plan/optimizer_defaults.h"
#include "common/platform/cpu_level.h"
#include "common/platform/exit_codes.h"
#include "common/platform/status_macros.h"
#include "ps/store/ps_server.h"
#include "worker/data/ctr_dataset.h"
#include "worker/local/keras_updater.h"
#include "worker/local/local_trainer.h"
#include "worker/step/device.h"

namespace pstrain {
namespace {

// --init_from: the variables start from a Keras weights file (ReadInitialWeights checks every one
// of the model's against its shape) instead of their initializers; dynamic tables from the rows it
// keys (their checkpoint bytes in `dynamic`, by variable, for RestoreDynamicTable).
struct InitFrom {
  VariableInitializer initialize;
  InitialDynamicFiles dynamic;
  std::map<std::string, std::string> key_sources;  // per dynamic table, for the log
};
absl::StatusOr<InitFrom> InitializerFromFlag(Env* env, const std::string& path, const JobSpec& job) {
  InitFrom out;
  if (path.empty()) {
    out.initialize = InitializeVariable;
    return out;
  }
  ASSIGN_OR_RETURN(InitialWeights read, ReadInitialWeights(env, job, path));
  ASSIGN_OR_RETURN(out.dynamic, InitialDynamicTableFiles(job, read, /*num_ps=*/1));
  out.key_sources = read.key_sources;
  auto weights = std::make_shared<const NamedWeights>(std::move(read.values));
  out.initialize = [weights, path](const VariableSpec& var, uint64_t, Tensor* value) -> absl::Status {
    auto it = weights->find(var.name);
    if (it == weights->end() || it->second.shape != var.shape) {  // checked by ReadInitialWeights
      return absl::InternalError(
          absl::StrCat("--init_from=", path, " has no value of shape ", ShapeString(var.shape), " for ", var.name));
    }
    *value = Tensor(DType::kFloat32, var.shape);
    std::copy(it->second.values.begin(), it->second.values.end(), value->data<float>());
    return absl::OkStatus();
  };
  return out;
}

const std::vector<FlagDef>& TrainFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"job", "cnn", "job spec: a preset (linear, mlp, cnn, ctr) or a JSON file"},
      {"model_json", "", "a Keras model's to_json() file: replaces the job's model, keeping its loss and data"},
      {"init_from", "",
       "Keras weights (.weights.h5 of Keras 3, or Keras 2's .h5) of the job's Keras model: its starting values"},
      {"epochs", "", "epochs to train (overrides the job's schedule)"},
      {"steps", "", "steps to train (overrides the job's schedule and --epochs)"},
      {"threads", "", "compute threads (default: all cores)"},
      {"replicas", "1", "local replicas: each batch is split over them, gradients summed"},
      {"device", "cpu", "where gradients are computed: cpu, cuda or cuda:N (builds with CUDA)"},
      {"data_dir", "",
       "directory of the dataset files (overrides the job's data.dir; criteo: the cache of the default set)"},
      {"train_files", "", "criteo and tfrecord jobs: comma-separated training files or globs (overrides data.train_files)"},
      {"test_files", "", "criteo and tfrecord jobs: comma-separated test files or globs (overrides data.test_files)"},
      {"seed", "", "job seed (initial weights and shuffles)"},
      {"eval", "true", "evaluate on the test set after every epoch", true},
      {"report_every_steps", "0",
       "also report (train figures of the window, and the test set with --eval) after every this many steps of an "
       "epoch; 0: once per epoch"},
      {"terminate_on_nan", "",
       "stop when a loss, gradient or variable turns NaN/Inf, naming the step and variable (default: the job's "
       "terminate_on_nan, true unless it says false)",
       true},
      {"divergence_loss_factor", "",
       "stop as diverged when a step's loss passes this many times the lowest loss of the first 10 steps (at least "
       "1); 0: off (default: the job's divergence_loss_factor, 1000 unless it says otherwise)"},
      {"model_dir", "",
       "write a checkpoint of the trained variables at the end to MODEL_DIR/ckpt-<step> (the cluster's format: "
       "pstrain evaluate and inspect read it); other checkpoints there are kept"},
      {"memory_budget_bytes", "0",
       "most memory the model, gradients, optimizer slots, data and activations may take (0: half of this "
       "host's memory)"},
  };
  return *flags;
}

absl::StatusOr<int64_t> IntFlag(const CommandLine& cl, const std::string& name, int64_t fallback,
                                const IntRange& range) {
  if (!cl.Given(name) && cl.Get(name).empty()) return fallback;
  return cl.GetInt(name, range);
}

// Refuses a job whose model, gradients, optimizer slots, data and activations exceed the budget.
absl::Status CheckTrainMemory(Env* env, const CommandLine& cl, const JobSpec& job) {
  ASSIGN_OR_RETURN(int64_t flag, cl.GetInt("memory_budget_bytes", IntAtLeast(0)));
  ASSIGN_OR_RETURN(int64_t budget, MemoryBudgetBytes(env, flag));
  ASSIGN_OR_RETURN(int slots, OptimizerSlotCount(job.optimizer));
  const int64_t examples = ExamplesInMemory(job.data);
  const int64_t batch = examples > 0 ? std::min(job.batch_size, examples) : job.batch_size;
  ASSIGN_OR_RETURN(ComputeBytes bytes,
                   EstimateComputeBytes(job.model, batch, examples, slots, /*applies_updates=*/true));
  return CheckMemoryBudget("pstrain train", bytes.total(), bytes.Describe(), budget,
                           absl::StrCat("raise ", kMemoryBudgetFlag, ", lower batch_size, or make the model smaller"));
}

// --model_dir: the trained variables as a checkpoint "ckpt-<step>" as the chief commits one. Each
// variable is one whole slice without optimizer slots (CheckpointManager::SaveValues); a dynamic
// table is the file its only ps shard would write, DynamicShardFileName(table, 0, 1), with its
// rows, slots and admission counts.
absl::StatusOr<std::string> SaveCheckpoint(Env* env, const std::string& model_dir, const JobSpec& job,
                                           const LocalTrainer& trainer, int64_t step) {
  const std::vector<VariableSpec>& specs = trainer.variable_specs();
  std::vector<Tensor> values = trainer.Variables();
  VariablePlanProto plan;
  FloatTensorMap whole;
  std::map<std::string, std::string> dynamic_files;
  std::vector<SavedDynamicShard> dynamic_shards;  // the index lists them, as the chief's does
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].dynamic.has_value()) {
      int64_t rows = 0;
      ASSIGN_OR_RETURN(std::string bytes, trainer.SaveDynamicTable(i, &rows));
      dynamic_shards.push_back(OneFileDynamicShard(specs[i].name, rows));
      dynamic_files[dynamic_shards.back().file()] = std::move(bytes);
      continue;
    }
    VariablePlanProto::Variable* v = plan.add_variables();
    v->set_name(specs[i].name);
    for (int64_t d : specs[i].shape) v->add_shape(d);
    FloatTensor& t = whole[specs[i].name];
    t.shape = specs[i].shape;
    t.values.assign(values[i].flat().begin(), values[i].flat().end());
    values[i] = Tensor();  // one copy at a time
  }
  CheckpointManager checkpoints(env, model_dir, std::numeric_limits<int>::max(), {});
  return checkpoints.SaveValues(step, DumpJson(JobSpecToJson(job)), plan, whole, dynamic_files, dynamic_shards);
}

nlohmann::json NumberOrNull(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json ReportJson(const EpochReport& r, bool binary) {
  nlohmann::json j = {{"epoch", r.epoch},
                      {"steps", r.steps},
                      {"train_loss", r.train_loss},
                      {"train_accuracy", r.train_accuracy},
                      {"test_loss", r.test_loss},
                      {"test_accuracy", r.test_accuracy},
                      {"train_seconds", r.train_seconds},
                      {"eval_seconds", r.eval_seconds},
                      {"examples_per_second", r.examples_per_second}};
  if (binary) {
    j["train_auc"] = NumberOrNull(r.train_auc);
    j["test_auc"] = NumberOrNull(r.test_auc);
  }
  if (r.dynamic_rows >= 0) j["dynamic_rows"] = r.dynamic_rows;
  return j;
}

// "epoch 1/1  step 196  train loss 0.4512 auc 0.7712  test loss 0.4421 auc 0.7902  12.3s  45000 examples/s".
std::string EpochLine(const EpochReport& r, int64_t epochs, bool classification, bool binary, bool evaluated) {
  std::string line =
      absl::StrFormat("epoch %lld/%lld  step %lld  train loss %.4f", r.epoch, epochs, r.steps, r.train_loss);
  if (classification) absl::StrAppendFormat(&line, " acc %.4f", r.train_accuracy);
  if (binary) absl::StrAppendFormat(&line, " auc %.4f", r.train_auc);
  if (evaluated) absl::StrAppendFormat(&line, "  test loss %.4f", r.test_loss);
  if (evaluated && classification) absl::StrAppendFormat(&line, " acc %.4f", r.test_accuracy);
  if (evaluated && binary) absl::StrAppendFormat(&line, " auc %.4f", r.test_auc);
  absl::StrAppendFormat(&line, "  %.1fs  %.0f examples/s", r.train_seconds, r.examples_per_second);
  if (r.dynamic_rows >= 0) absl::StrAppendFormat(&line, "  %lld dynamic rows", static_cast<long long>(r.dynamic_rows));
  return line;
}

absl::Status RunTrain(Env* env, const CommandLine& cl) {
  ASSIGN_OR_RETURN(JobSpec job, LoadJobSpec(cl.Get("job")));
  RETURN_IF_ERROR(OverrideModelJson(cl.Get("model_json"), "--model_json", &job));
  LocalTrainOptions options;
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  ASSIGN_OR_RETURN(int64_t threads,
                   IntFlag(cl, "threads", std::min<int64_t>(cores, kMaxThreads), IntBetween(1, kMaxThreads)));
  ASSIGN_OR_RETURN(int64_t replicas, IntFlag(cl, "replicas", 1, IntBetween(1, kMaxThreads)));
  ASSIGN_OR_RETURN(options.epochs, IntFlag(cl, "epochs", 0, DimensionRange()));
  ASSIGN_OR_RETURN(options.steps, IntFlag(cl, "steps", 0, DimensionRange()));
  ASSIGN_OR_RETURN(int64_t seed, IntFlag(cl, "seed", static_cast<int64_t>(job.seed), IntAtLeast(0)));
  ASSIGN_OR_RETURN(options.evaluate, cl.GetBool("eval"));
  ASSIGN_OR_RETURN(options.report_every_steps, IntFlag(cl, "report_every_steps", 0, IntAtLeast(0)));
  if (cl.Given("terminate_on_nan")) {
    ASSIGN_OR_RETURN(job.terminate_on_nan, cl.GetBool("terminate_on_nan"));
  }
  if (cl.Given("divergence_loss_factor")) {
    ASSIGN_OR_RETURN(job.divergence_loss_factor, cl.GetDouble("divergence_loss_factor"));
    const double f = job.divergence_loss_factor;
    if (!(f == 0 || (f >= 2 && std::isfinite(f)))) {
      return absl::InvalidArgumentError(absl::StrCat("--divergence_loss_factor=", f,
                                                     " must be 0 (off) or a number of at least 2 (default 1000)"));
    }
  }
  RETURN_IF_ERROR(CheckTrainMemory(env, cl, job));
  // A model dir that cannot be written fails now, not after the training it would hold.
  if (!cl.Get("model_dir").empty()) RETURN_IF_ERROR(env->CreateDirs(cl.Get("model_dir")));
  options.threads = static_cast<int>(threads);
  options.replicas = static_cast<int>(replicas);
  options.data_dir = cl.Get("data_dir");
  {
    ASSIGN_OR_RETURN(int64_t flag, cl.GetInt("memory_budget_bytes", IntAtLeast(0)));
    ASSIGN_OR_RETURN(options.memory_budget_bytes, MemoryBudgetBytes(env, flag));
  }
  job.seed = static_cast<uint64_t>(seed);
  RETURN_IF_ERROR(OverrideCtrDataFiles(cl.Get("train_files"), cl.Get("test_files"), "--", &job));
  std::optional<CtrSyntheticSummary> default_data;
  if (job.model.is_ctr() && UsesDefaultCtrData(job.data)) {
    ASSIGN_OR_RETURN(default_data, EnsureJobDefaultCtrData(env, job.data, options.data_dir));
    std::fprintf(stderr,
                 "pstrain train: the default synthetic CTR set: %s, %s (give --train_files/--test_files for yours)\n",
                 default_data->train_path.c_str(), default_data->test_path.c_str());
  }
  ASSIGN_OR_RETURN(GradientComputerFactory compute, ComputeFactoryForDevice(cl.Get("device"), options.replicas));
  ASSIGN_OR_RETURN(InitFrom init, InitializerFromFlag(env, cl.Get("init_from"), job));
  ASSIGN_OR_RETURN(auto trainer, LocalTrainer::Create(env, job, options, init.initialize, NewKerasUpdater, compute));
  for (size_t i = 0; i < trainer->variable_specs().size(); ++i) {
    const std::string& name = trainer->variable_specs()[i].name;
    const std::string* bytes = init.dynamic.BytesOf(name);
    if (bytes == nullptr) continue;
    RETURN_IF_ERROR(trainer->RestoreDynamicTable(i, *bytes));
    std::fprintf(stderr, "pstrain train: --init_from: dynamic table %s starts from the file's rows, keyed by %s\n",
                 name.c_str(), init.key_sources[name].c_str());
  }
  const int64_t total = trainer->total_steps(), per_epoch = trainer->steps_per_epoch();
  const int64_t epochs = (total + per_epoch - 1) / per_epoch;
  std::fprintf(stderr,
               "pstrain train: job %s, %lld steps (%lld per epoch) of batch %lld, %d threads, %d replicas; cpu "
               "kernels %s\n",
               job.name.c_str(), static_cast<long long>(total), static_cast<long long>(per_epoch),
               static_cast<long long>(job.batch_size), options.threads, options.replicas, DescribeCpuLevel().c_str());
  const bool classification = job.model.loss == "sparse_categorical_crossentropy";
  const bool binary = job.model.loss == "binary_crossentropy";
  for (const std::string& warning : trainer->data_warnings())
    std::fprintf(stderr, "pstrain train: %s\n", warning.c_str());
  nlohmann::json per_epoch_json = nlohmann::json::array();
  double train_seconds = 0, examples = 0;
  EpochReport last;
  RETURN_IF_ERROR(trainer->Run([&](const EpochReport& r) {
    std::cout << EpochLine(r, epochs, classification, binary, options.evaluate) << std::endl;
    per_epoch_json.push_back(ReportJson(r, binary));
    train_seconds += r.train_seconds;
    examples += r.examples_per_second * r.train_seconds;
    last = r;
  }));
  std::string checkpoint;
  if (!cl.Get("model_dir").empty()) {
    ASSIGN_OR_RETURN(checkpoint, SaveCheckpoint(env, cl.Get("model_dir"), job, *trainer, last.steps));
    std::fprintf(stderr, "pstrain train: wrote checkpoint %s\n", checkpoint.c_str());
  }
  nlohmann::json summary = {{"job", job.name},
                            {"steps", last.steps},
                            {"epochs", last.epoch},
                            {"batch_size", job.batch_size},
                            {"threads", options.threads},
                            {"replicas", options.replicas},
                            {"cpu_level", CpuLevelName(ActiveCpuLevel())},
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
  if (binary) {
    summary["final_train_auc"] = NumberOrNull(last.train_auc);
    if (options.evaluate) {
      summary["final_test_auc"] = NumberOrNull(last.test_auc);
      summary["final_test_logloss"] = last.test_loss;
    }
    if (default_data.has_value()) {
      summary["bayes_test_auc"] = default_data->test.bayes_auc;
      summary["bayes_test_logloss"] = default_data->test.bayes_logloss;
      if (options.evaluate) {
        std::fprintf(
            stderr,
            "pstrain train: test AUC %.4f, log loss %.4f (Bayes-optimal on this set: AUC %.4f, log loss %.4f)\n",
            last.test_auc, last.test_loss, default_data->test.bayes_auc, default_data->test.bayes_logloss);
      }
    }
  }
  if (!checkpoint.empty()) summary["checkpoint"] = checkpoint;
  std::cout << DumpJson(summary) << std::endl;
  return absl::OkStatus();
}

}  // namespace

int TrainMain(Env* env, int argc, char** argv) {
  const std::string summary =
      "Trains a job in this one process, no cluster: the same initial weights, data shards, loss scaling and\n"
      "optimizer as the cluster. Examples:\n"
      "  pstrain train --job=cnn --epochs=10 --threads=2\n"
      "  pstrain train --job=cnn --steps=300 --eval=false\n"
      "  pstrain train --job=ctr --threads=2 --train_files=day_0.gz --test_files=day_23.gz";
  auto cl = CommandLine::Parse("pstrain train", argc, argv, 2, TrainFlags());
  if (!cl.ok()) {
    std::cerr << "pstrain train: " << cl.status().message() << "\n";
    return kExitBadConfiguration;
  }
  if (cl->help()) {
    std::cout << FlagUsage("pstrain train", summary, TrainFlags());
    return kExitOk;
  }
  absl::Status s = RunTrain(env, *cl);
  if (!s.ok()) {
    std::cerr << "pstrain train: " << s.message() << "\n";
    return s.code() == absl::StatusCode::kDataLoss ? kExitBadConfiguration : ExitCodeFor(s);
  }
  return kExitOk;
}

}  // namespace pstrain
