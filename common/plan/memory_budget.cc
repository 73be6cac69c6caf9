#include "common/plan/memory_budget.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/plan/dynamic_row_bytes.h"
#include "common/plan/model_variables.h"
#include "common/platform/checked_math.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"

namespace pstrain {
namespace {

// A cgroup limit file: a number of bytes, or "max" (no limit: returns false).
bool ReadLimit(Env* env, const std::string& path, int64_t* bytes) {
  if (!env->FileExists(path)) return false;
  absl::StatusOr<std::string> text = env->ReadFile(path);
  if (!text.ok()) return false;
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), bytes) && *bytes > 0;
}

}  // namespace

absl::StatusOr<int64_t> HostMemoryBytes(Env* env) {
  absl::StatusOr<std::string> meminfo = env->ReadFile("/proc/meminfo");
  if (!meminfo.ok()) return absl::NotFoundError("cannot read /proc/meminfo");
  int64_t total = -1;
  for (absl::string_view line : absl::StrSplit(*meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemTotal:")) continue;
    absl::string_view kb = absl::StripAsciiWhitespace(line);
    absl::ConsumeSuffix(&kb, "kB");
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(kb), &total) || total <= 0 || !CheckedMul(total, 1024, &total)) {
      return absl::NotFoundError("/proc/meminfo has an unreadable MemTotal");
    }
  }
  if (total <= 0) return absl::NotFoundError("/proc/meminfo has no MemTotal");
  int64_t limit = 0;
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    if (ReadLimit(env, path, &limit)) total = std::min(total, limit);
  }
  return total;
}

absl::StatusOr<int64_t> MemoryBudgetBytes(Env* env, int64_t flag_bytes) {
  if (flag_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kMemoryBudgetFlag, " must not be negative, got ", flag_bytes, " (0: half of this host's memory)"));
  }
  if (flag_bytes > 0) return flag_bytes;
  absl::StatusOr<int64_t> host = HostMemoryBytes(env);
  return host.ok() ? *host / 2 : kFallbackMemoryBudgetBytes;
}

absl::Status CheckMemoryBudget(absl::string_view task, int64_t bytes, absl::string_view what, int64_t budget,
                               absl::string_view how_to_fix) {
  if (bytes <= budget) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(task, " would hold ", FormatBytes(bytes), " (", what,
                                                 "), more than its memory budget of ", FormatBytes(budget), "; ",
                                                 how_to_fix));
}

