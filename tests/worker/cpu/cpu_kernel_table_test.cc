// Every kernel of the CPU kernel table (worker/cpu/cpu_kernels.h) at every CPU level this machine
// runs, against plain double-precision loops: shapes with vector tails, several panels, segmented
// rows (a convolution's im2col read in place, its gradient added back in place), bias, ReLU and
// accumulation. Levels the CPU lacks are skipped with a message naming them.
#include <cmath>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tests/worker/cpu/cpu_levels.h"
#include "tests/worker/cpu/grad_check.h"
#include "worker/cpu/cpu_kernels.h"
#include "worker/cpu/gemm.h"

namespace pstrain {
namespace {

class KernelTableTest : public ::testing::TestWithParam<CpuLevel> {
 protected:
  void SetUp() override { PSTRAIN_SKIP_UNSUPPORTED_LEVEL(GetParam()); }
  const CpuKernels& kernels() const { return CpuKernelsFor(GetParam()); }
};

// Element t of row i of a RowsIn / RowsOut, as the contract in cpu_kernels.h defines it.
template <typename Rows>
int64_t At(const Rows& r, int64_t i, int64_t t) {
  const int64_t row = r.offsets != nullptr ? r.offsets[i] : i * r.row_stride;
  return row + (t / r.segment_length) * r.segment_stride + t % r.segment_length;
}

// Asserts |got - want| <= 1e-5 * scale + 1e-5, scale = the sum of |terms| that made `want`.
void ExpectClose(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& scale,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(got[i] - want[i]) <= 1e-5 * scale[i] + 1e-5) continue;
    if (++bad <= 5) ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0) << what;
}

struct NNCase {
  int64_t rows, k, n;
  bool bias, relu, accumulate;
  bool transposed_b;  // B read as src[j * k + t]
};

TEST_P(KernelTableTest, GemmNNMatchesReference) {
  const std::vector<NNCase> cases = {
      {1, 1, 1, false, false, false, false},    {5, 3, 10, true, true, false, false},
      {13, 17, 16, false, false, true, false},  {37, 64, 33, true, false, false, true},
      {37, 9, 64, true, true, false, false},    {20, 5, 100, false, true, true, true},
      {7, 64, 1600, false, false, false, true}, {32, 288, 64, true, true, false, false},
  };
  for (const NNCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "rows " << c.rows << " k " << c.k << " n " << c.n << " bias " << c.bias
                                    << " relu " << c.relu << " accumulate " << c.accumulate << " transposed "
                                    << c.transposed_b);
    const std::vector<float> a = RandomVector(c.rows * c.k, 1), b = RandomVector(c.k * c.n, 2),
                             bias = RandomVector(c.n, 3);
    std::vector<float> out = RandomVector(c.rows * c.n, 4);
    const std::vector<float> before = out;
    PackBArgs pack{b.data(), c.transposed_b ? 1 : c.n, c.transposed_b ? c.k : 1, c.k, 1, c.n};
    std::vector<float> scratch(kernels().packed_b_size(pack));
    GemmNNArgs g;
    g.a = MatrixIn(a.data(), c.k, c.k);
    g.rows = c.rows;
    g.packed_b = kernels().pack_b(pack, scratch.data());
    g.c = MatrixOut(out.data(), c.n, c.n);
    g.bias = c.bias ? bias.data() : nullptr;
    g.relu = c.relu;
    g.accumulate = c.accumulate;
    kernels().gemm_nn(g);
    std::vector<double> want(out.size()), scale(out.size());
    for (int64_t i = 0; i < c.rows; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double s = c.accumulate ? before[i * c.n + j] : c.bias ? bias[j] : 0.0;
        double abs_sum = std::fabs(s);
        for (int64_t t = 0; t < c.k; ++t) {
          const double term = double{a[i * c.k + t]} * (c.transposed_b ? b[j * c.k + t] : b[t * c.n + j]);
          s += term;
          abs_sum += std::fabs(term);
        }
        want[i * c.n + j] = c.relu && s < 0 ? 0.0 : s;
        scale[i * c.n + j] = abs_sum;
      }
    }
    ExpectClose(out, want, scale, "c");
  }
}

