// `pstrain certs --out DIR --cluster TF_CONFIG_FILE`: makes a cluster's TLS material: a CA of its
// own (DIR/ca.crt, and DIR/ca.key to make more later: keep it off the cluster) and, for every task
// of the cluster (and evaluator:0), DIR/<type>-<index>.crt and .key (mode 0600) naming the task
// and the host peers dial it by, plus localhost and 127.0.0.1 (local probes). Each task then runs
// with --tls_dir=DIR (or PSTRAIN_TLS_DIR).
// Thread-safety: runs on the calling thread only.
#ifndef PSTRAIN_CHIEF_TOOL_CERTS_COMMAND_H_
#define PSTRAIN_CHIEF_TOOL_CERTS_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/config/cluster_spec.h"

namespace pstrain {

class Env;

// Writes the files into `dir` (created when missing) for the tasks of `cluster`, valid `days`,
// each naming `extra_hosts` too. Returns the task names written. InvalidArgument for days < 1;
// Internal when a file cannot be written. `env` (not owned) writes them. Key material is never
// replaced unless `overwrite`: FailedPrecondition, before anything is written, when `dir` already
// holds the CA's or a task's certificate or key (a new CA would make every running task reject
// the new certificates, and the old CA's key would be lost).
absl::StatusOr<std::vector<std::string>> WriteClusterCerts(Env* env, const std::string& dir, const ClusterSpec& cluster,
                                                           int days, const std::vector<std::string>& extra_hosts,
                                                           bool overwrite = false);

// Entry point for `pstrain certs ARGS...` (argv[1] is "certs"): 0 done, 2 bad flags, 1 when the
// files cannot be written.
// `env` (not owned; REQUIRES: non-null) reads and writes the files.
int CertsMain(Env* env, int argc, char** argv);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_CERTS_COMMAND_H_
