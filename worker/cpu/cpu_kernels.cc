#include "worker/cpu/cpu_kernels.h"

#include "common/platform/cpu_level.h"

namespace pstrain {

// Each level's table, compiled from worker/cpu/isa/ with that level's flags.
namespace isa_baseline {
const CpuKernels& Table();
}
namespace isa_avx2 {
const CpuKernels& Table();
}
namespace isa_avx512 {
const CpuKernels& Table();
}

const CpuKernels& CpuKernelsFor(CpuLevel level) {
  return PickForLevel(level, &isa_baseline::Table, &isa_avx2::Table, &isa_avx512::Table);
}

const CpuKernels& ActiveCpuKernels() { return CpuKernelsFor(ActiveCpuLevel()); }

}  // namespace pstrain
