#include "ps/store/shard_loader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/checkpoint/checkpoint_index.h"
#include "common/checkpoint/checkpoint_reader.h"
#include "common/platform/status_macros.h"
#include "ps/store/initializers.h"

namespace pstrain {
namespace {

absl::Status CheckSameVariable(const CheckpointIndex& index, const ShardSpecProto& spec, const std::string& dir) {
  for (const SavedShard& s : index.shards) {
    if (s.variable_name() != spec.variable_name()) continue;
    std::vector<int64_t> saved(s.full_shape().begin(), s.full_shape().end());
    std::vector<int64_t> wanted(spec.full_shape().begin(), spec.full_shape().end());
    if (saved != wanted || s.dtype() != spec.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shard ", spec.shard_name(), ": variable ", spec.variable_name(), " has shape ", ShapeString(wanted),
          " but the checkpoint ", dir, " saved it with shape ", ShapeString(saved), "; the model changed"));
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("shard ", spec.shard_name(), ": variable ", spec.variable_name(),
                                          " is not in the checkpoint ", dir));
}

}  // namespace

absl::StatusOr<std::vector<std::shared_ptr<Shard>>> LoadShardsFromCheckpoint(Env* env, const std::string& dir,
                                                                             const std::vector<ShardSpecProto>& specs,
                                                                             const ShardOptions& options) {
  ASSIGN_OR_RETURN(CheckpointIndex index, ReadCheckpointIndex(env, dir));
  CheckpointReader reader(env, dir, &index);
  std::vector<std::shared_ptr<Shard>> shards;
  for (const ShardSpecProto& spec : specs) {
    const ShardOptions shard_options = OptionsForShard(options, spec);
    const std::vector<std::string> slot_names = shard_options.optimizer->SlotNames();
    ASSIGN_OR_RETURN(std::vector<int64_t> shape, ShardShape(spec));
    RETURN_IF_ERROR(CheckSameVariable(index, spec, dir));
    // Each tensor is read straight into its final buffer: a shard costs its own size, no more.
    const RowSelection rows{spec.row_offset(), spec.rows(), RowStride(spec)};
    // Checked allocations: the ps's memory budget was checked, but the host may still refuse.
    ASSIGN_OR_RETURN(Tensor values, Tensor::Create(DType::kFloat32, shape, spec.shard_name()));
    RETURN_IF_ERROR(reader.ReadRowsInto(spec.variable_name(), rows, "", &values));
    std::vector<Tensor> slots;
    for (size_t i = 0; i < slot_names.size(); ++i) {
      ASSIGN_OR_RETURN(Tensor slot, Tensor::Create(DType::kFloat32, shape, spec.shard_name()));
      if (reader.HasSlot(spec.variable_name(), slot_names[i])) {
        RETURN_IF_ERROR(reader.ReadRowsInto(spec.variable_name(), rows, slot_names[i], &slot));
      } else {
        const float init = shard_options.optimizer->SlotInitialValue(static_cast<int>(i));
        if (init != 0) std::fill(slot.flat().begin(), slot.flat().end(), init);
      }
      slots.push_back(std::move(slot));
    }
    const int64_t version = reader.VersionOf(spec.variable_name(), rows);
    shards.push_back(std::make_shared<Shard>(spec, shard_options, std::move(values), std::move(slots), version));
  }
  return shards;
}

}  // namespace pstrain
