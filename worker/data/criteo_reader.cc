#include "worker/data/criteo_reader.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "worker/data/criteo_parser.h"
#include "worker/data/file_reader.h"

namespace pstrain {
namespace {

constexpr size_t kReadChunkBytes = 1 << 20;

absl::Status CheckOptions(const CriteoOptions& options) {
  if (options.files_or_globs.empty()) {
    return absl::InvalidArgumentError("no CTR data files given: name the train and test files (paths or globs)");
  }
  if (options.num_parts < 1 || options.part < 0 || options.part >= options.num_parts) {
    return absl::InvalidArgumentError(absl::StrCat("data part ", options.part, " of ", options.num_parts,
                                                   " is out of range: want 0 <= part < num_parts"));
  }
  return absl::OkStatus();
}

absl::Status NothingMatches(const std::string& pattern) {
  const bool is_glob = pattern.find_first_of("*?[") != std::string::npos;
  if (!is_glob) {
    return absl::NotFoundError(absl::StrCat("data file ", pattern,
                                            " does not exist; check the path (relative paths start from the "
                                            "directory the command runs in)"));
  }
  return absl::NotFoundError(absl::StrCat("no file matches the data pattern ", pattern,
                                          "; check the directory and the pattern (quote it so the shell does "
                                          "not expand it first)"));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandDataFiles(const std::vector<std::string>& files_or_globs) {
  std::vector<std::string> files;
  for (const std::string& pattern : files_or_globs) {
    struct stat info;
    if (::stat(pattern.c_str(), &info) == 0) {  // an existing path, even one with glob characters in it
      files.push_back(pattern);
      continue;
    }
    glob_t matches{};
    const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
    if (rc == 0) {
      for (size_t i = 0; i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
    }
    globfree(&matches);
    if (rc == GLOB_NOMATCH) return NothingMatches(pattern);
    if (rc != 0) {
      return absl::NotFoundError(absl::StrCat("cannot list the files of data pattern ", pattern,
                                              " (a directory on its path is missing or unreadable)"));
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

PartFiles AssignPart(const std::vector<std::string>& files, int part, int num_parts) {
  PartFiles out;
  out.by_line = static_cast<int64_t>(files.size()) < num_parts;
  for (size_t k = 0; k < files.size(); ++k) {
    if (out.by_line || static_cast<int>(k % static_cast<size_t>(num_parts)) == part) out.files.push_back(files[k]);
  }
  return out;
}

absl::StatusOr<CtrData> ReadCriteo(const CriteoOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  CriteoFormat format;
  format.num_numeric = options.num_numeric;
  format.num_categorical = options.num_categorical;
  format.table_sizes = options.table_sizes;
  format.max_line_bytes = options.max_line_bytes;
  RETURN_IF_ERROR(ValidateCriteoFormat(format));
  ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandDataFiles(options.files_or_globs));
  const PartFiles mine = AssignPart(files, options.part, options.num_parts);

  CriteoParser::Options parse;
  parse.skip_bad_lines = options.skip_bad_lines;
  if (mine.by_line) {
    parse.part = options.part;
    parse.num_parts = options.num_parts;
  }
  CriteoParser parser(std::move(format), parse);
  for (const std::string& file : mine.files) {
    parser.BeginFile(file);
    RETURN_IF_ERROR(ReadMaybeGzipFileInChunks(file, kReadChunkBytes,
                                              [&parser](absl::string_view chunk) { return parser.Feed(chunk); }));
    RETURN_IF_ERROR(parser.EndFile());
  }
  return parser.Finish();
}

}  // namespace pstrain
