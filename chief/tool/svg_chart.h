// SvgChart: line charts as one SVG document, a grid of panels with shared legend, for `pstrain
// plot`. Each panel has its own axes with "nice" ticks (1, 2, 5 x 10^k), tick labels, axis titles
// and a light grid; series are polylines (solid or dashed, optionally with point markers). No
// dependency beyond the standard library; the output renders in browsers and in rsvg-convert.
// Thread-safety: pure functions.
#ifndef PSTRAIN_CHIEF_TOOL_SVG_CHART_H_
#define PSTRAIN_CHIEF_TOOL_SVG_CHART_H_

#include <string>
#include <utility>
#include <vector>

namespace pstrain {

struct ChartSeries {
  std::string color;  // "#1f77b4"
  bool dashed = false;
  bool markers = false;
  std::vector<std::pair<double, double>> points;  // (x, y); non-finite points are skipped
};

struct ChartPanel {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
};

struct LegendEntry {
  std::string label;
  std::string color;
  bool dashed = false;
  bool markers = false;
};

struct ChartLayout {
  int columns = 3;
  int panel_width = 440;
  int panel_height = 320;
  std::string title;
};

// Tick positions covering [lo, hi] with about `target` ticks at 1, 2 or 5 x 10^k steps.
std::vector<double> NiceTicks(double lo, double hi, int target = 5);
// A tick label: "0", "2.5", "1.2k", "30M", "1e-05".
std::string TickLabel(double v, double step);

// The whole document; its size is ChartSize(layout, panels.size()).
std::string RenderChartSvg(const std::vector<ChartPanel>& panels, const std::vector<LegendEntry>& legend,
                           const ChartLayout& layout);
// (width, height) in pixels of the document RenderChartSvg makes.
std::pair<int, int> ChartSize(const ChartLayout& layout, int num_panels, int legend_entries);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_SVG_CHART_H_
