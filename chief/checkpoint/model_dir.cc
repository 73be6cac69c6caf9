#include "chief/checkpoint/model_dir.h"

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/platform/status_macros.h"

namespace pstrain {

absl::StatusOr<std::vector<std::string>> EarlierRunEntries(Env* env, const std::string& model_dir) {
  std::vector<std::string> out;
  if (!env->FileExists(model_dir)) return out;
  ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(model_dir));
  for (const std::string& name : names) {
    if (absl::StartsWith(name, "ckpt-") || name == "metrics.jsonl" || name == "summary.json" || name == "train" ||
        name == "eval") {
      out.push_back(name);
    }
  }
  return out;
}

absl::StatusOr<std::string> MoveEarlierRunAside(Env* env, const std::string& model_dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> entries, EarlierRunEntries(env, model_dir));
  if (entries.empty()) return std::string();
  const std::string stamp = absl::FormatTime("%Y%m%d-%H%M%S", absl::FromUnixMicros(env->NowMicros()), absl::UTCTimeZone());
  std::string aside = absl::StrCat(model_dir, "/previous-run-", stamp);
  for (int i = 2; env->FileExists(aside); ++i) aside = absl::StrCat(model_dir, "/previous-run-", stamp, "-", i);
  RETURN_IF_ERROR(env->CreateDirs(aside));
  std::vector<std::string> moved;
  for (const std::string& name : entries) {
    absl::Status s = env->Rename(absl::StrCat(model_dir, "/", name), absl::StrCat(aside, "/", name));
    if (!s.ok()) {
      return absl::InternalError(absl::StrCat("moving the earlier run aside into ", aside, " failed at ", name, ": ",
                                              s.message(), " (moved: ", moved.empty() ? "nothing" : absl::StrJoin(moved, ", "),
                                              ")"));
    }
    moved.push_back(name);
  }
  return aside;
}

absl::StatusOr<std::unique_ptr<FileLock>> LockModelDir(Env* env, const std::string& model_dir,
                                                       const std::string& lock_name, const std::string& who) {
  RETURN_IF_ERROR(env->CreateDirs(model_dir));
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  const std::string owner =
      absl::StrCat(who, ", pid ", ::getpid(), " on host ", host[0] ? host : "(unknown)", ", since ",
                   absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", env->Now(), absl::UTCTimeZone()));
  const std::string path = absl::StrCat(model_dir, "/", lock_name);
  absl::StatusOr<std::unique_ptr<FileLock>> lock = env->LockFile(path, owner);
  if (lock.status().code() == absl::StatusCode::kFailedPrecondition) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model dir ", model_dir, " is in use by another process (", lock.status().message(),
        "): two runs in one model dir would overwrite each other's checkpoints. Stop that one, or give this run "
        "another --model_dir"));
  }
  return lock;
}

}  // namespace pstrain
