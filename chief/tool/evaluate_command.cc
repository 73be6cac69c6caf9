#include "chief/tool/evaluate_command.h"

#include <cmath>
#include <iostream>

#include "absl/strings/str_format.h"
#include "chief/evaluation/checkpoint_evaluator.h"
#include "common/config/command_line.h"
#include "common/config/json_util.h"
#include "common/plan/memory_budget.h"
#include "common/platform/exit_codes.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

const std::vector<FlagDef>& EvaluateFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"checkpoint", "", "a checkpoint directory (model_dir/ckpt-N), or a model dir for its newest checkpoint"},
      {"job", "",
       "job spec (preset or JSON file) whose data section names the test data (default: the data named in the "
       "checkpoint's own job spec, printed before it is read)"},
      {"data_dir", "", "data directory (overrides the job's data.dir)"},
      {"threads", "1", "CPU threads"},
      {"format", "text", "text or json"},
      {"memory_budget_bytes", "0", "most bytes one checkpoint variable may take (0: half of this host's memory)"},
  };
  return *flags;
}

constexpr char kSummary[] = "evaluate a checkpoint on the test set in one process, with no cluster";

absl::StatusOr<CheckpointEvalOptions> OptionsFromFlags(Env* env, const CommandLine& cl) {
  CheckpointEvalOptions options;
  ASSIGN_OR_RETURN(int64_t threads, cl.GetInt("threads", IntBetween(1, kMaxThreads)));
  options.threads = static_cast<int>(threads);
  ASSIGN_OR_RETURN(int64_t budget, cl.GetInt("memory_budget_bytes", IntAtLeast(0)));
  ASSIGN_OR_RETURN(options.max_bytes, MemoryBudgetBytes(env, budget));
  options.data_dir = cl.Get("data_dir");
  if (!cl.Get("job").empty()) {
    ASSIGN_OR_RETURN(JobSpec job, LoadJobSpec(cl.Get("job")));
    options.data = job.data;
  }
  return options;
}

}  // namespace

int EvaluateMain(Env* env, int argc, char** argv) {
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
  absl::StatusOr<std::string> dir;
  absl::StatusOr<CheckpointEvalOptions> options = OptionsFromFlags(env, *cl);
  if (options.ok()) {
    std::vector<std::string> warnings;  // newer checkpoints skipped: the user must know which was read
    dir = ResolveCheckpoint(env, cl->Get("checkpoint"), &warnings);
    for (const std::string& w : warnings) std::cerr << "pstrain evaluate: " << w << "\n";
  }
  if (options.ok() && dir.ok() && !options->data.has_value()) {
    // The checkpoint's job spec names the data: say what will be read before reading it.
    absl::StatusOr<CheckpointIndex> index = ReadCheckpointIndex(env, *dir);
    absl::StatusOr<JobSpec> job = index.ok() ? JobSpecOfCheckpoint(*index) : index.status();
    if (job.ok()) {
      std::cerr << "pstrain evaluate: test data from the checkpoint's job spec: "
                << DescribeData(job->data, options->data_dir) << " (give --job or --data_dir to choose)\n";
    }
  }
  absl::StatusOr<EvalResult> r = !options.ok() ? options.status()
                                 : dir.ok()    ? EvaluateCheckpoint(env, *dir, *options)
                                               : dir.status();
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
