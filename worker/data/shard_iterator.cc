#include "worker/data/shard_iterator.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace pstrain {
namespace {

// Resizes the batch's buffers only when the number of examples changes.
void PrepareBatch(const Dataset& data, int64_t n, Batch* batch) {
  std::vector<int64_t> shape = {n};
  shape.insert(shape.end(), data.example_shape.begin(), data.example_shape.end());
  if (batch->inputs.shape() != shape || batch->inputs.dtype() != DType::kFloat32) {
    batch->inputs = Tensor(DType::kFloat32, shape);
  }
  batch->labels.resize(data.labels.empty() ? 0 : n);
  batch->targets.resize(n * data.target_width);
  batch->ids.resize(n * data.ids_per_example);
  batch->bags.resize(data.bags.size());
  for (size_t k = 0; k < data.bags.size(); ++k) {
    batch->bags[k].field = data.bags[k].field;
    batch->bags[k].ClearExamples();
  }
}

void CopyExample(const Dataset& data, int64_t from, int64_t to, Batch* batch) {
  const int64_t width = data.example_floats();
  std::memcpy(batch->inputs.data<float>() + to * width, data.features.data() + from * width, sizeof(float) * width);
  if (!data.labels.empty()) batch->labels[to] = data.labels[from];
  for (int64_t t = 0; t < data.target_width; ++t) {
    batch->targets[to * data.target_width + t] = data.targets[from * data.target_width + t];
  }
  const int64_t k = data.ids_per_example;
  if (k > 0) std::memcpy(batch->ids.data() + to * k, data.ids.data() + from * k, sizeof(int64_t) * k);
  // Examples are copied in batch order (to = 0, 1, ...), so each bag appends.
  for (size_t j = 0; j < data.bags.size(); ++j) batch->bags[j].AppendExample(data.bags[j], from);
}

}  // namespace

uint64_t MixSeed(uint64_t seed, uint64_t salt) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (salt + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

ShardIterator::ShardIterator(std::shared_ptr<const Dataset> data, int shard_index, int num_shards, uint64_t seed)
    : data_(std::move(data)), seed_(seed), shard_index_(shard_index) {
  for (int64_t i = shard_index; i < data_->size; i += num_shards) order_.push_back(i);
  Shuffle();
}

void ShuffleForEpoch(uint64_t seed, int shard_index, int64_t epoch, std::vector<int64_t>* order) {
  std::sort(order->begin(), order->end());
  std::mt19937_64 rng(MixSeed(MixSeed(seed, static_cast<uint64_t>(shard_index)), static_cast<uint64_t>(epoch)));
  for (size_t i = order->size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng() % i);
    std::swap((*order)[i - 1], (*order)[j]);
  }
}

void ShardIterator::Shuffle() { ShuffleForEpoch(seed_, shard_index_, epoch_, &order_); }

void ShardIterator::Next(int64_t batch_size, Batch* batch) {
  if (position_ >= shard_size()) {
    ++epoch_;
    position_ = 0;
    Shuffle();
  }
  const int64_t n = std::min(batch_size, shard_size() - position_);
  PrepareBatch(*data_, n, batch);
  for (int64_t i = 0; i < n; ++i) CopyExample(*data_, order_[position_ + i], i, batch);
  position_ += n;
}

void ShardIterator::Seek(int64_t position, int64_t batch_size) {
  const int64_t per_epoch = BatchesPerEpoch(batch_size);
  const int64_t epoch = position / per_epoch;
  if (epoch != epoch_) {
    epoch_ = epoch;
    Shuffle();
  }
  position_ = (position % per_epoch) * batch_size;
}

std::pair<int64_t, int64_t> EvalRange(int64_t size, int shard, int num_shards) {
  return {size * shard / num_shards, size * (shard + 1) / num_shards};
}

void SliceBatch(const Batch& from, int64_t begin, int64_t end, Batch* to) {
  const int64_t n = from.size();
  std::vector<int64_t> shape = from.inputs.shape();
  shape[0] = end - begin;
  if (to->inputs.shape() != shape || to->inputs.dtype() != from.inputs.dtype()) {
    to->inputs = Tensor(from.inputs.dtype(), shape);
  }
  const size_t row_bytes = n == 0 ? 0 : from.inputs.num_bytes() / n;
  if (row_bytes > 0) std::memcpy(to->inputs.raw(), from.inputs.raw() + begin * row_bytes, row_bytes * (end - begin));
  // Per-example widths of the other fields (0 when a field is unused).
  auto slice = [&](const auto& src, auto* dst) {
    const int64_t width = n == 0 ? 0 : static_cast<int64_t>(src.size()) / n;
    dst->assign(src.begin() + begin * width, src.begin() + end * width);
  };
  slice(from.labels, &to->labels);
  slice(from.targets, &to->targets);
  slice(from.ids, &to->ids);
  slice(from.positions, &to->positions);
  to->bags.resize(from.bags.size());
  to->bag_positions.resize(from.bag_positions.size());
  for (size_t k = 0; k < from.bags.size(); ++k) {
    const IdBags& bag = from.bags[k];
    IdBags& out = to->bags[k];
    out.field = bag.field;
    out.ClearExamples();
    for (int64_t e = begin; e < end; ++e) out.AppendExample(bag, e);
    if (k < from.bag_positions.size()) {
      const std::vector<int32_t>& p = from.bag_positions[k];
      to->bag_positions[k].assign(p.begin() + bag.offsets[begin], p.begin() + bag.offsets[end]);
    }
  }
}

void FillRange(const Dataset& data, int64_t begin, int64_t end, Batch* batch) {
  PrepareBatch(data, end - begin, batch);
  for (int64_t i = begin; i < end; ++i) CopyExample(data, i, i - begin, batch);
}

}  // namespace pstrain
