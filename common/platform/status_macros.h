// Propagation helpers for absl::Status / absl::StatusOr, the error channel of all pstrain code.
//
// RETURN_IF_ERROR(expr): returns the status of `expr` from the enclosing function when it is not OK.
// ASSIGN_OR_RETURN(lhs, expr): evaluates the StatusOr `expr`; on error returns its status, otherwise
// moves the value into `lhs` (which may be a declaration such as `auto x`).
// Thread-safety: macros only; no state.
#ifndef PSTRAIN_COMMON_PLATFORM_STATUS_MACROS_H_
#define PSTRAIN_COMMON_PLATFORM_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define PSTRAIN_CONCAT_INNER_(a, b) a##b
#define PSTRAIN_CONCAT_(a, b) PSTRAIN_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                                  \
  do {                                                         \
    ::absl::Status pstrain_status_ = (expr);                   \
    if (!pstrain_status_.ok()) return pstrain_status_;         \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  PSTRAIN_ASSIGN_OR_RETURN_IMPL_(PSTRAIN_CONCAT_(pstrain_statusor_, __LINE__), lhs, expr)

#define PSTRAIN_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                   \
  if (!statusor.ok()) return statusor.status();             \
  lhs = std::move(statusor).value()

#endif  // PSTRAIN_COMMON_PLATFORM_STATUS_MACROS_H_