// A 3x3 convolution's GEMMs over a [2, 6, 7, C] input, read in place: forward (A = the input's
// im2col rows) and the input gradient (C = the same rows, accumulated).
TEST_P(KernelTableTest, GemmNNReadsAndWritesSegmentedRows) {
  for (int64_t channels : {1, 3, 16}) {
    SCOPED_TRACE(testing::Message() << "channels " << channels);
    const int64_t h = 6, w = 7, k = 3, oh = h - k + 1, ow = w - k + 1, f = 20, patch = k * k * channels;
    std::vector<int64_t> offsets;
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) offsets.push_back(n * h * w * channels + (y * w + x) * channels);
      }
    }
    const int64_t rows = static_cast<int64_t>(offsets.size());
    const std::vector<float> in = RandomVector(2 * h * w * channels, 5), weights = RandomVector(patch * f, 6);
    const RowsIn a{in.data(), offsets.data(), 0, k, k * channels, w * channels};
    // Forward: out[rows, f] = im2col(in) * weights.
    PackBArgs pack{weights.data(), f, 1, patch, 1, f};
    std::vector<float> scratch(kernels().packed_b_size(pack)), out(rows * f);
    GemmNNArgs g;
    g.a = a;
    g.rows = rows;
    g.packed_b = kernels().pack_b(pack, scratch.data());
    g.c = MatrixOut(out.data(), f, f);
    kernels().gemm_nn(g);
    std::vector<double> want(out.size()), scale(out.size());
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < f; ++j) {
        for (int64_t t = 0; t < patch; ++t) {
          const double term = double{in[At(a, i, t)]} * weights[t * f + j];
          want[i * f + j] += term;
          scale[i * f + j] += std::fabs(term);
        }
      }
    }
    ExpectClose(out, want, scale, "forward");
    // Input gradient: din[At(i, t)] += sum_j dout[i, j] * weights[t, j], runs of C split by kernel row.
    const std::vector<float> dout = RandomVector(rows * f, 7);
    PackBArgs pack_t{weights.data(), 1, f, f, k, k * channels};
    scratch.resize(kernels().packed_b_size(pack_t));
    std::vector<float> din(in.size(), 0.f);
    GemmNNArgs d;
    d.a = MatrixIn(dout.data(), f, f);
    d.rows = rows;
    d.packed_b = kernels().pack_b(pack_t, scratch.data());
    d.c = RowsOut{din.data(), offsets.data(), 0, k, k * channels, w * channels};
    d.accumulate = true;
    kernels().gemm_nn(d);
    std::vector<double> dwant(din.size()), dscale(din.size());
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t t = 0; t < patch; ++t) {
        for (int64_t j = 0; j < f; ++j) {
          const double term = double{dout[i * f + j]} * weights[t * f + j];
          dwant[At(a, i, t)] += term;
          dscale[At(a, i, t)] += std::fabs(term);
        }
      }
    }
    ExpectClose(din, dwant, dscale, "input gradient");
  }
}

struct TNCase {
  int64_t rows, segments, segment_length, n;
};

TEST_P(KernelTableTest, GemmTNMatchesReference) {
  // 3 runs of 3: a 3x3 kernel on one channel (one register block); 600 rows cross a chunk. Rows
  // of d wider than a panel (n > 64; with SSE2, n > 16) are copied per chunk and panel: 300 and
  // 1100 rows cross chunks at every level, n = 512 is a power-of-two row (a CTR tower's layer).
  const std::vector<TNCase> cases = {{1, 1, 1, 1},      {7, 1, 5, 10},     {100, 3, 3, 32}, {600, 3, 3, 16},
                                     {50, 1, 13, 64},   {90, 2, 96, 64},   {33, 3, 7, 100}, {64, 1, 1600, 64},
                                     {300, 1, 29, 200}, {260, 1, 70, 512}, {1100, 1, 5, 40}};
  for (const TNCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "rows " << c.rows << " runs " << c.segments << "x" << c.segment_length << " n "
                                    << c.n);
    const int64_t k = c.segments * c.segment_length, stride = c.segment_length + 3;  // gaps between runs
    const int64_t row_stride = c.segments * stride + 1;
    const std::vector<float> in = RandomVector(c.rows * row_stride, 8);
    const int64_t ldd = RoundUpToLanes(c.n);
    std::vector<float> d = RandomVector(c.rows * ldd, 9);
    std::vector<float> out = RandomVector(k * c.n, 10);
    const std::vector<float> before = out;
    GemmTNArgs g;
    g.a = RowsIn{in.data(), nullptr, row_stride, c.segments, c.segment_length, stride};
    g.rows = c.rows;
    g.d = d.data();
    g.ldd = ldd;
    g.n = c.n;
    g.c = out.data();
    g.ldc = c.n;
    kernels().gemm_tn(g);
    std::vector<double> want(out.begin(), out.end()), scale(out.size());
    for (int64_t t = 0; t < k; ++t) {
      for (int64_t j = 0; j < c.n; ++j) {
        double s = before[t * c.n + j], abs_sum = std::fabs(s);
        for (int64_t i = 0; i < c.rows; ++i) {
          const double term = double{in[At(g.a, i, t)]} * d[i * ldd + j];
          s += term;
          abs_sum += std::fabs(term);
        }
        want[t * c.n + j] = s;
        scale[t * c.n + j] = abs_sum;
      }
    }
    ExpectClose(out, want, scale, "c");
  }
}

