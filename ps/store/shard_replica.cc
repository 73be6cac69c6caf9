// Shard's backup side of replication (ps_replicas 1): forwarded updates applied in the primary's
// version order. See shard.h.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ps/store/shard.h"

namespace pstrain {
namespace {

void RunAll(std::vector<std::function<void()>>& fns) {
  for (auto& f : fns) f();
}

}  // namespace

void Shard::ApplyReplicaLocked(const float* dense, const RowGradients& rows,
                               std::vector<std::function<void()>>* run_after) {
  if (spec_.sparse()) {
    ApplyRowsLocked(rows, run_after);
  } else {
    ApplyLocked(dense, run_after);
  }
}

void Shard::HoldLocked(int64_t version, const char* dense, RowGradients rows) {
  auto [it, fresh] = held_.try_emplace(version);
  HeldUpdate& held = it->second;
  if (!fresh) held_bytes_ -= held.bytes();  // a retried forward of a held version: the same update
  if (spec_.sparse()) {
    held.rows = std::move(rows);
  } else {
    if (held.dense.empty()) held.dense = std::move(spare_dense_);  // sized already: no allocation, no zeroing
    held.dense.resize(num_bytes_ / sizeof(float));
    if (num_bytes_ > 0) std::memcpy(held.dense.data(), dense, num_bytes_);
  }
  held_bytes_ += held.bytes();
}

Shard::HeldUpdate Shard::TakeFirstHeldLocked() {
  HeldUpdate first = std::move(held_.begin()->second);
  held_.erase(held_.begin());
  held_bytes_ -= first.bytes();
  return first;
}

bool Shard::DeferReplica(int64_t version, const char* dense, RowGradients* rows, int64_t max_held_bytes) {
  absl::MutexLock l(&mu_);
  if (awaiting_state_ || version <= version_) return false;
  const int64_t bytes = spec_.sparse() ? HeldUpdate::RowsBytes(*rows) : static_cast<int64_t>(num_bytes_);
  if (held_bytes_ + bytes > max_held_bytes) return false;
  HoldLocked(version, dense, std::move(*rows));
  return true;
}

int64_t Shard::ApplyDeferredReplicaUpdates() {
  std::vector<std::function<void()>> run_after;
  int64_t applied = 0;
  {
    absl::MutexLock l(&mu_);
    if (awaiting_state_) return 0;  // InstallReplicaState applies them after the state
    const int64_t before = version_;
    DrainHeldLocked(&run_after);
    applied = version_ - before;
  }
  RunAll(run_after);
  return applied;
}

absl::StatusOr<int64_t> Shard::ApplyReplica(int64_t version, const char* dense, RowGradients rows,
                                            int64_t max_held_bytes) {
  std::vector<std::function<void()>> run_after;
  int64_t reached;
  {
    absl::MutexLock l(&mu_);
    if (awaiting_state_ || version > version_ + 1) {
      // An earlier update is still on its way: keep a copy until it lands. A primary has at most
      // a few forwards in flight, so the bound binds only a peer sending far-ahead versions, or a
      // long wait for the state while pushes go on.
      const int64_t bytes = spec_.sparse() ? HeldUpdate::RowsBytes(rows) : static_cast<int64_t>(num_bytes_);
      if (held_bytes_ > 0 && held_.count(version) == 0 && held_bytes_ + bytes > max_held_bytes) {
        return absl::UnavailableError(absl::StrCat(
            "the backup of shard ", name(), " holds ", held_.size(), " updates (", held_bytes_,
            " bytes) waiting for ", awaiting_state_ ? "its state from the primary" : absl::StrCat("version ", version_ + 1),
            "; update ", version, " (", bytes, " bytes) would pass the ", max_held_bytes,
            " bytes it may hold: send it again once the earlier ones have landed"));
      }
      HoldLocked(version, dense, std::move(rows));
    } else if (version == version_ + 1) {
      if (!spec_.sparse() && reinterpret_cast<uintptr_t>(dense) % alignof(float) != 0) {
        std::vector<float> aligned(num_bytes_ / sizeof(float));
        if (num_bytes_ > 0) std::memcpy(aligned.data(), dense, num_bytes_);
        ApplyReplicaLocked(aligned.data(), rows, &run_after);
      } else {
        ApplyReplicaLocked(reinterpret_cast<const float*>(dense), rows, &run_after);
      }
      DrainHeldLocked(&run_after);
    }  // else: already applied (a forward retried after its answer was lost)
    reached = version_;
  }
  RunAll(run_after);
  return reached;
}

void Shard::DrainHeldLocked(std::vector<std::function<void()>>* run_after) {
  while (!held_.empty() && held_.begin()->first <= version_) TakeFirstHeldLocked();  // already in
  while (!held_.empty() && held_.begin()->first == version_ + 1) {
    HeldUpdate next = TakeFirstHeldLocked();
    ApplyReplicaLocked(next.dense.data(), next.rows, run_after);
    if (!next.dense.empty()) spare_dense_ = std::move(next.dense);
  }
}

ShardSnapshot Shard::SnapshotForBackup(int ps) {
  absl::MutexLock l(&mu_);
  forward_to_ = ps;
  ShardSnapshot snap;
  snap.values = *values_;
  snap.slots = slots_;
  snap.version = version_;
  return snap;
}

absl::Status Shard::InstallReplicaState(absl::string_view values, const std::vector<absl::string_view>& slots,
                                        int64_t version) {
  std::vector<std::function<void()>> run_after;
  {
    absl::MutexLock l(&mu_);
    if (values.size() != num_bytes_ || slots.size() != slots_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", name(), ": a state of ", values.size(), " bytes and ",
                                                     slots.size(), " slots does not fit its ", num_bytes_,
                                                     " bytes and ", slots_.size(), " slots"));
    }
    for (absl::string_view s : slots) {
      if (s.size() != num_bytes_) {
        return absl::InvalidArgumentError(absl::StrCat("shard ", name(), ": a slot of ", s.size(),
                                                       " bytes does not fit its ", num_bytes_, " bytes"));
      }
    }
    PrepareWriteLocked();
    if (num_bytes_ > 0) {
      std::memcpy(values_->raw(), values.data(), num_bytes_);
      for (size_t i = 0; i < slots.size(); ++i) std::memcpy(slots_[i].raw(), slots[i].data(), num_bytes_);
    }
    version_ = version;
    awaiting_state_ = false;
    DrainHeldLocked(&run_after);
  }
  RunAll(run_after);
  return absl::OkStatus();
}

int64_t Shard::ApplyHeldReplicaUpdates() {
  std::vector<std::function<void()>> run_after;
  int64_t applied = 0;
  {
    absl::MutexLock l(&mu_);
    awaiting_state_ = false;  // promoted before its state came: what it has is all there is
    while (!held_.empty()) {
      // Versions stay the primary's: the update lands as the version it had there.
      version_ = std::max(version_, held_.begin()->first - 1);
      HeldUpdate next = TakeFirstHeldLocked();
      ApplyReplicaLocked(next.dense.data(), next.rows, &run_after);
      ++applied;
    }
  }
  RunAll(run_after);
  return applied;
}

int64_t Shard::held_replica_updates() const {
  absl::MutexLock l(&mu_);
  return static_cast<int64_t>(held_.size());
}

}  // namespace pstrain
