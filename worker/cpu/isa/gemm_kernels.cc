// GEMM micro-kernels for one CPU level. A register block of MR rows x NV vectors of C stays in
// registers while the reduction streams through: each step loads NV vectors of B (or of d) once
// and broadcasts MR scalars of A, so both FMA pipes stay busy with few loads. Blocks are as large
// as the level's registers allow (32 with AVX-512, 16 otherwise): 6x64 for a 64-filter layer
// with AVX-512, 6x16 with AVX2. B is packed per panel (at most 4 vectors wide) so that one
// panel's rows are contiguous and zero-padded; panels never straddle a column run of C, which lets
// a convolution's input gradient be added straight into the input's layout (col2im in the store).
#include "common/platform/simd.h"
#include "worker/cpu/isa/isa_kernels.h"

namespace pstrain {
namespace PSTRAIN_ISA_NS {
namespace {

constexpr int kMaxPanelVecs = 4;
constexpr int kMaxBlockRows = 12;

// Rows of C in one register block whose row is `nv` vectors: what the registers hold next to the
// B vectors and a broadcast (SSE2 has no FMA, so it needs a temporary too).
constexpr int BlockRows(int nv) {
#if defined(__AVX512F__)
  return nv <= 2 ? 12 : nv == 3 ? 8 : 6;
#elif defined(__AVX2__)
  return nv == 1 ? 12 : nv == 2 ? 6 : nv == 3 ? 4 : 3;
#else
  return nv == 1 ? 8 : nv == 2 ? 4 : 2;
#endif
}

inline Vec LoadCols(const float* p, int64_t n) {
  if (n >= kLanes) return Load(p);
  return n > 0 ? LoadN(p, static_cast<int>(n)) : Vec{};
}
inline void StoreCols(float* p, Vec v, int64_t n) {
  if (n >= kLanes) return Store(p, v);
  if (n > 0) StoreN(p, v, static_cast<int>(n));
}

template <typename Rows>
inline int64_t RowOffset(const Rows& rows, int64_t i) {
  return rows.offsets != nullptr ? rows.offsets[i] : i * rows.row_stride;
}

// The column panels of one run of `length` columns: ceil(length / kLanes) vectors split into
// panels of at most kMaxPanelVecs, as even as possible.
struct Panel {
  int64_t col0;    // first column within the run
  int nv;          // vectors
  int64_t ncols;   // columns that exist (the rest is padding)
  int64_t offset;  // floats into the run's packed B (k rows per panel)
};

template <typename Fn>
void ForPanels(int64_t length, int64_t k, Fn fn) {
  const int64_t vecs = (length + kLanes - 1) / kLanes;
  const int64_t panels = (vecs + kMaxPanelVecs - 1) / kMaxPanelVecs;
  int64_t col0 = 0, offset = 0;
  for (int64_t p = 0; p < panels; ++p) {
    const int nv = static_cast<int>(vecs / panels + (p < vecs % panels ? 1 : 0));
    fn(Panel{col0, nv, MinI(length - col0, static_cast<int64_t>(nv) * kLanes), offset});
    col0 += static_cast<int64_t>(nv) * kLanes;
    offset += k * nv * kLanes;
  }
}

int64_t RunPackedSize(const PackBArgs& a) { return (a.segment_length + kLanes - 1) / kLanes * kLanes * a.k; }

// ---- C = A * B: MR rows, NV vectors per row.
template <int MR, int NV>
void BlockNN(const float* const* a, int64_t segments, int64_t seg_len, int64_t seg_stride, const float* bp,
             float* const* c, int64_t ncols, const float* bias, bool relu, bool accumulate) {
  Vec acc[MR][NV];
  Vec init[NV];
  for (int j = 0; j < NV; ++j) {
    init[j] = bias != nullptr && !accumulate ? LoadCols(bias + j * kLanes, ncols - j * kLanes) : Vec{};
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NV; ++j) acc[r][j] = init[j];
  }
  for (int64_t s = 0; s < segments; ++s) {
    const float* as[MR];
    for (int r = 0; r < MR; ++r) as[r] = a[r] + s * seg_stride;
    for (int64_t q = 0; q < seg_len; ++q, bp += NV * kLanes) {
      Vec b[NV];
      for (int j = 0; j < NV; ++j) b[j] = Load(bp + j * kLanes);
#pragma GCC unroll 12
      for (int r = 0; r < MR; ++r) {
        const Vec x = Splat(as[r][q]);
        for (int j = 0; j < NV; ++j) acc[r][j] += x * b[j];
      }
    }
  }
  // Row by row: with accumulate, rows of C may overlap (a convolution's input gradient), so each
  // row's sum lands before the next row reads.
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NV; ++j) {
      const int64_t n = ncols - j * kLanes;
      Vec v = accumulate ? LoadCols(c[r] + j * kLanes, n) + acc[r][j] : acc[r][j];
      StoreCols(c[r] + j * kLanes, relu ? Max0(v) : v, n);
    }
  }
}