TEST_P(KernelTableTest, GemmWrappersMatchReference) {
  ScopedCpuLevelForTest level(GetParam());
  const int64_t m = 11, k = 19, n = 21;
  const std::vector<float> a = RandomVector(m * k, 11), b = RandomVector(k * n, 12), bt = RandomVector(m * n, 13);
  std::vector<float> c(m * n), ct(k * n);
  GemmNN(a.data(), b.data(), c.data(), m, k, n);
  GemmTN(a.data(), bt.data(), ct.data(), m, k, n);
  std::vector<double> want(c.size()), scale(c.size()), want_t(ct.size()), scale_t(ct.size());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t t = 0; t < k; ++t) {
      for (int64_t j = 0; j < n; ++j) {
        want[i * n + j] += double{a[i * k + t]} * b[t * n + j];
        scale[i * n + j] += std::fabs(double{a[i * k + t]} * b[t * n + j]);
        want_t[t * n + j] += double{a[i * k + t]} * bt[i * n + j];
        scale_t[t * n + j] += std::fabs(double{a[i * k + t]} * bt[i * n + j]);
      }
    }
  }
  ExpectClose(c, want, scale, "GemmNN");
  ExpectClose(ct, want_t, scale_t, "GemmTN");
}

TEST_P(KernelTableTest, ElementwiseKernelsMatchReference) {
  for (int64_t n : {1, 7, 16, 45}) {
    SCOPED_TRACE(testing::Message() << "n " << n);
    const int64_t rows = 5, ld = n + 3;
    const std::vector<float> d = RandomVector(rows * ld, 14), bias = RandomVector(n, 15);
    std::vector<float> sums = RandomVector(n, 16);
    const std::vector<float> before = sums;
    kernels().column_sums(d.data(), rows, n, ld, sums.data(), /*accumulate=*/true);
    std::vector<float> fresh(n);
    kernels().column_sums(d.data(), rows, n, ld, fresh.data(), /*accumulate=*/false);
    std::vector<float> act = RandomVector(rows * n, 17);
    const std::vector<float> act_in = act;
    kernels().bias_activation(act.data(), rows, n, bias.data(), /*relu=*/true);
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t i = 0; i < rows; ++i) s += d[i * ld + j];
      EXPECT_NEAR(sums[j], before[j] + s, 1e-5);
      EXPECT_NEAR(fresh[j], s, 1e-5);
      for (int64_t i = 0; i < rows; ++i) EXPECT_FLOAT_EQ(act[i * n + j], std::max(0.f, act_in[i * n + j] + bias[j]));
    }
    const std::vector<float> x = RandomVector(n, 18), g = RandomVector(n, 19);
    std::vector<float> y(n), dx(n), acc = g;
    kernels().relu(x.data(), y.data(), n);
    kernels().relu_backward(y.data(), g.data(), dx.data(), n);
    kernels().add(acc.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.f);
      EXPECT_EQ(dx[i], x[i] > 0 ? g[i] : 0.f);
      EXPECT_EQ(acc[i], g[i] + x[i]);  // one rounding, at every level
    }
  }
}

