#include "chief/tool/datagen_command.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "common/config/command_line.h"
#include "common/platform/exit_codes.h"
#include "common/platform/status_macros.h"
#include "worker/data/ctr_default_data.h"
#include "worker/data/ctr_synthetic.h"

namespace pstrain {
namespace {

constexpr char kSummary[] =
    "write a synthetic CTR set in Criteo's TSV layout (train.txt, test.txt) whose labels come from a "
    "planted model, and bayes.json with the Bayes-optimal test AUC and log loss";

const std::vector<FlagDef>& DatagenFlags() {
  static const auto* flags = [] {
    const CtrSyntheticOptions d;
    return new std::vector<FlagDef>{
        {"out", "", "directory to write train.txt, test.txt and bayes.json into (created if missing)"},
        {"train", std::to_string(d.train_examples), "training examples"},
        {"test", std::to_string(d.test_examples), "test examples"},
        {"seed", std::to_string(d.seed), "seed: the same seed writes byte-identical files"},
        {"vocabulary", std::to_string(d.vocabulary),
         "distinct ids of the largest fields (smaller fields keep Criteo's cardinality)"},
        {"zipf", absl::StrFormat("%g", d.zipf), "Zipf exponent of the ids' frequencies"},
        {"criteo_cardinalities", "true",
         "false: every field draws from --vocabulary ids (an id space beyond any fixed table)", true},
        {"drift_at", "0",
         "a fraction in (0, 1): the popular ids change after it; later training examples and the test set "
         "use new ids with effects of their own (0: no drift)"},
        {"default", "", "instead of --out: make sure the default set is in the cache and print its paths", true},
        {"cache_dir", "", "with --default: the cache directory (default $XDG_CACHE_HOME/pstrain or ~/.cache/pstrain)"},
    };
  }();
  return *flags;
}

absl::StatusOr<CtrSyntheticOptions> OptionsFromFlags(const CommandLine& cl) {
  CtrSyntheticOptions options;
  ASSIGN_OR_RETURN(options.train_examples, cl.GetInt("train"));
  ASSIGN_OR_RETURN(options.test_examples, cl.GetInt("test"));
  ASSIGN_OR_RETURN(int64_t seed, cl.GetInt("seed"));
  options.seed = static_cast<uint64_t>(seed);
  ASSIGN_OR_RETURN(options.vocabulary, cl.GetInt("vocabulary"));
  ASSIGN_OR_RETURN(options.zipf, cl.GetDouble("zipf"));
  ASSIGN_OR_RETURN(options.criteo_cardinalities, cl.GetBool("criteo_cardinalities"));
  ASSIGN_OR_RETURN(options.drift_at, cl.GetDouble("drift_at"));
  RETURN_IF_ERROR(ValidateCtrSyntheticOptions(options));
  return options;
}

void PrintSummary(const CtrSyntheticSummary& s) {
  std::cout << absl::StrFormat("train: %d examples, %.2f%% positive -> %s\n", s.train.examples,
                               100.0 * s.train.positive_rate, s.train_path);
  std::cout << absl::StrFormat("test:  %d examples, %.2f%% positive -> %s\n", s.test.examples,
                               100.0 * s.test.positive_rate, s.test_path);
  std::cout << absl::StrFormat("Bayes-optimal test AUC %.4f, log loss %.4f (the true probabilities; in %s)\n",
                               s.test.bayes_auc, s.test.bayes_logloss, s.bayes_path);
}

absl::Status CheckCommand(const CommandLine& cl) {
  if (cl.positional().size() != 1 || cl.positional()[0] != "ctr") {
    return absl::InvalidArgumentError("usage: pstrain datagen ctr --out=DIR [flags] (ctr is the only kind)");
  }
  if (cl.Given("default") == cl.Given("out")) {
    return absl::InvalidArgumentError("give --out=DIR (a new set) or --default (the cached default set)");
  }
  if (cl.Given("default")) {
    for (const char* flag : {"train", "test", "seed", "vocabulary", "zipf", "criteo_cardinalities", "drift_at"}) {
      if (cl.Given(flag)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag, " does not apply to --default (the default set is fixed); use --out=DIR"));
      }
    }
  } else if (cl.Given("cache_dir")) {
    return absl::InvalidArgumentError("--cache_dir goes with --default");
  }
  return absl::OkStatus();
}

absl::StatusOr<CtrSyntheticSummary> Run(Env* env, const CommandLine& cl) {
  RETURN_IF_ERROR(CheckCommand(cl));
  if (cl.Given("default")) {
    const std::string cache = cl.Given("cache_dir") ? cl.Get("cache_dir") : DefaultCacheDirFromEnvironment(env);
    return EnsureDefaultCtrData(env, cache);
  }
  ASSIGN_OR_RETURN(CtrSyntheticOptions options, OptionsFromFlags(cl));
  return WriteCtrSyntheticSet(env, options, cl.Get("out"));
}

}  // namespace

int DatagenMain(Env* env, int argc, char** argv) {
  absl::StatusOr<CommandLine> cl = CommandLine::Parse("datagen", argc, argv, 2, DatagenFlags());
  if (!cl.ok()) {
    std::cerr << "pstrain datagen: " << cl.status().message() << "\n";
    return kExitBadConfiguration;
  }
  if (cl->help()) {
    std::cout << FlagUsage("pstrain datagen ctr", kSummary, DatagenFlags());
    return kExitOk;
  }
  absl::StatusOr<CtrSyntheticSummary> summary = Run(env, *cl);
  if (!summary.ok()) {
    std::cerr << "pstrain datagen: " << summary.status().message() << "\n";
    return ExitCodeFor(summary.status());
  }
  PrintSummary(*summary);
  return kExitOk;
}

}  // namespace pstrain
