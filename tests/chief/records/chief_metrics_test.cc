// The chief's Prometheus gauges for binary (CTR) models: the test and training AUC appear once a
// model has them, and a model without an AUC exports no AUC series at all (never a 0).
#include "chief/records/chief_metrics.h"

#include <cmath>
#include <string>

#include "common/metrics/metrics_registry.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

bool HasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(ChiefMetricsTest, AucGaugesOnlyForModelsThatHaveAnAuc) {
  MetricsRegistry registry;
  ChiefMetrics metrics(&registry);
  EvalResult classification;
  classification.step = 10;
  classification.loss = 0.5;
  classification.accuracy = 0.8;
  metrics.OnEval(classification, 1.0);
  ProgressWindow window;
  window.global_step = 10;
  window.loss = 0.5;
  window.accuracy = 0.8;
  window.auc = std::nan("");
  metrics.OnWindow(window);
  std::string text = registry.Render();
  EXPECT_EQ(text.find("pstrain_eval_auc"), std::string::npos) << text;
  EXPECT_EQ(text.find("pstrain_train_auc"), std::string::npos) << text;

  EvalResult binary;
  binary.step = 20;
  binary.loss = 0.43;
  binary.accuracy = std::nan("");
  binary.auc = 0.8125;
  metrics.OnEval(binary, 1.0);
  window.global_step = 20;
  window.accuracy = std::nan("");
  window.auc = 0.75;
  metrics.OnWindow(window);
  text = registry.Render();
  EXPECT_TRUE(HasLine(text, "pstrain_eval_auc 0.8125")) << text;
  EXPECT_TRUE(HasLine(text, "pstrain_train_auc 0.75")) << text;
  EXPECT_TRUE(HasLine(text, "pstrain_eval_accuracy 0.8")) << text;  // the last finite one stays
}

TEST(ChiefMetricsTest, LostPsCountersAddUpPerPs) {
  MetricsRegistry registry;
  ChiefMetrics metrics(&registry);
  metrics.OnPsLost("ps:1 at 10.0.0.2:2222");
  metrics.OnPsRecovered("ps:1 at 10.0.0.2:2222", 2.5, 87);
  metrics.OnPsLost("ps:1 at 10.0.0.2:2222");
  metrics.OnPsRecovered("ps:1 at 10.0.0.2:2222", 1.5, 0);
  const std::string text = registry.Render();
  EXPECT_TRUE(HasLine(text, "pstrain_ps_lost_total{ps=\"ps:1\"} 2")) << text;
  EXPECT_TRUE(HasLine(text, "pstrain_ps_recovered_total{ps=\"ps:1\"} 2")) << text;
  EXPECT_TRUE(HasLine(text, "pstrain_ps_lost_updates_total{ps=\"ps:1\"} 87")) << text;
  EXPECT_TRUE(HasLine(text, "pstrain_ps_recovery_pause_seconds_total{ps=\"ps:1\"} 4")) << text;
}

}  // namespace
}  // namespace pstrain
