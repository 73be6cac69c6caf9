// This CPU level's kernel table (worker/cpu/cpu_kernels.h), in the order of its fields.
#include "common/platform/simd.h"
#include "worker/cpu/isa/isa_kernels.h"

namespace pstrain {
namespace PSTRAIN_ISA_NS {

const CpuKernels& Table() {
  static constexpr CpuKernels kTable = {
      kLanes,              //
      PackedBSize,         //
      PackB,               //
      GemmNN,              //
      GemmTN,              //
      ColumnSums,          //
      BiasActivation,      //
      Relu,                //
      ReluBackward,        //
      Add,                 //
      MaxPoolRow,          //
      MaxPoolRowBackward,  //
      GatherRows,          //
      ScatterAddRows,      //
  };
  return kTable;
}

}  // namespace PSTRAIN_ISA_NS
}  // namespace pstrain
