// Per-command flag parsing for the multi-command `pstrain` tool, where each subcommand has its own
// flag set (absl flags are process-global, so the role binaries use them and this tool does not).
// Accepts "--name=value", "--name value" and bare "--name" for booleans; unknown flags are errors.
// Thread-safety: values after parsing; safe to share.
#ifndef PSTRAIN_COMMON_CONFIG_COMMAND_LINE_H_
#define PSTRAIN_COMMON_CONFIG_COMMAND_LINE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/value_range.h"

namespace pstrain {

struct FlagDef {
  std::string name;           // without dashes
  std::string default_value;  // "" = unset
  std::string help;
  bool is_bool = false;       // bare "--name" means true
};

class CommandLine {
 public:
  // Parses argv[first..argc). InvalidArgument naming the flag and `command` on unknown flags or a
  // missing value; "--help" sets help().
  static absl::StatusOr<CommandLine> Parse(const std::string& command, int argc, char** argv, int first,
                                           const std::vector<FlagDef>& flags);

  bool help() const { return help_; }
  // True when the user gave the flag (defaults do not count).
  bool Given(const std::string& name) const { return given_.count(name) > 0; }
  std::string Get(const std::string& name) const;
  // InvalidArgument naming the flag when the value is not an integer / number / bool.
  absl::StatusOr<int64_t> GetInt(const std::string& name) const;
  // GetInt, then InvalidArgument naming --name when the value is outside `range`.
  absl::StatusOr<int64_t> GetInt(const std::string& name, const IntRange& range) const;
  absl::StatusOr<double> GetDouble(const std::string& name) const;
  absl::StatusOr<bool> GetBool(const std::string& name) const;
  // Comma-separated integers ("10,30"); InvalidArgument on anything else.
  absl::StatusOr<std::vector<int64_t>> GetIntList(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::string command_;
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> given_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

// "usage: pstrain plan [flags]" followed by one line per flag with its default and help.
std::string FlagUsage(const std::string& command, const std::string& summary, const std::vector<FlagDef>& flags);

// Splits a flag's text after its dashes, "name=value" or "name", into `name` and `value`; true
// when it carries a value (an "=" is present). Shared by this parser and the task binaries' checks.
bool SplitFlagText(const std::string& text, std::string* name, std::string* value);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_COMMAND_LINE_H_
