#include "common/config/task_flags.h"

#include <string>
#include <vector>

#include <iostream>
#include <map>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/config/command_line.h"
#include "common/config/json_util.h"
#include "common/config/value_range.h"
#include "common/platform/exit_codes.h"

namespace pstrain {
namespace {

// The flags a user of this binary may mean: its own (main.cc's and the ones every task shares,
// task_bootstrap.cc's), not the libraries' (gRPC, absl internals).
std::vector<std::string> VisibleFlagNames() {
  std::vector<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const std::string file = flag->Filename();
    if (!flag->IsRetired() &&
        (absl::StrContains(file, "main.cc") || absl::StrContains(file, "common/config/task_bootstrap.cc"))) {
      names.emplace_back(name);
    }
  }
  return names;
}

absl::Status Unknown(const std::string& arg, const std::string& name) {
  const std::string near = NearestName(name, VisibleFlagNames());
  return absl::InvalidArgumentError(absl::StrCat("unknown flag ", QuotedExcerpt(arg),
                                                 near.empty() ? "" : absl::StrCat("; did you mean --", near, "?"),
                                                 " (--help lists the flags)"));
}

}  // namespace

absl::StatusOr<std::set<std::string>> CheckTaskFlags(int argc, char** argv) {
  std::set<std::string> given;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      if (i + 1 < argc) {
        return absl::InvalidArgumentError(
            absl::StrCat("unexpected argument ", QuotedExcerpt(argv[i + 1]), ": this binary takes only flags"));
      }
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument ", QuotedExcerpt(arg),
                                                     ": this binary takes only flags (--name=value)"));
    }
    std::string name, value;
    const bool has_value = SplitFlagText(arg.substr(arg[1] == '-' ? 2 : 1), &name, &value);
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && !has_value && absl::StartsWith(name, "no")) {
      absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) {  // --nofoo
        given.insert(name.substr(2));
        continue;
      }
    }
    if (flag == nullptr || flag->IsRetired()) return Unknown(arg, name);
    given.insert(name);
    if (!has_value) {
      if (flag->IsOfType<bool>()) continue;
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      value = argv[++i];
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", name, "=", QuotedExcerpt(value), " is not a valid ",
                                                     flag->IsOfType<bool>() ? "true/false" : "value", ": ", error));
    }
  }
  return given;
}

std::optional<int> ParseTaskCommandLine(int argc, char** argv, const char* program, std::set<std::string>* given) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-help" || arg == "-h" || arg == "--helpfull") {
      std::cout << absl::ProgramUsageMessage() << "\n\nflags:\n";
      std::map<std::string, absl::CommandLineFlag*> sorted;
      for (const std::string& name : VisibleFlagNames()) sorted[name] = absl::FindCommandLineFlag(name);
      for (const auto& [name, flag] : sorted) {
        std::cout << "  --" << name << "  (default: " << QuotedExcerpt(flag->DefaultValue(), 200) << ")\n      "
                  << flag->Help() << "\n";
      }
      return kExitOk;
    }
  }
  absl::StatusOr<std::set<std::string>> names = CheckTaskFlags(argc, argv);
  if (!names.ok()) {
    std::cerr << program << ": " << names.status().message() << "\n";
    return kExitBadConfiguration;
  }
  absl::ParseCommandLine(argc, argv);
  if (given != nullptr) *given = *std::move(names);
  return std::nullopt;
}

}  // namespace pstrain
