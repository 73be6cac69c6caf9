// The standard process metrics of a Prometheus client (process_resident_memory_bytes,
// process_virtual_memory_bytes, process_cpu_seconds_total, process_start_time_seconds,
// process_threads), read from /proc/self at scrape time, and pstrain_task_info naming the task.
// Thread-safety: the collector reads files only; safe on any thread.
#ifndef PSTRAIN_COMMON_METRICS_PROCESS_METRICS_H_
#define PSTRAIN_COMMON_METRICS_PROCESS_METRICS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "common/metrics/metrics_registry.h"

namespace pstrain {

struct ProcessSample {
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double cpu_seconds = 0;
  double start_time_seconds = 0;  // since the epoch
  double threads = 0;
};

// Parses /proc/self/statm ("size resident shared ...", in pages) and /proc/self/stat (fields 14-15
// utime/stime, 20 num_threads, 22 starttime, in clock ticks since boot). nullopt on malformed text.
std::optional<ProcessSample> ParseProcFiles(const std::string& statm, const std::string& stat, int64_t page_size,
                                            int64_t ticks_per_second, double boot_time_seconds);

// Registers pstrain_task_info{task, role} = 1 and a collector that adds the process metrics.
// `registry` is not owned and must outlive every Render().
void AddProcessMetrics(MetricsRegistry* registry, const std::string& task, const std::string& role);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_METRICS_PROCESS_METRICS_H_
