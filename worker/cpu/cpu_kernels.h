// The CPU kernels behind the layers, one table per CPU level (common/platform/cpu_level.h). Each level's
// table is built from the same sources under worker/cpu/isa/, compiled for that level; the layers
// look up the active level's table once (when they are built) and call through it. Adding a kernel:
// a field here, its code in an isa/ source, one line in isa/kernel_table.cc.
//
// Matrices are row-major floats. Operands that are "rows" (RowsIn/RowsOut) need not be one dense
// matrix: row i starts at base + offsets[i] (base + i * row_stride when offsets is null) and its
// columns are `segments` runs of `segment_length` floats, `segment_stride` apart. A dense matrix
// is one run per row; a convolution's im2col matrix is the NHWC input itself, one row per output
// pixel and one run of kernel * channels floats per kernel row, so it is never materialised.
// Thread-safety: the kernels are pure functions of their arguments.
#ifndef PSTRAIN_WORKER_CPU_CPU_KERNELS_H_
#define PSTRAIN_WORKER_CPU_CPU_KERNELS_H_

#include <cstdint>

namespace pstrain {

enum class CpuLevel;  // common/platform/cpu_level.h

// The widest vector of any level, in floats: buffers padded to a multiple of it suit every level.
inline constexpr int64_t kMaxLanes = 16;
inline constexpr int64_t RoundUpToLanes(int64_t n) { return (n + kMaxLanes - 1) / kMaxLanes * kMaxLanes; }

struct RowsIn {
  const float* base = nullptr;
  const int64_t* offsets = nullptr;  // null: row i at base + i * row_stride
  int64_t row_stride = 0;
  int64_t segments = 1;
  int64_t segment_length = 0;
  int64_t segment_stride = 0;
  int64_t cols() const { return segments * segment_length; }
};

struct RowsOut {
  float* base = nullptr;
  const int64_t* offsets = nullptr;
  int64_t row_stride = 0;
  int64_t segments = 1;
  int64_t segment_length = 0;
  int64_t segment_stride = 0;
  int64_t cols() const { return segments * segment_length; }
};

// A plain row-major [*, cols] matrix with leading dimension ld, as rows.
inline RowsIn MatrixIn(const float* base, int64_t cols, int64_t ld) { return {base, nullptr, ld, 1, cols, 0}; }
inline RowsOut MatrixOut(float* base, int64_t cols, int64_t ld) { return {base, nullptr, ld, 1, cols, 0}; }

// c[i, j] = init[i, j] + sum_t a[i, t] * B[t, j] for i < rows, t < a.cols(), j < c.cols(), where
// init is c itself (accumulate), else bias[j] (bias non-null), else 0; then max(., 0) when relu.
// B comes from pack_b for this k and c's column runs.
struct GemmNNArgs {
  RowsIn a;
  int64_t rows = 0;
  const float* packed_b = nullptr;
  RowsOut c;
  const float* bias = nullptr;
  bool relu = false;
  bool accumulate = false;
};

// c[t, j] += sum_{i < rows} a[i, t] * d[i, j] for t < a.cols(), j < n; c is [a.cols(), n] with
// leading dimension ldc. REQUIRES: every row of d readable up to RoundUpToLanes(n) floats (pad).
struct GemmTNArgs {
  RowsIn a;
  int64_t rows = 0;
  const float* d = nullptr;
  int64_t ldd = 0;
  int64_t n = 0;
  float* c = nullptr;
  int64_t ldc = 0;
};

// The source of B for pack_b: B[t, j] = src[t * t_stride + j * j_stride], t < k, and the column
// runs of the output it will be multiplied into (j < col_segments * segment_length).
struct PackBArgs {
  const float* src = nullptr;
  int64_t t_stride = 0, j_stride = 0;
  int64_t k = 0;
  int64_t col_segments = 1, segment_length = 0;
};

struct CpuKernels {
  int lanes;  // floats per vector at this level

  // Floats of scratch pack_b may need for `args`.
  int64_t (*packed_b_size)(const PackBArgs& args);
  // Returns B in gemm_nn's layout: `scratch` filled, or args.src itself when it already is.
  const float* (*pack_b)(const PackBArgs& args, float* scratch);
  void (*gemm_nn)(const GemmNNArgs& args);
  void (*gemm_tn)(const GemmTNArgs& args);

  // out[j] (= or +=) sum over rows i of d[i * ld + j], j < n.
  void (*column_sums)(const float* d, int64_t rows, int64_t n, int64_t ld, float* out, bool accumulate);
  // out[r, c] = max(out + bias[c], 0 if relu), bias may be null. A plain [rows, cols] matrix.
  void (*bias_activation)(float* out, int64_t rows, int64_t cols, const float* bias, bool relu);
  // out[i] = max(in[i], 0).
  void (*relu)(const float* in, float* out, int64_t n);
  // din[i] = out[i] > 0 ? dout[i] : 0 (din may be dout: masks in place).
  void (*relu_backward)(const float* out, const float* dout, float* din, int64_t n);
  // dst[i] += src[i].
  void (*add)(float* dst, const float* src, int64_t n);

  // One row of max-pool windows: for x < out_width and ch < channels, out[x * channels + ch] is the
  // max over dy, dx < pool of in[dy * row_stride + (x * pool + dx) * pixel_stride + ch], and
  // arg[x * channels + ch] the window position dy * pool + dx of the first maximum.
  void (*max_pool_row)(const float* in, int64_t row_stride, int64_t pixel_stride, int64_t out_width, int64_t channels,
                       int64_t pool, float* out, int32_t* arg);
  // Its gradient: every window position of din gets dout where arg names it, else 0; with
  // `pooled` non-null (the row's forward output, pooled after a ReLU) also 0 where pooled <= 0.
  void (*max_pool_row_backward)(const float* dout, const int32_t* arg, const float* pooled, int64_t out_width,
                                int64_t channels, int64_t pool, float* din, int64_t row_stride, int64_t pixel_stride);

  // Embedding rows (a CTR model's input layer; rows is [*, dim]): for b < n,
  // out[b * out_stride + j] = rows[positions[b * positions_stride] * dim + j], j < dim.
  void (*gather_rows)(const float* rows, const int32_t* positions, int64_t positions_stride, int64_t n, int64_t dim,
                      float* out, int64_t out_stride);
  // For b = 0..n-1 in order: rows[positions[b * positions_stride] * dim + j] += in[b * in_stride + j],
  // j < dim (repeated positions sum in example order).
  void (*scatter_add_rows)(const float* in, int64_t in_stride, const int32_t* positions, int64_t positions_stride,
                           int64_t n, int64_t dim, float* rows);
};

// The table for `level`. REQUIRES: level <= DetectCpuLevel() to call its kernels.
const CpuKernels& CpuKernelsFor(CpuLevel level);
// The table for ActiveCpuLevel().
const CpuKernels& ActiveCpuKernels();

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_CPU_KERNELS_H_
