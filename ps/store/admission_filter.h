// The counting filter behind a dynamic table's admission rule ("a key becomes a row after it was
// seen N times"): a count-min sketch of fixed size, so memory does not grow with the unbounded key
// space the filter exists to keep out of the table.
//
// `depth` rows of `width` 8-bit counters; a key maps to one counter per row by Mix64 of the key with
// the row's salt. Add(key) raises only the key's counters that hold the minimum (conservative
// update) and returns the new minimum, the key's estimated count. Counters saturate at 255.
// False admission: the estimate never undercounts, but keys that share counters inflate each
// other, so a key may be admitted before it was really seen N times (never after). With n distinct
// keys counted, a key's counter in one row is shared with about n/width others, and it is admitted
// early only if all `depth` of its counters are inflated; width >= a few times the distinct keys
// seen between checkpoints keeps that rare. Counts never decay: a key seen N times stays admissible.
// The state (width, depth, counters) is plain bytes, checkpointed with its table; sketches of the
// same size merge by a saturating sum (the counts of two key sets).
// Thread-safety: none; the owning table locks.
#ifndef PSTRAIN_PS_STORE_ADMISSION_FILTER_H_
#define PSTRAIN_PS_STORE_ADMISSION_FILTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace pstrain {

class AdmissionFilter {
 public:
  static constexpr int kMaxCount = 255;

  // An empty sketch. REQUIRES: width >= 1, 1 <= depth <= 8.
  AdmissionFilter(int64_t width, int depth);

  // Counts one more sighting of `key`; returns its estimated count so far (at most kMaxCount).
  int Add(uint64_t key);
  // The estimated count, unchanged.
  int Estimate(uint64_t key) const;

  // Adds `other`'s counts (saturating). InvalidArgument when the sizes differ.
  absl::Status Merge(const AdmissionFilter& other);

  int64_t width() const { return width_; }
  int depth() const { return depth_; }
  // depth * width counters, row after row.
  const std::vector<uint8_t>& counters() const { return counters_; }
  // Replaces the counters. InvalidArgument when counters.size() != depth * width.
  absl::Status SetCounters(std::vector<uint8_t> counters);
  int64_t MemoryBytes() const { return static_cast<int64_t>(counters_.capacity()); }

 private:
  size_t Cell(uint64_t key, int row) const;

  int64_t width_;
  int depth_;
  std::vector<uint8_t> counters_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_ADMISSION_FILTER_H_