TEST_P(KernelTableTest, MaxPoolRowMatchesReference) {
  for (int64_t channels : {1, 5, 16, 40}) {
    for (int64_t pool : {2, 3}) {
      SCOPED_TRACE(testing::Message() << "channels " << channels << " pool " << pool);
      const int64_t out_w = 4, width = out_w * pool + 1, pixel = channels + 2, row = width * pixel;
      std::vector<float> in = RandomVector(pool * row, 20);
      in[pixel + 0] = in[0];  // a tie: the first maximum wins
      std::vector<float> out(out_w * channels);
      std::vector<int32_t> arg(out.size());
      kernels().max_pool_row(in.data(), row, pixel, out_w, channels, pool, out.data(), arg.data());
      const std::vector<float> dout = RandomVector(out.size(), 21);
      std::vector<float> din(in.size(), 7.f), din_masked(in.size(), 7.f);
      kernels().max_pool_row_backward(dout.data(), arg.data(), nullptr, out_w, channels, pool, din.data(), row, pixel);
      kernels().max_pool_row_backward(dout.data(), arg.data(), out.data(), out_w, channels, pool, din_masked.data(),
                                      row, pixel);
      for (int64_t x = 0; x < out_w; ++x) {
        for (int64_t ch = 0; ch < channels; ++ch) {
          float best = -1e30f;
          int32_t where = -1;
          for (int64_t p = 0; p < pool * pool; ++p) {
            const float v = in[(p / pool) * row + (x * pool + p % pool) * pixel + ch];
            if (v > best) best = v, where = static_cast<int32_t>(p);
          }
          const int64_t o = x * channels + ch;
          EXPECT_EQ(out[o], best);
          EXPECT_EQ(arg[o], where);
          for (int64_t p = 0; p < pool * pool; ++p) {
            const int64_t at = (p / pool) * row + (x * pool + p % pool) * pixel + ch;
            EXPECT_EQ(din[at], p == where ? dout[o] : 0.f);
            EXPECT_EQ(din_masked[at], p == where && best > 0 ? dout[o] : 0.f);
          }
        }
      }
      // Padding between pixels is never written.
      for (int64_t i = 0; i < width * pool; ++i)
        EXPECT_EQ(din[(i / width) * row + (i % width) * pixel + channels], 7.f);
    }
  }
}

// Rows gathered and scattered for a CTR model's embeddings: strided positions (one field of
// [examples, fields]), widths with and without a partial vector, a position repeated so its
// gradients add up in example order, and the columns around each copy left alone.
TEST_P(KernelTableTest, GatherAndScatterRowsMatchReference) {
  for (int64_t dim : {1, 5, 16, 20, 37}) {
    SCOPED_TRACE(testing::Message() << "dim " << dim);
    const int64_t unique = 6, n = 9, fields = 3, field = 1, out_stride = dim + 7;
    const std::vector<float> rows = RandomVector(unique * dim, 40);
    std::vector<int32_t> positions(n * fields, -1);
    const int32_t pick[] = {3, 0, 5, 3, 1, 3, 2, 4, 0};
    for (int64_t b = 0; b < n; ++b) positions[b * fields + field] = pick[b];
    std::vector<float> out(n * out_stride, 7.f);
    kernels().gather_rows(rows.data(), positions.data() + field, fields, n, dim, out.data(), out_stride);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t j = 0; j < out_stride; ++j) {
        const float want = j < dim ? rows[pick[b] * dim + j] : 7.f;
        ASSERT_EQ(out[b * out_stride + j], want) << "example " << b << " column " << j;
      }
    }
    const std::vector<float> in = RandomVector(n * out_stride, 41);
    std::vector<float> grad = RandomVector(unique * dim, 42);
    std::vector<float> want = grad;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t j = 0; j < dim; ++j) want[pick[b] * dim + j] += in[b * out_stride + j];  // example order
    }
    kernels().scatter_add_rows(in.data(), out_stride, positions.data() + field, fields, n, dim, grad.data());
    for (size_t i = 0; i < grad.size(); ++i) ASSERT_EQ(grad[i], want[i]) << "element " << i;  // same bits
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, KernelTableTest, ::testing::ValuesIn(AllCpuLevels()), CpuLevelTestName);

}  // namespace
}  // namespace pstrain
