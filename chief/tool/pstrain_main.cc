// `pstrain`: the user's tool. Each subcommand has its own entry point and flag set.
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "chief/tool/certs_command.h"
#include "chief/tool/datagen_command.h"
#include "chief/tool/evaluate_command.h"
#include "chief/tool/export_command.h"
#include "chief/tool/health_command.h"
#include "chief/tool/inspect_command.h"
#include "chief/tool/plan_command.h"
#include "chief/tool/plot_command.h"
#include "chief/tool/train_command.h"
#include "common/platform/resource_errors.h"
#include "common/platform/cpu_level.h"
#include "common/platform/env.h"
#include "common/platform/exit_codes.h"

namespace {

struct Subcommand {
  const char* name;
  int (*main)(pstrain::Env*, int, char**);
  const char* summary;
};

const Subcommand kSubcommands[] = {
    {"plan", pstrain::PlanMain, "show how a job's variables are partitioned and placed on the ps tasks"},
    {"train", pstrain::TrainMain, "train a job in this one process, no cluster (debugging, compute baseline)"},
    {"evaluate", pstrain::EvaluateMain, "evaluate a checkpoint on the test set in one process, with no cluster"},
    {"export", pstrain::ExportMain, "write a Keras model's checkpoint as Keras weights (.weights.h5, .h5) or ONNX"},
    {"inspect", pstrain::InspectMain, "list a checkpoint's variables with digests, whatever its partitioning"},
    {"datagen", pstrain::DatagenMain, "write a synthetic CTR data set (Criteo layout) with its Bayes-optimal AUC"},
    {"certs", pstrain::CertsMain, "make a cluster CA and a certificate per task of a TF_CONFIG (mutual TLS)"},
    {"health", pstrain::HealthMain, "ask a chief, worker or ps for its gRPC health (exit 0 when SERVING)"},
    {"plot", pstrain::PlotMain, "draw the training and test curves of runs side by side (SVG or PNG)"},
};

void PrintUsage(std::ostream& out) {
  out << "usage: pstrain COMMAND [flags]   (pstrain COMMAND --help for its flags)\n\ncommands:\n";
  for (const Subcommand& c : kSubcommands) out << "  " << c.name << "\t" << c.summary << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  pstrain::InstallResourceErrorHandler("pstrain");
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0) {
    PrintUsage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? pstrain::kExitBadConfiguration : pstrain::kExitOk;
  }
  // Every command that computes runs the CPU kernels at this level (`pstrain train` shows it).
  auto level = pstrain::ConfigureCpuLevel(std::getenv(pstrain::kCpuLevelEnv));
  if (!level.ok()) {
    std::cerr << "pstrain: " << level.status().message() << "\n";
    return pstrain::kExitBadConfiguration;
  }
  for (const Subcommand& c : kSubcommands) {
    if (std::strcmp(argv[1], c.name) == 0) return c.main(pstrain::Env::Default(), argc, argv);
  }
  std::cerr << "pstrain: unknown command \"" << argv[1] << "\"\n";
  PrintUsage(std::cerr);
  return pstrain::kExitBadConfiguration;
}