template <int NV, int MR = BlockRows(NV)>
void DispatchNN(int mr, const float* const* a, int64_t segments, int64_t seg_len, int64_t seg_stride, const float* bp,
                float* const* c, int64_t ncols, const float* bias, bool relu, bool accumulate) {
  if constexpr (MR > 1) {
    if (mr < MR) {
      return DispatchNN<NV, MR - 1>(mr, a, segments, seg_len, seg_stride, bp, c, ncols, bias, relu, accumulate);
    }
  }
  BlockNN<MR, NV>(a, segments, seg_len, seg_stride, bp, c, ncols, bias, relu, accumulate);
}

// ---- C = A * B for a 3x3 kernel over one channel (a first layer on grey images): K = 9 is too
// short to amortise a register block, so the 9 x NV vectors of B stay in registers instead and the
// rows stream through, R at a time.
template <int R, int NV>
inline void TinyPatchRows(const GemmNNArgs& g, int64_t i, const Vec (&w)[9][NV], const Vec (&init)[NV], int64_t ncols) {
  const int64_t ss = g.a.segment_stride;
  const float* a[R];
  float* c[R];
  Vec acc[R][NV];
  for (int r = 0; r < R; ++r) {
    a[r] = g.a.base + RowOffset(g.a, i + r);
    c[r] = g.c.base + RowOffset(g.c, i + r);
    for (int j = 0; j < NV; ++j) acc[r][j] = init[j];
  }
  for (int s = 0; s < 3; ++s) {
    for (int q = 0; q < 3; ++q) {
      for (int r = 0; r < R; ++r) {
        const Vec x = Splat(a[r][s * ss + q]);
        for (int j = 0; j < NV; ++j) acc[r][j] += x * w[s * 3 + q][j];
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NV; ++j) StoreCols(c[r] + j * kLanes, g.relu ? Max0(acc[r][j]) : acc[r][j], ncols - j * kLanes);
  }
}

template <int NV>
bool TinyPatchNN(const GemmNNArgs& g, const Panel& p, const float* bp) {
  if constexpr (9 * NV + 6 * NV <= 32 - 2) {  // weights, accumulators, bias and a broadcast in registers
    if (g.a.segments != 3 || g.a.segment_length != 3 || g.c.segments != 1 || g.accumulate) return false;
    Vec w[9][NV], init[NV];
    for (int t = 0; t < 9; ++t) {
      for (int j = 0; j < NV; ++j) w[t][j] = Load(bp + (t * NV + j) * kLanes);
    }
    for (int j = 0; j < NV; ++j)
      init[j] = g.bias != nullptr ? LoadCols(g.bias + j * kLanes, p.ncols - j * kLanes) : Vec{};
    int64_t i = 0;
    for (; i + 4 <= g.rows; i += 4) TinyPatchRows<4, NV>(g, i, w, init, p.ncols);
    for (; i < g.rows; ++i) TinyPatchRows<1, NV>(g, i, w, init, p.ncols);
    return true;
  }
  return false;
}

// ---- C += A^T * D: C rows are SEGS runs of PER columns of A (run s at s * seg_stride), NV vectors.
// `d` points at D's row i0 (rows ldd apart).
template <int SEGS, int PER, int NV>
void BlockTN(const RowsIn& a, int64_t i0, int64_t rows, int64_t col_off, const float* d, int64_t ldd, float* c,
             int64_t ldc, int64_t c_run, int64_t ncols) {
  Vec acc[SEGS * PER][NV] = {};
  const int64_t ss = a.segment_stride;
  for (int64_t i = i0; i < i0 + rows; ++i) {
    const float* ai = a.base + RowOffset(a, i) + col_off;
    const float* di = d + (i - i0) * ldd;
    Vec b[NV];
    for (int j = 0; j < NV; ++j) b[j] = Load(di + j * kLanes);
    for (int s = 0; s < SEGS; ++s) {
#pragma GCC unroll 12
      for (int q = 0; q < PER; ++q) {
        const Vec x = Splat(ai[s * ss + q]);
        for (int j = 0; j < NV; ++j) acc[s * PER + q][j] += x * b[j];
      }
    }
  }
  for (int s = 0; s < SEGS; ++s) {
    for (int q = 0; q < PER; ++q) {
      float* cr = c + (s * c_run + q) * ldc;
      for (int j = 0; j < NV; ++j) {
        const int64_t n = ncols - j * kLanes;
        StoreCols(cr + j * kLanes, LoadCols(cr + j * kLanes, n) + acc[s * PER + q][j], n);
      }
    }
  }
}

template <int NV, int PER = BlockRows(NV)>
void DispatchTN(int per, const RowsIn& a, int64_t i0, int64_t rows, int64_t col_off, const float* d, int64_t ldd,
                float* c, int64_t ldc, int64_t ncols) {
  if constexpr (PER > 1) {
    if (per < PER) return DispatchTN<NV, PER - 1>(per, a, i0, rows, col_off, d, ldd, c, ldc, ncols);
  }
  BlockTN<1, PER, NV>(a, i0, rows, col_off, d, ldd, c, ldc, 0, ncols);
}

// A 3x3 kernel over one channel (a first layer on grey images): all 9 rows of C in one block.
template <int NV>
bool TinyPatchTN(const RowsIn& a, int64_t i0, int64_t rows, const float* d, int64_t ldd, float* c, int64_t ldc,
                 int64_t ncols) {
  if constexpr (BlockRows(NV) >= 9) {
    if (a.segments == 3 && a.segment_length == 3) {
      BlockTN<3, 3, NV>(a, i0, rows, 0, d, ldd, c, ldc, 3, ncols);
      return true;
    }
  }
  return false;
}

template <int NV>
void PanelTN(const GemmTNArgs& g, int64_t i0, int64_t rows, const float* d, int64_t ldd, float* c, int64_t ncols) {
  if (TinyPatchTN<NV>(g.a, i0, rows, d, ldd, c, g.ldc, ncols)) return;
  const int64_t len = g.a.segment_length;
  for (int64_t s = 0; s < g.a.segments; ++s) {
    for (int64_t q0 = 0; q0 < len; q0 += BlockRows(NV)) {
      const int per = static_cast<int>(MinI(BlockRows(NV), len - q0));
      DispatchTN<NV>(per, g.a, i0, rows, s * g.a.segment_stride + q0, d, ldd, c + (s * len + q0) * g.ldc, g.ldc, ncols);
    }
  }
}

}  // namespace

