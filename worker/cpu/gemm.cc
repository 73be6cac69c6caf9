#include "worker/cpu/gemm.h"

#include <algorithm>
#include <cstring>

namespace pstrain {
namespace {

// Eight floats in one vector register (GCC/Clang vector extension).
typedef float Vec8 __attribute__((vector_size(32)));

inline Vec8 Load(const float* p) {
  Vec8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void Store(float* p, Vec8 v) { std::memcpy(p, &v, sizeof(v)); }

// c[R rows, 16 cols] = a[R rows, k] * b[k, 16 cols]; lda/ldb/ldc are row strides.
template <int R>
void BlockNN(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t k) {
  Vec8 acc[R][2] = {};
  for (int64_t p = 0; p < k; ++p) {
    const Vec8 b0 = Load(b + p * ldb), b1 = Load(b + p * ldb + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const float x = a[r * lda + p];
      acc[r][0] += x * b0;
      acc[r][1] += x * b1;
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    Store(c + r * ldc, acc[r][0]);
    Store(c + r * ldc + 8, acc[r][1]);
  }
}

// c[R rows, 16 cols] += sum over rows i of a[i, R cols]^T * b[i, 16 cols], i in [0, rows).
template <int R>
void BlockTN(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t rows) {
  Vec8 acc[R][2] = {};
  for (int64_t i = 0; i < rows; ++i) {
    const Vec8 b0 = Load(b + i * ldb), b1 = Load(b + i * ldb + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const float x = a[i * lda + r];
      acc[r][0] += x * b0;
      acc[r][1] += x * b1;
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    Store(c + r * ldc, Load(c + r * ldc) + acc[r][0]);
    Store(c + r * ldc + 8, Load(c + r * ldc + 8) + acc[r][1]);
  }
}

template <typename Fn>
void ForRowBlocks(int64_t total, Fn fn) {
  int64_t i = 0;
  for (; i + 6 <= total; i += 6) fn(i, 6);
  if (i < total) fn(i, total - i);
}

}  // namespace

void GemmNN(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
  ForRowBlocks(m, [&](int64_t i, int64_t rows) {
    for (int64_t j = 0; j < n; j += 16) {
      const float* ai = a + i * k;
      float* ci = c + i * n + j;
      switch (rows) {
        case 6: BlockNN<6>(ai, k, b + j, n, ci, n, k); break;
        case 5: BlockNN<5>(ai, k, b + j, n, ci, n, k); break;
        case 4: BlockNN<4>(ai, k, b + j, n, ci, n, k); break;
        case 3: BlockNN<3>(ai, k, b + j, n, ci, n, k); break;
        case 2: BlockNN<2>(ai, k, b + j, n, ci, n, k); break;
        default: BlockNN<1>(ai, k, b + j, n, ci, n, k); break;
      }
    }
  });
}

// Rows of a and b go in chunks that stay in cache while every 6x16 block of c sweeps them.
void GemmTN(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
  std::memset(c, 0, sizeof(float) * k * n);
  constexpr int64_t kChunk = 256;
  for (int64_t i0 = 0; i0 < m; i0 += kChunk) {
    const int64_t rows = std::min(kChunk, m - i0);
    const float* ai = a + i0 * k;
    const float* bi = b + i0 * n;
    ForRowBlocks(k, [&](int64_t p, int64_t cols) {
      for (int64_t j = 0; j < n; j += 16) {
        float* cp = c + p * n + j;
        switch (cols) {
          case 6: BlockTN<6>(ai + p, k, bi + j, n, cp, n, rows); break;
          case 5: BlockTN<5>(ai + p, k, bi + j, n, cp, n, rows); break;
          case 4: BlockTN<4>(ai + p, k, bi + j, n, cp, n, rows); break;
          case 3: BlockTN<3>(ai + p, k, bi + j, n, cp, n, rows); break;
          case 2: BlockTN<2>(ai + p, k, bi + j, n, cp, n, rows); break;
          default: BlockTN<1>(ai + p, k, bi + j, n, cp, n, rows); break;
        }
      }
    });
  }
}

}  // namespace pstrain
