// Single-precision GEMMs on row-major matrices, run by the active CPU level's register-blocked
// kernels (worker/cpu/cpu_kernels.h). Correct for any m, k and n; they allocate their packing
// scratch per call, so hot paths that multiply the same shapes every step should call
// CpuKernels::gemm_nn / gemm_tn with buffers of their own (as Dense and Conv2D do).
// Thread-safety: pure functions.
#ifndef PSTRAIN_WORKER_CPU_GEMM_H_
#define PSTRAIN_WORKER_CPU_GEMM_H_

#include <cstdint>
#include <vector>

namespace pstrain {

// True when GemmNN/GemmTN handle an output of `n` columns: every n > 0 (kept for callers that
// chose between these and a general GEMM).
inline bool BlockedGemmFits(int64_t n) { return n > 0; }

// c[m, n] = a[m, k] * b[k, n].
void GemmNN(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n);

// c[k, n] = a[m, k]^T * b[m, n].
void GemmTN(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n);

// Rows of d [rows, n] as CpuKernels::gemm_tn reads them: d itself when n is a multiple of
// kMaxLanes, else a zero-padded copy written to *scratch. Sets *ld to the rows' stride.
const float* PadRowsForTN(const float* d, int64_t rows, int64_t n, std::vector<float>* scratch, int64_t* ld);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_GEMM_H_
