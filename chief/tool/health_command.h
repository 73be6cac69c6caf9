// `pstrain health HOST:PORT`: the gRPC health probe (grpc.health.v1.Health/Check) for orchestrators'
// health checks (docker-compose's healthcheck, scripts). Exit 0 when the server answers SERVING;
// 1 (with a message on stderr) when it answers anything else, cannot be reached or does not answer
// within --timeout_secs; 2 for bad arguments. A cluster running with TLS is asked over mutual TLS
// with a task's certificate (--tls_dir and --task, or the PSTRAIN_TLS_* variables).
// Thread-safety: runs on the calling thread only.
#ifndef PSTRAIN_CHIEF_TOOL_HEALTH_COMMAND_H_
#define PSTRAIN_CHIEF_TOOL_HEALTH_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/security/tls_config.h"

namespace pstrain {

class Env;

// The status name ("SERVING", "NOT_SERVING", ...) the server at `address` reports for `service`
// ("" = the whole server). Unavailable / DeadlineExceeded naming the address when it does not answer.
// With `tls` enabled the call is mutual TLS.
absl::StatusOr<std::string> CheckHealth(const std::string& address, const std::string& service, double timeout_secs,
                                        const TlsConfig& tls = TlsConfig());

// Entry point for `pstrain health ARGS...` (argv[1] is "health"); returns the exit code.
// `env` (not owned; REQUIRES: non-null) reads the TLS files.
int HealthMain(Env* env, int argc, char** argv);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_HEALTH_COMMAND_H_
