#include "chief/tool/certs_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/config/command_line.h"
#include "common/config/json_util.h"
#include "common/platform/env.h"
#include "common/platform/exit_codes.h"
#include "common/platform/status_macros.h"
#include "common/security/cert_authority.h"
#include "common/security/tls_config.h"

namespace pstrain {
namespace {

const std::vector<FlagDef>& CertsFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"out", "", "directory to write the files into (created when missing)"},
      {"cluster", "", "a TF_CONFIG file, or a file holding its \"cluster\" object alone"},
      {"days", "365", "how long the certificates are valid"},
      {"hosts", "", "more names or addresses every certificate answers to, comma-separated"},
      {"overwrite", "false", "replace the CA and the certificates and keys already in --out (running tasks will "
       "reject the new ones until every task has them)", true},
  };
  return *flags;
}

// Writes `data` to `path` readable by its owner only when `secret`.
absl::Status WriteFile(Env* env, const std::string& path, const std::string& data, bool secret) {
  // A key is created owner-only (umask 077 while it is written), never readable by others even for
  // a moment; `pstrain certs` is single-threaded, so the process-wide umask is safe here.
  const mode_t old_mask = ::umask(secret ? 077 : 022);
  absl::Status written = env->WriteFileAtomic(path, data);
  ::umask(old_mask);
  RETURN_IF_ERROR(written);
  if (::chmod(path.c_str(), secret ? 0600 : 0644) != 0) {
    return absl::InternalError(absl::StrCat("cannot set the mode of ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<ClusterSpec> ReadCluster(Env* env, const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, env->ReadFile(path));
  absl::StatusOr<nlohmann::json> doc = ParseJson(text, path);
  if (!doc.ok()) return doc.status();
  if (doc->is_object() && doc->contains("cluster")) {
    ASSIGN_OR_RETURN(TfConfig config, ParseTfConfig(text));
    return config.cluster;
  }
  return ClusterSpec::FromJson(*doc);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> WriteClusterCerts(Env* env, const std::string& dir, const ClusterSpec& cluster,
                                                           int days, const std::vector<std::string>& extra_hosts,
                                                           bool overwrite) {
  if (days < 1) return absl::InvalidArgumentError("--days must be at least 1");
  std::vector<std::pair<std::string, std::string>> tasks;  // name, host
  for (const auto& [job, members] : cluster.jobs()) {
    for (const auto& [index, address] : members) {
      std::string host, port;
      SplitHostPort(address, &host, &port);
      tasks.emplace_back(absl::StrCat(job, ":", index), host);
    }
  }
  if (!cluster.HasJob(kEvaluator)) tasks.emplace_back("evaluator:0", "");
  if (!overwrite) {
    std::vector<std::string> present;
    std::vector<std::string> names = {"ca.crt", "ca.key"};
    for (const auto& task : tasks) {
      names.push_back(TaskCertFileName(task.first));
      names.push_back(TaskKeyFileName(task.first));
    }
    for (const std::string& name : names) {
      if (env->FileExists(dir + "/" + name)) present.push_back(name);
    }
    if (!present.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          dir, " already holds ", absl::StrJoin(present, ", "),
          "; key material is never replaced silently (running tasks would reject new certificates, and the old "
          "CA's key would be lost): give another --out, or --overwrite to replace them all"));
    }
  }
  RETURN_IF_ERROR(env->CreateDirs(dir));
  ASSIGN_OR_RETURN(CertAndKey ca, MakeCertificateAuthority("pstrain cluster CA", days));
  RETURN_IF_ERROR(WriteFile(env, dir + "/ca.crt", ca.cert_pem, false));
  RETURN_IF_ERROR(WriteFile(env, dir + "/ca.key", ca.key_pem, true));
  std::vector<std::string> written;
  for (const auto& [task, host] : tasks) {
    std::set<std::string> hosts = {"localhost", "127.0.0.1"};
    if (!host.empty()) hosts.insert(host);
    hosts.insert(extra_hosts.begin(), extra_hosts.end());
    ASSIGN_OR_RETURN(CertAndKey issued,
                     IssueCertificate(ca, task, std::vector<std::string>(hosts.begin(), hosts.end()), days));
    RETURN_IF_ERROR(WriteFile(env, dir + "/" + TaskCertFileName(task), issued.cert_pem, false));
    RETURN_IF_ERROR(WriteFile(env, dir + "/" + TaskKeyFileName(task), issued.key_pem, true));
    written.push_back(task);
  }
  return written;
}

int CertsMain(Env* env, int argc, char** argv) {
  const std::string summary =
      "Makes a cluster CA and one certificate per task of a TF_CONFIG's cluster; then start every task with\n"
      "--tls_dir=DIR (or PSTRAIN_TLS_DIR=DIR).\n"
      "  pstrain certs --out=tls --cluster=tf_config.json";
  auto cl = CommandLine::Parse("pstrain certs", argc, argv, 2, CertsFlags());
  if (!cl.ok()) {
    std::cerr << "pstrain certs: " << cl.status().message() << "\n";
    return kExitBadConfiguration;
  }
  if (cl->help()) {
    std::cout << "usage: pstrain certs --out DIR --cluster TF_CONFIG_FILE [flags]\n"
              << FlagUsage("pstrain certs", summary, CertsFlags());
    return kExitOk;
  }
  absl::StatusOr<int64_t> days = cl->GetInt("days");
  if (cl->Get("out").empty() || cl->Get("cluster").empty() || !days.ok() || *days < 1 || *days > 36500) {
    std::cerr << "pstrain certs: give --out DIR and --cluster TF_CONFIG_FILE (and --days between 1 and 36500)\n";
    return kExitBadConfiguration;
  }
  absl::StatusOr<ClusterSpec> cluster = ReadCluster(env, cl->Get("cluster"));
  if (!cluster.ok()) {
    std::cerr << "pstrain certs: " << cluster.status().message() << "\n";
    return kExitBadConfiguration;
  }
  std::vector<std::string> extra = absl::StrSplit(cl->Get("hosts"), ',', absl::SkipEmpty());
  absl::StatusOr<bool> overwrite = cl->GetBool("overwrite");
  if (!overwrite.ok()) {
    std::cerr << "pstrain certs: " << overwrite.status().message() << "\n";
    return kExitBadConfiguration;
  }
  absl::StatusOr<std::vector<std::string>> written =
      WriteClusterCerts(env, cl->Get("out"), *cluster, static_cast<int>(*days), extra, *overwrite);
  if (!written.ok()) {
    std::cerr << "pstrain certs: " << written.status().message() << "\n";
    return ExitCodeFor(written.status());
  }
  std::cout << "wrote " << cl->Get("out") << "/ca.crt (and ca.key: keep it off the cluster) and certificates for "
            << absl::StrJoin(*written, ", ") << "\nstart each task with --tls_dir=" << cl->Get("out") << "\n";
  return kExitOk;
}

}  // namespace pstrain
