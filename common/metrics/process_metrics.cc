#include "common/metrics/process_metrics.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace pstrain {
namespace {

std::string ReadProcFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "btime <secs>" of /proc/stat: when the machine booted.
double BootTimeSeconds() {
  std::istringstream in(ReadProcFile("/proc/stat"));
  std::string line;
  while (std::getline(in, line)) {
    double v = 0;
    if (line.rfind("btime ", 0) == 0 && absl::SimpleAtod(line.substr(6), &v)) return v;
  }
  return 0;
}

}  // namespace

std::optional<ProcessSample> ParseProcFiles(const std::string& statm, const std::string& stat, int64_t page_size,
                                            int64_t ticks_per_second, double boot_time_seconds) {
  std::vector<std::string> pages = absl::StrSplit(statm, ' ', absl::SkipWhitespace());
  double size = 0, resident = 0;
  if (pages.size() < 2 || !absl::SimpleAtod(pages[0], &size) || !absl::SimpleAtod(pages[1], &resident)) {
    return std::nullopt;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::vector<std::string> f = absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipWhitespace());
  // f[0] is field 3 (state), so field N is f[N - 3].
  double utime = 0, stime = 0, threads = 0, start = 0;
  if (f.size() < 20 || !absl::SimpleAtod(f[11], &utime) || !absl::SimpleAtod(f[12], &stime) ||
      !absl::SimpleAtod(f[17], &threads) || !absl::SimpleAtod(f[19], &start) || ticks_per_second <= 0) {
    return std::nullopt;
  }
  ProcessSample s;
  s.resident_bytes = resident * page_size;
  s.virtual_bytes = size * page_size;
  s.cpu_seconds = (utime + stime) / ticks_per_second;
  s.threads = threads;
  s.start_time_seconds = boot_time_seconds + start / ticks_per_second;
  return s;
}

void AddProcessMetrics(MetricsRegistry* registry, const std::string& task, const std::string& role) {
  registry->GetGauge("pstrain_task_info", "The task this process runs (always 1)", {{"task", task}, {"role", role}})
      ->Set(1);
  const double boot = BootTimeSeconds();
  const int64_t page = sysconf(_SC_PAGESIZE), ticks = sysconf(_SC_CLK_TCK);
  registry->AddCollector([boot, page, ticks](MetricsSnapshot* out) {
    std::optional<ProcessSample> s =
        ParseProcFiles(ReadProcFile("/proc/self/statm"), ReadProcFile("/proc/self/stat"), page, ticks, boot);
    if (!s.has_value()) return;
    out->AddGauge("process_resident_memory_bytes", "Resident memory size in bytes", {}, s->resident_bytes);
    out->AddGauge("process_virtual_memory_bytes", "Virtual memory size in bytes", {}, s->virtual_bytes);
    out->AddCounter("process_cpu_seconds_total", "User and system CPU time spent in seconds", {}, s->cpu_seconds);
    out->AddGauge("process_start_time_seconds", "Start time of the process since the Unix epoch in seconds", {},
                  s->start_time_seconds);
    out->AddGauge("process_threads", "Number of OS threads in the process", {}, s->threads);
  });
}

}  // namespace pstrain