absl::StatusOr<std::vector<int64_t>> PsSlotBytes(const VariablePlan& plan, int slots) {
  std::vector<int64_t> out(plan.ps_bytes.size(), 0);
  for (const PlannedVariable& pv : plan.variables) {
    if (!pv.variable.trainable) continue;  // moving statistics have no optimizer slots
    for (const PlannedShard& s : pv.shards) {
      const int64_t elements = s.bytes / std::max<int64_t>(DTypeSize(pv.variable.dtype), 1);
      const std::string what = absl::StrCat("the optimizer slots of ", s.name);
      ASSIGN_OR_RETURN(int64_t bytes, CheckedSizeProduct(elements, int64_t{4} * slots, what));
      // A backup keeps the optimizer slots too.
      for (int ps : {s.ps, s.backup_ps}) {
        if (ps < 0) continue;
        int64_t& held = out[static_cast<size_t>(ps)];
        ASSIGN_OR_RETURN(held, CheckedSizeSum(held, bytes, absl::StrCat("ps ", ps, "'s optimizer slots")));
      }
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> PsDynamicOverheadBytes(const VariablePlan& plan) {
  std::vector<int64_t> out(plan.ps_bytes.size(), 0);
  for (const PlannedVariable& pv : plan.variables) {
    if (!pv.variable.dynamic) continue;
    for (const PlannedShard& s : pv.shards) {
      const std::string what = absl::StrCat("the row overhead and admission filter of dynamic shard ", s.name);
      ASSIGN_OR_RETURN(int64_t bytes, CheckedSizeProduct(s.rows, kDynamicRowOverheadBytes, what));
      ASSIGN_OR_RETURN(bytes, CheckedSizeSum(bytes, DynamicFilterBytes(pv.variable.dynamic->admission_threshold), what));
      int64_t& held = out[static_cast<size_t>(s.ps)];
      ASSIGN_OR_RETURN(held, CheckedSizeSum(held, bytes, what));
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> PsTaskBytes(const VariablePlan& plan, int slots) {
  ASSIGN_OR_RETURN(std::vector<int64_t> out, PsSlotBytes(plan, slots));
  ASSIGN_OR_RETURN(std::vector<int64_t> overhead, PsDynamicOverheadBytes(plan));
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string what = absl::StrCat("ps ", i, "'s bytes");
    ASSIGN_OR_RETURN(out[i], CheckedSizeSum(plan.ps_bytes[i], out[i], what));
    ASSIGN_OR_RETURN(out[i], CheckedSizeSum(out[i], overhead[i], what));
  }
  return out;
}

std::string ComputeBytes::Describe() const {
  return absl::StrCat(FormatBytes(variables), " of variables, gradients and optimizer slots, ", FormatBytes(data),
                      " of data, ", FormatBytes(activations), " of activations");
}

absl::StatusOr<ComputeBytes> EstimateComputeBytes(const ModelSpec& model, int64_t batch, int64_t examples_in_memory,
                                                  int slots, bool applies_updates) {
  ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(model));
  ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> outputs, LayerOutputShapes(model));
  ComputeBytes b;
  const std::string what = "the model's memory";
  for (const VariableSpec& v : variables) {
    ASSIGN_OR_RETURN(int64_t bytes, CheckedNumBytes(v.shape, DTypeSize(v.dtype), what));
    int64_t copies = 2 + (v.trainable ? slots : 0);  // values, gradients, slots (none for moving statistics)
    if (v.sparse) {
      // A step's rows (gathered values and their gradient rows), and the whole table with its slots
      // where the updates are applied.
      const std::vector<int64_t> rows = {std::min(batch, v.shape[0]), v.shape[1]};
      ASSIGN_OR_RETURN(int64_t step_bytes, CheckedNumBytes(rows, 2 * DTypeSize(v.dtype), what));
      if (!applies_updates) bytes = 0;
      ASSIGN_OR_RETURN(bytes, CheckedSizeProduct(bytes, 1 + slots, what));
      if (v.dynamic && applies_updates) {
        ASSIGN_OR_RETURN(int64_t overhead, CheckedSizeProduct(v.shape[0], kDynamicRowOverheadBytes, what));
        ASSIGN_OR_RETURN(overhead, CheckedSizeSum(overhead, DynamicFilterBytes(v.dynamic->admission_threshold), what));
        ASSIGN_OR_RETURN(bytes, CheckedSizeSum(bytes, overhead, what));
      }
      ASSIGN_OR_RETURN(bytes, CheckedSizeSum(bytes, step_bytes, what));
      copies = 1;
    }
    ASSIGN_OR_RETURN(bytes, CheckedSizeProduct(bytes, copies, what));
    ASSIGN_OR_RETURN(b.variables, CheckedSizeSum(b.variables, bytes, what));
  }
  ASSIGN_OR_RETURN(const int64_t example_bytes, CheckedNumBytes(model.input_shape, sizeof(float), what));
  ASSIGN_OR_RETURN(b.data, CheckedSizeProduct(example_bytes + sizeof(float), examples_in_memory, what));
  // Per example: the input, each layer's output and its gradient, and a conv2d's im2col patches.
  int64_t per_example = example_bytes;
  std::vector<int64_t> in = model.input_shape;
  for (size_t i = 0; i < outputs.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t out_bytes, CheckedNumBytes(outputs[i], 2 * sizeof(float), what));
    ASSIGN_OR_RETURN(per_example, CheckedSizeSum(per_example, out_bytes, what));
    if (model.is_graph()) continue;  // its layers are model.graph's
    const LayerSpec& layer = model.layers[i];
    if (layer.type == "conv2d" && in.size() == 3 && outputs[i].size() == 3) {
      ASSIGN_OR_RETURN(int64_t patches,
                       CheckedNumBytes({outputs[i][0], outputs[i][1], layer.kernel_size, layer.kernel_size, in[2]},
                                       sizeof(float), what));
      ASSIGN_OR_RETURN(per_example, CheckedSizeSum(per_example, patches, what));
    }
    in = outputs[i];
  }
  ASSIGN_OR_RETURN(b.activations, CheckedSizeProduct(per_example, batch, what));
  ASSIGN_OR_RETURN(int64_t total, CheckedSizeSum(b.variables, b.data, what));
  RETURN_IF_ERROR(CheckedSizeSum(total, b.activations, what).status());
  return b;
}

int64_t ExamplesInMemory(const DataSpec& data) {
  if (data.dataset == "fashion_mnist") return 70000;
  if (data.dataset == "synthetic_linear") return data.num_examples + std::max<int64_t>(1, data.num_examples / 4);
  return 0;
}

}  // namespace pstrain
