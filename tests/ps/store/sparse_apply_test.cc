// Sparse updates of table rows: each optimizer's result on the touched rows equals its dense
// formula (computed here in double precision, independently of the code under test) with the
// duplicate ids' gradients summed; untouched rows and their slots stay bit-identical (adam: every
// row moves, as documented).
#include "ps/store/sparse_apply.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "gtest/gtest.h"

namespace pstrain {
namespace {

constexpr int64_t kRows = 6, kDim = 3;
constexpr int64_t kStep = 3;  // updates already applied: drives Adam's bias correction

// One element's update in double precision: (gradient, value, slots, t = kStep + 1).
using ElementRule = std::function<void(double g, double* w, std::vector<double>* slots)>;

OptimizerProto Make(const std::string& type, double lr) {
  OptimizerProto p;
  p.set_type(type);
  p.mutable_learning_rate()->set_initial(lr);
  return p;
}

struct Table {
  std::vector<float> values;
  std::vector<std::vector<float>> slots;
};

// Values and slots that differ per element (slots stay positive: accumulators).
Table StartTable(const Optimizer& opt) {
  Table t;
  for (int64_t i = 0; i < kRows * kDim; ++i) t.values.push_back(0.1f * static_cast<float>(i % 7) - 0.3f);
  for (size_t s = 0; s < opt.SlotNames().size(); ++s) {
    std::vector<float> slot;
    for (int64_t i = 0; i < kRows * kDim; ++i) {
      slot.push_back(opt.SlotInitialValue(static_cast<int>(s)) + 0.01f * static_cast<float>((i + s) % 5));
    }
    t.slots.push_back(slot);
  }
  return t;
}

// The update: rows 4, 1, 4 (row 4 twice: summed), as a RowAccumulator builds it.
const std::vector<int64_t> kIds = {4, 1, 4};
const std::vector<float> kGrads = {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 0.1f, -0.2f, 0.3f, 0.05f};

RowGradients BuildUpdate() {
  RowAccumulator acc(kDim);
  for (size_t i = 0; i < kIds.size(); ++i) acc.Add(kIds[i], reinterpret_cast<const char*>(&kGrads[i * kDim]));
  return acc.Take();
}

// The summed gradient of element e of `row` (0 for rows the update does not touch).
double SummedGrad(int64_t row, int64_t e) {
  double g = 0;
  for (size_t i = 0; i < kIds.size(); ++i) {
    if (kIds[i] == row) g += kGrads[i * kDim + e];
  }
  return g;
}

// Applies `proto` sparsely, checks each touched (or, with `every_row`, each) element against
// `rule`, and every other element and slot for bit-identity.
void Check(const OptimizerProto& proto, const ElementRule& rule, bool every_row = false) {
  auto opt = Optimizer::Create(proto);
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(UpdatesEveryRow(**opt), every_row);
  const Table before = StartTable(**opt);
  Table after = before;
  std::vector<absl::Span<float>> slots;
  for (auto& s : after.slots) slots.push_back(absl::MakeSpan(s));
  ApplyRowGradients(**opt, BuildUpdate(), kDim, absl::MakeSpan(after.values), slots, kStep);
  for (int64_t r = 0; r < kRows; ++r) {
    const bool touched = r == 1 || r == 4;
    for (int64_t e = 0; e < kDim; ++e) {
      const size_t i = static_cast<size_t>(r * kDim + e);
      if (!touched && !every_row) {
        EXPECT_EQ(std::memcmp(&after.values[i], &before.values[i], 4), 0) << proto.type() << " row " << r;
        for (size_t s = 0; s < slots.size(); ++s) {
          EXPECT_EQ(std::memcmp(&after.slots[s][i], &before.slots[s][i], 4), 0) << proto.type() << " slot " << s;
        }
        continue;
      }
      double w = before.values[i];
      std::vector<double> want_slots;
      for (const auto& s : before.slots) want_slots.push_back(s[i]);
      rule(SummedGrad(r, e), &w, &want_slots);
      EXPECT_NEAR(after.values[i], w, 1e-5 * (1 + std::fabs(w))) << proto.type() << " row " << r << " elem " << e;
      for (size_t s = 0; s < want_slots.size(); ++s) {
        EXPECT_NEAR(after.slots[s][i], want_slots[s], 1e-5 * (1 + std::fabs(want_slots[s])))
            << proto.type() << " slot " << s << " row " << r;
      }
    }
  }
}

TEST(SparseApply, DuplicateRowsAreSummedInTheOrderAdded) {
  RowGradients u = BuildUpdate();
  ASSERT_EQ(u.rows, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(u.grads, (std::vector<float>{0.5f - 0.2f, -1.0f + 0.3f, 0.25f + 0.05f, 2.0f, -0.75f, 0.1f}));
}

TEST(SparseApply, Sgd) {
  Check(Make("sgd", 0.1), [](double g, double* w, std::vector<double>*) { *w -= 0.1 * g; });
}

TEST(SparseApply, MomentumOnlyTouchesTheRowsSlots) {
  for (bool nesterov : {false, true}) {
    OptimizerProto p = Make("sgd", 0.1);
    p.set_momentum(0.9);
    p.set_nesterov(nesterov);
    Check(p, [nesterov](double g, double* w, std::vector<double>* s) {
      double& m = (*s)[0];
      m = 0.9 * m - 0.1 * g;
      *w += nesterov ? 0.9 * m - 0.1 * g : m;
    });
  }
}

TEST(SparseApply, Adagrad) {
  OptimizerProto p = Make("adagrad", 0.05);
  p.set_initial_accumulator_value(0.1);
  p.set_epsilon(1e-7);
  Check(p, [](double g, double* w, std::vector<double>* s) {
    double& a = (*s)[0];
    a += g * g;
    *w -= 0.05 * g / std::sqrt(a + 1e-7);  // Keras 3's Adagrad
  });
}

TEST(SparseApply, RmspropCenteredWithMomentum) {
  OptimizerProto p = Make("rmsprop", 0.01);
  p.set_momentum(0.5);
  p.set_centered(true);
  p.set_rho(0.9);
  p.set_epsilon(1e-7);
  Check(p, [](double g, double* w, std::vector<double>* s) {
    double &v = (*s)[0], &mom = (*s)[1], &avg = (*s)[2];
    v = 0.9 * v + 0.1 * g * g;
    avg = 0.9 * avg + 0.1 * g;
    mom = 0.5 * mom + 0.01 * g / std::sqrt(v - avg * avg + 1e-7);
    *w -= mom;
  });
}

// Keras's Ftrl update_step, per element.
ElementRule FtrlRule(double lr, double power, double l1, double l2, double shrinkage, double beta) {
  return [=](double g, double* w, std::vector<double>* s) {
    double &n = (*s)[0], &z = (*s)[1];
    const double shrunk = g + 2 * shrinkage * *w;
    const double n_new = n + g * g;
    z += shrunk - (std::pow(n_new, -power) - std::pow(n, -power)) / lr * *w;
    const double quadratic = std::pow(n_new, -power) / lr + 2 * (l2 + beta / (2 * lr));
    const double clipped = std::max(-l1, std::min(l1, z));
    *w = (clipped - z) / quadratic;
    n = n_new;
  };
}

TEST(SparseApply, FtrlWithDefaults) {
  OptimizerProto p = Make("ftrl", 0.1);
  auto opt = Optimizer::Create(p);
  ASSERT_TRUE(opt.ok());
  EXPECT_EQ((*opt)->config().learning_rate_power(), -0.5);
  EXPECT_EQ((*opt)->SlotInitialValue(0), 0.1f);
  EXPECT_EQ((*opt)->SlotInitialValue(1), 0.0f);
  Check(p, FtrlRule(0.1, -0.5, 0, 0, 0, 0));
}

TEST(SparseApply, FtrlWithEveryRegularizer) {
  OptimizerProto p = Make("ftrl", 0.2);
  p.set_learning_rate_power(-0.7);
  p.set_l1(0.01);
  p.set_l2(0.02);
  p.set_l2_shrinkage(0.03);
  p.set_beta(0.5);
  Check(p, FtrlRule(0.2, -0.7, 0.01, 0.02, 0.03, 0.5));
}

// Adam's update at t = kStep + 1, with the bias correction folded into the learning rate.
ElementRule AdamRule(double lr) {
  const double t = kStep + 1, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  const double alpha = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
  return [=](double g, double* w, std::vector<double>* s) {
    double &m = (*s)[0], &v = (*s)[1];
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    *w -= alpha * m / (std::sqrt(v) + eps);
  };
}

TEST(SparseApply, LazyAdamMovesOnlyTheTouchedRowsMoments) { Check(Make("lazy_adam", 0.01), AdamRule(0.01)); }

TEST(SparseApply, DenseAdamOnATableUpdatesEveryRow) { Check(Make("adam", 0.01), AdamRule(0.01), /*every_row=*/true); }

// Updates of more rows than one gathered block (4096) give what the dense formula (already
// checked above against Keras's) gives row by row.
TEST(SparseApply, LargeUpdatesSpanSeveralBlocks) {
  OptimizerProto p = Make("sgd", 0.1);
  p.set_momentum(0.9);
  auto opt = Optimizer::Create(p);
  ASSERT_TRUE(opt.ok());
  constexpr int64_t kBig = 20000, kWidth = 5;
  std::vector<float> values(kBig * kWidth), momentum(kBig * kWidth);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(i % 17) * 0.01f;
    momentum[i] = static_cast<float>(i % 5) * 0.001f;
  }
  RowGradients update;
  for (int64_t r = kBig - 1; r >= 0; r -= 2) update.rows.push_back(r);  // 10000 rows, descending
  for (size_t i = 0; i < update.rows.size() * kWidth; ++i) update.grads.push_back(static_cast<float>(i % 7) - 3.0f);
  std::vector<float> want = values, want_m = momentum;
  for (size_t i = 0; i < update.rows.size(); ++i) {
    const size_t at = static_cast<size_t>(update.rows[i] * kWidth);
    const absl::Span<float> m[] = {absl::MakeSpan(&want_m[at], kWidth)};
    (*opt)->Apply(absl::MakeConstSpan(&update.grads[i * kWidth], kWidth), absl::MakeSpan(&want[at], kWidth), m, 2);
  }
  const std::vector<absl::Span<float>> slots = {absl::MakeSpan(momentum)};
  ApplyRowGradients(**opt, update, kWidth, absl::MakeSpan(values), slots, 2);
  EXPECT_EQ(values, want);
  EXPECT_EQ(momentum, want_m);
}

}  // namespace
}  // namespace pstrain
