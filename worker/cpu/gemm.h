// Register-blocked single-precision GEMMs for the convolution shapes (row-major, N a multiple of
// 16): a 6x16 block of C lives in 12 vector registers while K streams through, which keeps both
// FMA pipes busy where a general library spends time packing. Correct for any M and K.
// Thread-safety: pure functions.
#ifndef PSTRAIN_WORKER_CPU_GEMM_H_
#define PSTRAIN_WORKER_CPU_GEMM_H_

#include <cstdint>

namespace pstrain {

// True when GemmNN/GemmTN handle an output of `n` columns.
inline bool BlockedGemmFits(int64_t n) { return n > 0 && n % 16 == 0; }

// c[m, n] = a[m, k] * b[k, n]. REQUIRES: BlockedGemmFits(n).
void GemmNN(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n);

// c[k, n] = a[m, k]^T * b[m, n]. REQUIRES: BlockedGemmFits(n).
void GemmTN(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_GEMM_H_
