#include "chief/tool/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pstrain {
namespace {

constexpr int kTitleHeight = 40;
constexpr int kLegendRowHeight = 24;
constexpr int kLegendColumns = 3;
// Plot area inside a panel.
constexpr int kLeft = 70, kRight = 20, kTop = 34, kBottom = 50;

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '"') {
      out += "&quot;";
    } else {
      out += c;
    }
  }
  return out;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

int LegendRows(int entries) { return (entries + kLegendColumns - 1) / kLegendColumns; }

void AppendPanel(const ChartPanel& p, int x0, int y0, const ChartLayout& layout, std::string* out) {
  const int w = layout.panel_width - kLeft - kRight, h = layout.panel_height - kTop - kBottom;
  const int px = x0 + kLeft, py = y0 + kTop;
  absl::StrAppendFormat(out, "<text x=\"%d\" y=\"%d\" class=\"title\">%s</text>\n", px + w / 2, y0 + 22,
                        Escape(p.title));
  absl::StrAppendFormat(out, "<text x=\"%d\" y=\"%d\" class=\"axis\">%s</text>\n", px + w / 2, py + h + 42,
                        Escape(p.x_label));
  absl::StrAppendFormat(out, "<text x=\"%d\" y=\"%d\" class=\"axis\" transform=\"rotate(-90 %d %d)\">%s</text>\n",
                        x0 + 16, py + h / 2, x0 + 16, py + h / 2, Escape(p.y_label));
  Range xr, yr;
  for (const ChartSeries& s : p.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      xr.Add(x);
      yr.Add(y);
    }
  }
  absl::StrAppendFormat(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"frame\"/>\n", px, py, w, h);
  if (xr.empty()) {
    absl::StrAppendFormat(out, "<text x=\"%d\" y=\"%d\" class=\"axis\">no data</text>\n", px + w / 2, py + h / 2);
    return;
  }
  const std::vector<double> xt = NiceTicks(xr.lo, xr.hi), yt = NiceTicks(yr.lo, yr.hi);
  const double x_lo = xt.front(), x_hi = xt.back(), y_lo = yt.front(), y_hi = yt.back();
  auto sx = [&](double x) { return px + (x - x_lo) / (x_hi - x_lo) * w; };
  auto sy = [&](double y) { return py + h - (y - y_lo) / (y_hi - y_lo) * h; };
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 1, ystep = yt.size() > 1 ? yt[1] - yt[0] : 1;
  for (double t : xt) {
    absl::StrAppendFormat(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"grid\"/>\n", sx(t), py, sx(t),
                          py + h);
    absl::StrAppendFormat(out, "<text x=\"%.1f\" y=\"%d\" class=\"tick\">%s</text>\n", sx(t), py + h + 18,
                          TickLabel(t, xstep));
  }
  for (double t : yt) {
    absl::StrAppendFormat(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"grid\"/>\n", px, sy(t),
                          px + w, sy(t));
    absl::StrAppendFormat(out, "<text x=\"%d\" y=\"%.1f\" class=\"ytick\">%s</text>\n", px - 6, sy(t) + 4,
                          TickLabel(t, ystep));
  }
  for (const ChartSeries& s : p.series) {
    std::string pts;
    int drawn = 0;
    for (const auto& [x, y] : s.points) {
      if (std::isfinite(x) && std::isfinite(y)) {
        absl::StrAppendFormat(&pts, "%.1f,%.1f ", sx(x), sy(y));
        ++drawn;
      }
    }
    if (pts.empty()) continue;
    absl::StrAppendFormat(out, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", pts,
                          s.color, s.dashed ? " stroke-dasharray=\"7,4\"" : "");
    // A line of one point draws nothing: a lone point gets its marker whatever the series' style.
    if (!s.markers && drawn > 1) continue;
    for (const auto& [x, y] : s.points) {
      if (std::isfinite(x) && std::isfinite(y)) {
        absl::StrAppendFormat(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", sx(x), sy(y), s.color);
      }
    }
  }
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) {  // one value (or none): a small range around it
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::floor(lo / step) * step; t < hi + step * 0.999; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    if (ticks.size() > 50) break;
  }
  return ticks;
}

std::string TickLabel(double v, double step) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e6 && step >= 1e5) return absl::StrFormat("%gM", v / 1e6);
  if (a >= 1e3 && step >= 100) return absl::StrFormat("%gk", v / 1e3);
  if (a < 1e-3) return absl::StrFormat("%.0e", v);
  return absl::StrFormat("%g", v);
}

std::pair<int, int> ChartSize(const ChartLayout& layout, int num_panels, int legend_entries) {
  const int rows = (num_panels + layout.columns - 1) / std::max(1, layout.columns);
  return {layout.columns * layout.panel_width,
          kTitleHeight + rows * layout.panel_height + LegendRows(legend_entries) * kLegendRowHeight + 16};
}

std::string RenderChartSvg(const std::vector<ChartPanel>& panels, const std::vector<LegendEntry>& legend,
                           const ChartLayout& layout) {
  const auto [width, height] = ChartSize(layout, static_cast<int>(panels.size()), static_cast<int>(legend.size()));
  std::string out = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<style>.title{font-size:15px;font-weight:bold;text-anchor:middle}"
      ".axis{font-size:13px;text-anchor:middle;fill:#333}.tick{font-size:11px;text-anchor:middle;fill:#444}"
      ".ytick{font-size:11px;text-anchor:end;fill:#444}.legend{font-size:13px;fill:#222}"
      ".grid{stroke:#e3e3e3;stroke-width:1}.frame{fill:none;stroke:#888;stroke-width:1}</style>\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%d\" y=\"26\" class=\"title\" style=\"font-size:18px\">%s</text>\n",
      width, height, width, height, width / 2, Escape(layout.title));
  for (size_t i = 0; i < panels.size(); ++i) {
    const int col = static_cast<int>(i) % layout.columns, row = static_cast<int>(i) / layout.columns;
    AppendPanel(panels[i], col * layout.panel_width, kTitleHeight + row * layout.panel_height, layout, &out);
  }
  const int rows = (static_cast<int>(panels.size()) + layout.columns - 1) / layout.columns;
  const int ly = kTitleHeight + rows * layout.panel_height + 8;
  const int column_width = width / kLegendColumns;
  for (size_t i = 0; i < legend.size(); ++i) {
    const LegendEntry& e = legend[i];
    const int x = 24 + static_cast<int>(i % kLegendColumns) * column_width;
    const int y = ly + static_cast<int>(i / kLegendColumns) * kLegendRowHeight + 8;
    absl::StrAppendFormat(&out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"%s/>\n",
                          x, y, x + 34, y, e.color, e.dashed ? " stroke-dasharray=\"7,4\"" : "");
    if (e.markers)
      absl::StrAppendFormat(&out, "<circle cx=\"%d\" cy=\"%d\" r=\"3.5\" fill=\"%s\"/>\n", x + 17, y, e.color);
    absl::StrAppendFormat(&out, "<text x=\"%d\" y=\"%d\" class=\"legend\">%s</text>\n", x + 42, y + 5, Escape(e.label));
  }
  return out + "</svg>\n";
}

}  // namespace pstrain
