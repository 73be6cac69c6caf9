// Storage of a dynamic table's rows: fixed-size records in chunks of kRowsPerChunk records, with a
// free list of records given back. A record is a 16-byte RowHeader followed by the row's floats
// (the values, then each optimizer slot, dim floats each), so one row's data is contiguous and one
// or two cache lines away from its header. Chunks never move once allocated, so growing the table
// never copies it (no doubling peak) and a record's address is stable until it is freed.
// Memory: chunks x kRowsPerChunk x RecordBytes() plus 8 bytes per free-list entry.
// Thread-safety: none; the owning table locks.
#ifndef PSTRAIN_PS_STORE_ROW_ARENA_H_
#define PSTRAIN_PS_STORE_ROW_ARENA_H_

#include <cstdint>
#include <memory>
#include <vector>

namespace pstrain {

// Bookkeeping kept in front of each row. A record is 16 + 4 x floats bytes, so when a row's floats
// are odd in number every other header sits at an address that is a multiple of 4 but not of 8:
// the header asks for 4-byte alignment only (packed to 4), rather than padding every record.
#pragma pack(push, 4)
struct RowHeader {
  int64_t last_update_step;  // the step of the last push that changed the row
  uint32_t push_tag;         // the push that last touched the row (duplicate detection within a push)
  uint32_t push_position;    // the row's position among that push's distinct rows
};
#pragma pack(pop)
static_assert(sizeof(RowHeader) == 16 && alignof(RowHeader) == 4,
              "RowHeader: 16 bytes, valid at any record's 4-byte-aligned address");

class RowArena {
 public:
  static constexpr int64_t kRowsPerChunk = 4096;

  // REQUIRES: floats_per_row >= 1.
  explicit RowArena(int64_t floats_per_row)
      : floats_per_row_(floats_per_row),
        record_bytes_(static_cast<int64_t>(sizeof(RowHeader)) + floats_per_row * static_cast<int64_t>(sizeof(float))) {}

  // A record's index, reused from the free list first; its contents are unspecified.
  int64_t Allocate();
  // Gives `row` back. REQUIRES: row came from Allocate and was not freed since.
  void Free(int64_t row) { free_.push_back(row); }
  // Drops every record and chunk.
  void Clear();

  RowHeader* header(int64_t row) const { return reinterpret_cast<RowHeader*>(Record(row)); }
  float* floats(int64_t row) const { return reinterpret_cast<float*>(Record(row) + sizeof(RowHeader)); }

  int64_t floats_per_row() const { return floats_per_row_; }
  int64_t RecordBytes() const { return record_bytes_; }
  // Bytes held: every chunk, the chunk table and the free list.
  int64_t MemoryBytes() const;

 private:
  char* Record(int64_t row) const {
    return chunks_[static_cast<size_t>(row / kRowsPerChunk)].get() + (row % kRowsPerChunk) * record_bytes_;
  }

  const int64_t floats_per_row_;
  const int64_t record_bytes_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  int64_t used_ = 0;  // records handed out from the chunks so far (freed ones included)
  std::vector<int64_t> free_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_ROW_ARENA_H_
