#include "ps/store/row_arena.h"

namespace pstrain {

int64_t RowArena::Allocate() {
  if (!free_.empty()) {
    const int64_t row = free_.back();
    free_.pop_back();
    return row;
  }
  if (used_ == static_cast<int64_t>(chunks_.size()) * kRowsPerChunk) {
    // Default-initialised: pages are only touched as records are used.
    chunks_.emplace_back(new char[static_cast<size_t>(kRowsPerChunk * record_bytes_)]);
  }
  return used_++;
}

void RowArena::Clear() {
  chunks_.clear();
  chunks_.shrink_to_fit();
  free_.clear();
  free_.shrink_to_fit();
  used_ = 0;
}

int64_t RowArena::MemoryBytes() const {
  return static_cast<int64_t>(chunks_.size()) * kRowsPerChunk * record_bytes_ +
         static_cast<int64_t>(chunks_.capacity() * sizeof(chunks_[0]) + free_.capacity() * sizeof(int64_t));
}

}  // namespace pstrain
