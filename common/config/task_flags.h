// Command-line checks for the task binaries (pstrain-chief, pstrain-worker, pstrain-ps), whose
// flags are absl flags. absl::ParseCommandLine ends the process with exit status 1 on a bad flag,
// but a bad configuration must exit 2; so every argument is checked here first, and absl parses
// only a command line it will accept. Each binary's main.cc calls CheckTaskFlags, then
// absl::ParseCommandLine, then validates its values' ranges with value_range.h.
// Thread-safety: call from main before any thread starts.
#ifndef PSTRAIN_COMMON_CONFIG_TASK_FLAGS_H_
#define PSTRAIN_COMMON_CONFIG_TASK_FLAGS_H_

#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace pstrain {

// OK when absl::ParseCommandLine(argc, argv) will accept every argument. InvalidArgument naming
// the argument otherwise: an unknown flag (with the nearest known one and a pointer to --help), a
// flag without its value, a value its type cannot hold ("--threads=many", "--steps=1e99"), or a
// positional argument (the task binaries take none). The names of the flags given ("--nofoo"
// gives "foo"), so a main can tell a value the user chose from a default.
absl::StatusOr<std::set<std::string>> CheckTaskFlags(int argc, char** argv);

// CheckTaskFlags, then absl::ParseCommandLine; the names given go to `given` when not null.
// Returns the exit status when main must return at once: kExitBadConfiguration after printing
// "<program>: <problem>" on stderr, or 0 after printing the binary's flags for --help / -h.
std::optional<int> ParseTaskCommandLine(int argc, char** argv, const char* program,
                                        std::set<std::string>* given = nullptr);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_TASK_FLAGS_H_
