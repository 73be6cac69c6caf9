#include "chief/evaluate_command.h"

#include <cmath>
#include <iostream>

#include "absl/strings/str_format.h"
#include "chief/checkpoint_evaluator.h"
#include "chief/checkpoint_manager.h"
#include "common/command_line.h"
#include "common/exit_codes.h"
#include "common/json_util.h"

namespace pstrain {
namespace {

const std::vector<FlagDef>& EvaluateFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"checkpoint", "", "a checkpoint directory (model_dir/ckpt-N), or a model dir for its newest checkpoint"},
      {"data_dir", "", "data directory (default: the job's data.dir)"},
      {"threads", "1", "CPU threads"},
      {"format", "text", "text or json"},
  };
  return *flags;
}

constexpr char kSummary[] = "evaluate a checkpoint on the test set in one process, with no cluster";

// A model dir resolves to its newest complete checkpoint.
absl::StatusOr<std::string> ResolveCheckpoint(const std::string& path) {
  Env* env = Env::Default();
  if (env->FileExists(path + "/index.json")) return path;
  CheckpointManager manager(env, path, 1, {});
  absl::StatusOr<std::optional<FoundCheckpoint>> found = manager.FindLatest(nullptr, /*remove_incomplete=*/false);
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    return absl::NotFoundError(absl::StrCat(path, " is neither a checkpoint (no index.json) nor a model dir with one"));
  }
  return (*found)->dir;
}

}  // namespace

int EvaluateMain(int argc, char** argv) {
  absl::StatusOr<CommandLine> cl = CommandLine::Parse("evaluate", argc, argv, 2, EvaluateFlags());
  if (!cl.ok()) {
    std::cerr << "pstrain evaluate: " << cl.status().message() << "\n";
    return kExitBadConfiguration;
  }
  if (cl->help()) {
    std::cout << FlagUsage("evaluate", kSummary, EvaluateFlags());
    return kExitOk;
  }
  if (cl->Get("checkpoint").empty()) {
    std::cerr << "pstrain evaluate: give --checkpoint=DIR (a model_dir/ckpt-N directory)\n";
    return kExitBadConfiguration;
  }
  absl::StatusOr<int64_t> threads = cl->GetInt("threads");
  absl::StatusOr<std::string> dir = threads.ok() ? ResolveCheckpoint(cl->Get("checkpoint")) : threads.status();
  CheckpointEvalOptions options;
  options.data_dir = cl->Get("data_dir");
  options.threads = threads.ok() ? static_cast<int>(*threads) : 1;
  absl::StatusOr<EvalResult> r = dir.ok() ? EvaluateCheckpoint(Env::Default(), *dir, options) : dir.status();
  if (!r.ok()) {
    std::cerr << "pstrain evaluate: " << r.status().message() << "\n";
    return ExitCodeFor(r.status());
  }
  if (cl->Get("format") == "json") {
    nlohmann::json j = EvalJson(*r);
    j["checkpoint"] = *dir;
    j["step"] = r->step;
    std::cout << DumpJson(j) << "\n";
  } else if (std::isfinite(r->auc)) {
    std::cout << absl::StrFormat("%s (step %d): test AUC %.6f, log loss %.6f (%d examples)\n", *dir, r->step, r->auc,
                                 r->loss, r->examples);
  } else {
    std::cout << absl::StrFormat("%s (step %d): test loss %.6f, test accuracy %.4f (%d examples)\n", *dir, r->step,
                                 r->loss, r->accuracy, r->examples);
  }
  return kExitOk;
}

}  // namespace pstrain
