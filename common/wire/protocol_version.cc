#include "common/wire/protocol_version.h"

#include "absl/strings/str_cat.h"

namespace pstrain {

absl::Status CheckProtocolVersion(int theirs, const std::string& peer) {
  if (theirs == kProtocolVersion) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "protocol version mismatch with ", peer, ": it speaks version ", theirs, ", this binary speaks ",
      kProtocolVersion, "; run the same pstrain release on every task"));
}

}  // namespace pstrain
