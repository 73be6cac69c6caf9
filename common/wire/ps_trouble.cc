#include "common/wire/ps_trouble.h"

#include <cctype>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace pstrain {

bool IsPsTrouble(const absl::Status& ps_call) {
  switch (ps_call.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
      return true;
    case absl::StatusCode::kNotFound:
      // A restarted ps process answers, but holds none of the shards (ps/store/ps_server.cc).
      return absl::StrContains(ps_call.message(), "is not held by");
    default:
      return false;
  }
}

absl::Status PsTroubleStatus(int ps, const absl::Status& ps_call) {
  return absl::AbortedError(
      absl::StrCat("ps:", ps, " ", absl::StatusCodeToString(ps_call.code()), ": ", ps_call.message()));
}

std::optional<int> PsTroubleIndex(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kAborted) return std::nullopt;
  absl::string_view m = status.message();
  // The signal opens the worker's message; a client may have put "<worker peer>: " before it.
  size_t at = 0;
  if (!absl::StartsWith(m, "ps:")) {
    at = m.find(": ps:");
    if (at == absl::string_view::npos) return std::nullopt;
    at += 2;
  }
  size_t end = at + 3;
  while (end < m.size() && std::isdigit(static_cast<unsigned char>(m[end]))) ++end;
  if (end == at + 3 || end >= m.size() || m[end] != ' ') return std::nullopt;
  int index = 0;
  if (!absl::SimpleAtoi(m.substr(at + 3, end - at - 3), &index)) return std::nullopt;
  return index;
}

}  // namespace pstrain
