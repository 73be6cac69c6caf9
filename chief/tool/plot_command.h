// `pstrain plot RUN_DIR... --out FILE`: draws the training and test curves of one or more runs in
// one chart, runs in different colours (train solid, test dashed with dots): loss, accuracy (or
// AUC when the runs report it) and examples/s against the global step, loss and accuracy against
// wall time, and the async staleness (the most steps a worker's gradient lagged in each progress
// window). FILE.svg is written directly; FILE.png is the SVG rendered by rsvg-convert (Debian
// librsvg2-bin). The legend names each run after its directory.
// Thread-safety: runs on the calling thread only.
#ifndef PSTRAIN_CHIEF_TOOL_PLOT_COMMAND_H_
#define PSTRAIN_CHIEF_TOOL_PLOT_COMMAND_H_

#include <string>
#include <vector>

#include "chief/tool/run_curves.h"
#include "chief/tool/svg_chart.h"

namespace pstrain {

class Env;

// The six panels and the legend for `runs` (exposed for tests).
std::vector<ChartPanel> PlotPanels(const std::vector<RunCurves>& runs);
std::vector<LegendEntry> PlotLegend(const std::vector<RunCurves>& runs);

// Entry point for `pstrain plot ARGS...` (argv[1] is "plot"). Returns the exit code: 0 written,
// 2 for bad flags or unreadable runs, 1 when the file cannot be written or rendered.
// `env` is unused: every command takes one (pstrain_main.cc's table).
int PlotMain(Env* env, int argc, char** argv);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_PLOT_COMMAND_H_
