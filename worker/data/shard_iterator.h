// Input pipeline over an in-memory Dataset. ShardIterator walks one worker's disjoint shard of the
// training examples (example i belongs to shard i % num_shards), reshuffled every epoch from a
// seed, in batches, repeating forever; as tf.data's .batch() the last batch of an epoch may be
// short. EvalRange/FillRange cut an exact shard of a test set so each example is seen once.
// Thread-safety: ShardIterator is used by one thread at a time; the Dataset is shared read-only.
#ifndef PSTRAIN_WORKER_DATA_SHARD_ITERATOR_H_
#define PSTRAIN_WORKER_DATA_SHARD_ITERATOR_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "worker/data/dataset.h"
#include "worker/step/batch.h"

namespace pstrain {

class ShardIterator {
 public:
  // REQUIRES: 0 <= shard_index < num_shards; the shard is not empty (dataset size > shard_index).
  ShardIterator(std::shared_ptr<const Dataset> data, int shard_index, int num_shards, uint64_t seed);

  int64_t shard_size() const { return static_cast<int64_t>(order_.size()); }
  // Epochs started so far minus one (0 during the first pass).
  int64_t epoch() const { return epoch_; }
  // Batches of `batch_size` per pass over the shard, the short last one included.
  int64_t BatchesPerEpoch(int64_t batch_size) const { return (shard_size() + batch_size - 1) / batch_size; }

  // Writes the next min(batch_size, examples left in this epoch) examples into `batch`, reusing
  // its buffers; starts a new, reshuffled epoch when the current one is used up. REQUIRES: batch_size > 0.
  void Next(int64_t batch_size, Batch* batch);

  // Moves to batch `position` of this shard's stream of `batch_size` batches, as if Next had been
  // called `position` times from a fresh iterator: epoch = position / BatchesPerEpoch, the offset
  // inside it (position % BatchesPerEpoch) * batch_size. Deterministic, so any worker can produce
  // any batch of any shard. REQUIRES: position >= 0, batch_size > 0.
  void Seek(int64_t position, int64_t batch_size);

 private:
  void Shuffle();

  std::shared_ptr<const Dataset> data_;
  std::vector<int64_t> order_;  // this shard's example indices, in this epoch's order
  uint64_t seed_;
  int shard_index_;
  int64_t epoch_ = 0;
  int64_t position_ = 0;
};

// The contiguous examples [first, second) that shard `shard` of `num_shards` evaluates: the test
// set split into num_shards nearly equal parts. REQUIRES: 0 <= shard < num_shards.
std::pair<int64_t, int64_t> EvalRange(int64_t size, int shard, int num_shards);

// Copies examples [begin, end) of `data` into `batch` (reusing its buffers).
void FillRange(const Dataset& data, int64_t begin, int64_t end, Batch* batch);

// Copies examples [begin, end) of `from` into `to` (inputs, labels, targets, ids and positions
// alike), reusing its buffers. REQUIRES: 0 <= begin <= end <= from.size().
void SliceBatch(const Batch& from, int64_t begin, int64_t end, Batch* to);

// Puts `order` in shard `shard_index`'s order for `epoch`: sorted, then a Fisher-Yates shuffle
// seeded from (seed, shard_index, epoch) with our own draws, so every standard library gives the
// same order. ShardIterator's per-epoch reshuffle; any other pipeline reshuffles with it too.
void ShuffleForEpoch(uint64_t seed, int shard_index, int64_t epoch, std::vector<int64_t>* order);

// Deterministic 64-bit mixing (SplitMix64), for seeds derived from a job seed.
uint64_t MixSeed(uint64_t seed, uint64_t salt);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_SHARD_ITERATOR_H_
