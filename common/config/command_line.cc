#include "common/config/command_line.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace pstrain {

absl::StatusOr<CommandLine> CommandLine::Parse(const std::string& command, int argc, char** argv, int first,
                                               const std::vector<FlagDef>& flags) {
  CommandLine cl;
  cl.command_ = command;
  std::map<std::string, const FlagDef*> known;
  for (const FlagDef& f : flags) {
    known[f.name] = &f;
    cl.values_[f.name] = f.default_value;
  }
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      cl.help_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      cl.positional_.push_back(arg);
      continue;
    }
    std::string name, value;
    const bool has_value = SplitFlagText(arg.substr(2), &name, &value);
    auto it = known.find(name);
    if (it == known.end()) {
      std::string list;
      for (const FlagDef& f : flags) absl::StrAppend(&list, list.empty() ? "--" : ", --", f.name);
      std::vector<std::string> names;
      for (const FlagDef& f : flags) names.push_back(f.name);
      const std::string near = NearestName(name, names);
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " for `", command, "`",
                                                     near.empty() ? "" : absl::StrCat("; did you mean --", near, "?"),
                                                     " (known flags: ", list, ")"));
    }
    if (!has_value) {
      if (it->second->is_bool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " of `", command, "` needs a value"));
      }
    }
    cl.values_[name] = value;
    cl.given_[name] = true;
  }
  return cl;
}

std::string CommandLine::Get(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? "" : it->second;
}

absl::StatusOr<int64_t> CommandLine::GetInt(const std::string& name) const {
  int64_t v = 0;
  const std::string s = Get(name);
  if (!absl::SimpleAtoi(s, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, "=", s, " is not an integer"));
  }
  return v;
}

absl::StatusOr<int64_t> CommandLine::GetInt(const std::string& name, const IntRange& range) const {
  absl::StatusOr<int64_t> v = GetInt(name);
  if (!v.ok()) return v.status();
  absl::Status s = CheckInRange(*v, range, absl::StrCat("--", name));
  if (!s.ok()) return s;
  return *v;
}

absl::StatusOr<double> CommandLine::GetDouble(const std::string& name) const {
  double v = 0;
  const std::string s = Get(name);
  if (!absl::SimpleAtod(s, &v)) return absl::InvalidArgumentError(absl::StrCat("--", name, "=", s, " is not a number"));
  return v;
}

absl::StatusOr<bool> CommandLine::GetBool(const std::string& name) const {
  const std::string s = Get(name);
  if (s == "true" || s == "1" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "no" || s.empty()) return false;
  return absl::InvalidArgumentError(absl::StrCat("--", name, "=", s, " is not true or false"));
}

absl::StatusOr<std::vector<int64_t>> CommandLine::GetIntList(const std::string& name) const {
  std::vector<int64_t> out;
  const std::string s = Get(name);
  if (s.empty()) return out;
  for (absl::string_view part : absl::StrSplit(s, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "=", s, " is not a comma-separated list of integers (e.g. 10,30)"));
    }
    out.push_back(v);
  }
  return out;
}

std::string FlagUsage(const std::string& command, const std::string& summary, const std::vector<FlagDef>& flags) {
  std::string out = absl::StrCat("usage: ", command, " [flags]\n", summary, "\n\nflags:\n");
  for (const FlagDef& f : flags) {
    absl::StrAppend(&out, "  --", f.name, f.is_bool ? "" : "=VALUE", "\n      ", f.help);
    if (!f.default_value.empty()) absl::StrAppend(&out, " (default: ", f.default_value, ")");
    absl::StrAppend(&out, "\n");
  }
  return out;
}

bool SplitFlagText(const std::string& text, std::string* name, std::string* value) {
  const size_t eq = text.find('=');
  *name = text.substr(0, eq);
  *value = eq == std::string::npos ? "" : text.substr(eq + 1);
  return eq != std::string::npos;
}

}  // namespace pstrain