int64_t PackedBSize(const PackBArgs& args) { return args.col_segments * RunPackedSize(args); }

const float* PackB(const PackBArgs& args, float* scratch) {
  const int64_t len = args.segment_length;
  if (args.col_segments == 1 && len % kLanes == 0 && len <= kMaxPanelVecs * kLanes && args.j_stride == 1 &&
      args.t_stride == len) {
    return args.src;  // one panel with no padding: B's own layout
  }
  for (int64_t s = 0; s < args.col_segments; ++s) {
    float* run = scratch + s * RunPackedSize(args);
    ForPanels(len, args.k, [&](const Panel& p) {
      const int64_t width = static_cast<int64_t>(p.nv) * kLanes;
      float* dst = run + p.offset;
      const float* src = args.src + (s * len + p.col0) * args.j_stride;
      if (args.j_stride == 1) {  // rows of B are contiguous: copy them
        for (int64_t t = 0; t < args.k; ++t) {
          for (int64_t x = 0; x < width; ++x) dst[t * width + x] = x < p.ncols ? src[t * args.t_stride + x] : 0.f;
        }
        return;
      }
      // A transposed source: walk its rows (B's columns), so the reads are contiguous.
      for (int64_t x = 0; x < width; ++x) {
        for (int64_t t = 0; t < args.k; ++t) {
          dst[t * width + x] = x < p.ncols ? src[x * args.j_stride + t * args.t_stride] : 0.f;
        }
      }
    });
  }
  return scratch;
}

