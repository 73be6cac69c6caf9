#include "ps/store/optimizer_kernels.h"

#include "common/platform/cpu_level.h"

namespace pstrain {

// Each level's table, compiled from isa/optimizer_loops.cc with that level's flags.
namespace isa_baseline {
const OptimizerKernels& OptimizerTable();
}
namespace isa_avx2 {
const OptimizerKernels& OptimizerTable();
}
namespace isa_avx512 {
const OptimizerKernels& OptimizerTable();
}

const OptimizerKernels& OptimizerKernelsFor(CpuLevel level) {
  return PickForLevel(level, &isa_baseline::OptimizerTable, &isa_avx2::OptimizerTable, &isa_avx512::OptimizerTable);
}

const OptimizerKernels& ActiveOptimizerKernels() { return OptimizerKernelsFor(ActiveCpuLevel()); }

}  // namespace pstrain
