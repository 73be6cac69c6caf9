// Vector types and helpers for the sources compiled once per CPU level (pstrain_isa_sources in
// CMakeLists.txt; common/platform/cpu_level.h lists the levels). The same source becomes SSE2 code with 4
// floats per vector, AVX2+FMA code with 8 and AVX-512 code with 16, written once with GCC/Clang
// vector extensions. Each copy lives in its own namespace, PSTRAIN_ISA_NS (isa_baseline,
// isa_avx2, isa_avx512): an inline function compiled for AVX-512 then has a name of its own, so
// the linker can never hand it to baseline code. For the same reason such sources use no standard
// library templates (std::min, std::vector, ...); tests/worker/cpu/isa_symbols_test.sh checks that.
// Include only from those sources; everything here is in namespace pstrain::PSTRAIN_ISA_NS.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLATFORM_SIMD_H_
#define PSTRAIN_COMMON_PLATFORM_SIMD_H_

#ifndef PSTRAIN_ISA_NS
#error "common/platform/simd.h is for sources compiled by pstrain_isa_sources (PSTRAIN_ISA_NS unset)"
#endif

#include <immintrin.h>

#include <cstdint>

namespace pstrain {
namespace PSTRAIN_ISA_NS {

#if defined(__AVX512F__)
inline constexpr int kLanes = 16;
#elif defined(__AVX2__)
inline constexpr int kLanes = 8;
#else
inline constexpr int kLanes = 4;
#endif

// Floats in one vector register; VecI is the matching int32 vector (comparison results).
typedef float Vec __attribute__((vector_size(4 * kLanes)));
typedef int32_t VecI __attribute__((vector_size(4 * kLanes)));

inline Vec Load(const float* p) {
  Vec v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
inline void Store(float* p, Vec v) { __builtin_memcpy(p, &v, sizeof(v)); }
inline VecI LoadI(const int32_t* p) {
  VecI v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
inline void StoreI(int32_t* p, VecI v) { __builtin_memcpy(p, &v, sizeof(v)); }
// A load-and-broadcast when x comes from memory (no arithmetic: 0 + x is not x for x = -0).
inline Vec Splat(float x) {
#if defined(__AVX512F__)
  return _mm512_set1_ps(x);
#elif defined(__AVX2__)
  return _mm256_set1_ps(x);
#else
  return _mm_set1_ps(x);
#endif
}
inline VecI SplatI(int32_t x) { return VecI{} + x; }
inline Vec Max0(Vec v) { return v > Vec{} ? v : Vec{}; }
// Correctly rounded, like sqrtf.
inline Vec Sqrt(Vec v) {
#if defined(__AVX512F__)
  return _mm512_maskz_sqrt_ps(static_cast<__mmask16>(0xffff), v);  // _mm512_sqrt_ps trips -Wmaybe-uninitialized
#elif defined(__AVX2__)
  return _mm256_sqrt_ps(v);
#else
  return _mm_sqrt_ps(v);
#endif
}

// The first n lanes (0 <= n <= kLanes) of p; the others are zero. Never reads past p + n.
inline Vec LoadN(const float* p, int n) {
#if defined(__AVX512F__)
  return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p);
#else
  Vec v = {};
  for (int i = 0; i < n; ++i) v[i] = p[i];
  return v;
#endif
}

// Stores the first n lanes of v (0 <= n <= kLanes). Never writes past p + n.
inline void StoreN(float* p, Vec v, int n) {
#if defined(__AVX512F__)
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
#else
  for (int i = 0; i < n; ++i) p[i] = v[i];
#endif
}

inline VecI LoadIN(const int32_t* p, int n) {
  VecI v = {};
  for (int i = 0; i < n; ++i) v[i] = p[i];
  return v;
}
inline void StoreIN(int32_t* p, VecI v, int n) {
  for (int i = 0; i < n; ++i) p[i] = v[i];
}

inline int64_t MinI(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t MaxI(int64_t a, int64_t b) { return a > b ? a : b; }

}  // namespace PSTRAIN_ISA_NS
}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLATFORM_SIMD_H_