void GemmNN(const GemmNNArgs& g) {
  const int64_t k = g.a.cols(), len = g.c.segment_length;
  const int64_t run_size = (len + kLanes - 1) / kLanes * kLanes * k;
  // Rows go in chunks whose A rows stay in cache while every panel of B sweeps them.
  constexpr int64_t kChunk = 192;
  if ((len + kLanes - 1) / kLanes <= 2) {  // one panel of at most 2 vectors: maybe a tiny patch
    bool done = false;
    ForPanels(len, k, [&](const Panel& p) {
      done = p.nv == 1 ? TinyPatchNN<1>(g, p, g.packed_b) : TinyPatchNN<2>(g, p, g.packed_b);
    });
    if (done) return;
  }
  for (int64_t c0 = 0; c0 < g.rows; c0 += kChunk) {
    const int64_t c1 = MinI(g.rows, c0 + kChunk);
    for (int64_t s = 0; s < g.c.segments; ++s) {
      ForPanels(len, k, [&](const Panel& p) {
        const float* bp = g.packed_b + s * run_size + p.offset;
        const float* bias = g.bias != nullptr ? g.bias + s * len + p.col0 : nullptr;
        const int block = BlockRows(p.nv);
        for (int64_t i = c0; i < c1; i += block) {
          const int mr = static_cast<int>(MinI(block, c1 - i));
          const float* arow[kMaxBlockRows];
          float* crow[kMaxBlockRows];
          for (int r = 0; r < mr; ++r) {
            arow[r] = g.a.base + RowOffset(g.a, i + r);
            crow[r] = g.c.base + RowOffset(g.c, i + r) + s * g.c.segment_stride + p.col0;
          }
          const int64_t sl = g.a.segment_length, st = g.a.segment_stride;
          switch (p.nv) {
            case 1:
              DispatchNN<1>(mr, arow, g.a.segments, sl, st, bp, crow, p.ncols, bias, g.relu, g.accumulate);
              break;
            case 2:
              DispatchNN<2>(mr, arow, g.a.segments, sl, st, bp, crow, p.ncols, bias, g.relu, g.accumulate);
              break;
            case 3:
              DispatchNN<3>(mr, arow, g.a.segments, sl, st, bp, crow, p.ncols, bias, g.relu, g.accumulate);
              break;
            default:
              DispatchNN<4>(mr, arow, g.a.segments, sl, st, bp, crow, p.ncols, bias, g.relu, g.accumulate);
          }
        }
      });
    }
  }
}

void GemmTN(const GemmTNArgs& g) {
  // Rows of d go in chunks whose columns of one panel stay in L1 while every block of C sweeps
  // them; the longer the chunk, the fewer times C is read and written.
  constexpr int64_t kPanelCols = kMaxPanelVecs * kLanes;
  const int64_t chunk = MaxI(32, 8192 / MinI(MaxI(g.ldd, 1), kPanelCols));
  // Rows wider than a panel: one panel's rows lie ldd apart, and a power-of-two ldd maps them all
  // to a few L1 sets, so each chunk of a panel is first copied into contiguous rows.
  const bool copy = g.ldd > kPanelCols;
  alignas(64) float panel[8192];  // used when copying: chunk (8192 / kPanelCols rows) x kPanelCols
  for (int64_t i0 = 0; i0 < g.rows; i0 += chunk) {
    const int64_t rows = MinI(chunk, g.rows - i0);
    ForPanels(g.n, 0, [&](const Panel& p) {
      const float* d = g.d + i0 * g.ldd + p.col0;
      int64_t ldd = g.ldd;
      if (copy) {
        const int64_t width = static_cast<int64_t>(p.nv) * kLanes;
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t x = 0; x < width; ++x) panel[i * width + x] = d[i * g.ldd + x];
        }
        d = panel;
        ldd = width;
      }
      float* c = g.c + p.col0;
      switch (p.nv) {
        case 1:
          PanelTN<1>(g, i0, rows, d, ldd, c, p.ncols);
          break;
        case 2:
          PanelTN<2>(g, i0, rows, d, ldd, c, p.ncols);
          break;
        case 3:
          PanelTN<3>(g, i0, rows, d, ldd, c, p.ncols);
          break;
        default:
          PanelTN<4>(g, i0, rows, d, ldd, c, p.ncols);
      }
    });
  }
}

}  // namespace PSTRAIN_ISA_NS
}  // namespace pstrain
