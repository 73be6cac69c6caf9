// The kernels of one CPU level, declared inside that level's namespace (PSTRAIN_ISA_NS): the
// sources under worker/cpu/isa/ define them, kernel_table.cc gathers them into the level's
// CpuKernels table. Contracts: worker/cpu/cpu_kernels.h.
// Thread-safety: pure functions.
#ifndef PSTRAIN_WORKER_CPU_ISA_ISA_KERNELS_H_
#define PSTRAIN_WORKER_CPU_ISA_ISA_KERNELS_H_

#include <cstdint>

#include "worker/cpu/cpu_kernels.h"

#ifndef PSTRAIN_ISA_NS
#error "worker/cpu/isa/ sources are compiled by pstrain_isa_sources (PSTRAIN_ISA_NS unset)"
#endif

namespace pstrain {
namespace PSTRAIN_ISA_NS {

// gemm_kernels.cc
int64_t PackedBSize(const PackBArgs& args);
const float* PackB(const PackBArgs& args, float* scratch);
void GemmNN(const GemmNNArgs& args);
void GemmTN(const GemmTNArgs& args);

// elementwise_kernels.cc
void ColumnSums(const float* d, int64_t rows, int64_t n, int64_t ld, float* out, bool accumulate);
void BiasActivation(float* out, int64_t rows, int64_t cols, const float* bias, bool relu);
void Relu(const float* in, float* out, int64_t n);
void ReluBackward(const float* out, const float* dout, float* din, int64_t n);
void Add(float* dst, const float* src, int64_t n);

// pool_kernels.cc
void MaxPoolRow(const float* in, int64_t row_stride, int64_t pixel_stride, int64_t out_width, int64_t channels,
                int64_t pool, float* out, int32_t* arg);
void MaxPoolRowBackward(const float* dout, const int32_t* arg, const float* pooled, int64_t out_width, int64_t channels,
                        int64_t pool, float* din, int64_t row_stride, int64_t pixel_stride);

// embedding_kernels.cc
void GatherRows(const float* rows, const int32_t* positions, int64_t positions_stride, int64_t n, int64_t dim,
                float* out, int64_t out_stride);
void ScatterAddRows(const float* in, int64_t in_stride, const int32_t* positions, int64_t positions_stride, int64_t n,
                    int64_t dim, float* rows);

// kernel_table.cc
const CpuKernels& Table();

}  // namespace PSTRAIN_ISA_NS
}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_ISA_ISA_KERNELS_H_
