// Ticks, labels and the document `pstrain plot` draws.
#include "chief/tool/svg_chart.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SvgChartTest, NiceTicksCoverTheRangeInRoundSteps) {
  EXPECT_THAT(NiceTicks(0, 1.2), ElementsAre(0, 0.25, 0.5, 0.75, 1, 1.25));
  EXPECT_THAT(NiceTicks(37, 1180), ElementsAre(0, 250, 500, 750, 1000, 1250));
  const std::vector<double> one = NiceTicks(5, 5);  // one value: a range around it
  EXPECT_LE(one.front(), 5);
  EXPECT_GE(one.back(), 5);
  EXPECT_GT(one.size(), 1u);
}

TEST(SvgChartTest, TickLabelsAreShort) {
  EXPECT_EQ(TickLabel(0, 1), "0");
  EXPECT_EQ(TickLabel(2500, 500), "2.5k");
  EXPECT_EQ(TickLabel(3e7, 1e7), "30M");
  EXPECT_EQ(TickLabel(0.75, 0.25), "0.75");
}

TEST(SvgChartTest, DocumentHasItsSizePanelsSeriesAndEscapedLegend) {
  ChartPanel p{"Loss", "step", "loss", {}};
  ChartSeries s{"#1f77b4", false, false, {{0, 1}, {10, 0.5}, {20, std::nan("")}}};
  p.series.push_back(s);
  ChartPanel empty{"Nothing", "x", "y", {}};
  ChartLayout layout;
  const std::string svg = RenderChartSvg({p, empty}, {{"a<b", "#1f77b4", false, false}}, layout);
  const auto [w, h] = ChartSize(layout, 2, 1);
  EXPECT_THAT(svg, HasSubstr("width=\"" + std::to_string(w) + "\" height=\"" + std::to_string(h) + "\""));
  EXPECT_THAT(svg, HasSubstr("<polyline points=\""));
  EXPECT_THAT(svg, HasSubstr("stroke=\"#1f77b4\""));
  EXPECT_THAT(svg, HasSubstr(">no data<"));
  EXPECT_THAT(svg, HasSubstr(">a&lt;b<"));
}

TEST(SvgChartTest, APanelWithOnePointShowsIt) {
  ChartPanel p{"Loss", "step", "loss", {}};
  p.series.push_back(ChartSeries{"#d62728", false, false, {{40, 0.5}, {50, std::nan("")}}});
  const std::string svg = RenderChartSvg({p}, {}, ChartLayout());
  EXPECT_THAT(svg, ::testing::Not(HasSubstr(">no data<")));
  EXPECT_THAT(svg, HasSubstr("<circle"));
  EXPECT_THAT(svg, HasSubstr("fill=\"#d62728\""));
}

}  // namespace
}  // namespace pstrain
