#include "chief/tool/plot_command.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config/command_line.h"
#include "common/platform/exit_codes.h"
#include "common/platform/status_macros.h"

extern char** environ;

namespace pstrain {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
constexpr const char* kStyleColor = "#555555";

const std::vector<FlagDef>& PlotFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"out", "", "the file to write: FILE.svg, or FILE.png (rendered with rsvg-convert)"},
      {"title", "", "the chart's title (default: the runs' names)"},
  };
  return *flags;
}

using Field = double CurvePoint::*;

bool AnyFinite(const std::vector<RunCurves>& runs, Field f) {
  for (const RunCurves& r : runs) {
    for (const auto* points : {&r.train, &r.eval}) {
      for (const CurvePoint& p : *points) {
        if (std::isfinite(p.*f)) return true;
      }
    }
  }
  return false;
}

ChartSeries Series(const std::vector<CurvePoint>& points, Field x, Field y, const char* color, bool test) {
  ChartSeries s;
  s.color = color;
  s.dashed = test;
  s.markers = test;
  for (const CurvePoint& p : points) s.points.emplace_back(p.*x, p.*y);
  return s;
}

// One panel: every run's train curve and (when `with_test`) its test curve of `y` against `x`.
ChartPanel Panel(const std::vector<RunCurves>& runs, std::string title, std::string x_label, std::string y_label,
                 Field x, Field y, bool with_test) {
  ChartPanel p{std::move(title), std::move(x_label), std::move(y_label), {}};
  for (size_t i = 0; i < runs.size(); ++i) {
    const char* color = kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
    p.series.push_back(Series(runs[i].train, x, y, color, false));
    if (with_test) p.series.push_back(Series(runs[i].eval, x, y, color, true));
  }
  return p;
}

absl::Status WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// rsvg-convert -o png svg, waiting for it.
absl::Status RenderPng(const std::string& svg_path, const std::string& png_path) {
  std::vector<std::string> args = {"rsvg-convert", "-o", png_path, svg_path};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, "rsvg-convert", nullptr, nullptr, argv.data(), environ) != 0) {
    return absl::FailedPreconditionError(
        "rsvg-convert is not installed (apt-get install librsvg2-bin), so no PNG: write --out=FILE.svg and open it in "
        "a browser, or convert it elsewhere");
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat("rsvg-convert could not render ", svg_path, " to ", png_path));
  }
  return absl::OkStatus();
}

absl::Status RunPlot(const CommandLine& cl) {
  const std::string out = cl.Get("out");
  if (out.empty()) return absl::InvalidArgumentError("--out=FILE.svg or --out=FILE.png is required");
  const bool png = absl::EndsWithIgnoreCase(out, ".png");
  if (!png && !absl::EndsWithIgnoreCase(out, ".svg")) {
    return absl::InvalidArgumentError(absl::StrCat("--out=", out, ": the file must end in .svg or .png"));
  }
  if (cl.positional().empty()) return absl::InvalidArgumentError("give at least one RUN_DIR");
  std::vector<RunCurves> runs;
  std::vector<std::string> names;
  for (const std::string& path : cl.positional()) {
    ASSIGN_OR_RETURN(RunCurves run, LoadRunCurves(path));
    names.push_back(run.name);
    runs.push_back(std::move(run));
  }
  ChartLayout layout;
  layout.title = cl.Get("title").empty() ? absl::StrCat("pstrain: ", absl::StrJoin(names, " vs ")) : cl.Get("title");
  const std::vector<LegendEntry> legend = PlotLegend(runs);
  const std::string svg = RenderChartSvg(PlotPanels(runs), legend, layout);
  if (!png) return WriteFile(out, svg);
  const std::string tmp = absl::StrCat(out, ".", getpid(), ".svg");
  RETURN_IF_ERROR(WriteFile(tmp, svg));
  absl::Status s = RenderPng(tmp, out);
  std::remove(tmp.c_str());
  return s;
}

}  // namespace

std::vector<ChartPanel> PlotPanels(const std::vector<RunCurves>& runs) {
  const bool auc = AnyFinite(runs, &CurvePoint::auc) && !AnyFinite(runs, &CurvePoint::accuracy);
  const Field metric = auc ? &CurvePoint::auc : &CurvePoint::accuracy;
  const std::string metric_name = auc ? "AUC" : "accuracy";
  return {
      Panel(runs, "Loss", "global step", "loss", &CurvePoint::step, &CurvePoint::loss, true),
      Panel(runs, auc ? "AUC" : "Accuracy", "global step", metric_name, &CurvePoint::step, metric, true),
      Panel(runs, "Throughput", "global step", "examples/s", &CurvePoint::step, &CurvePoint::examples_per_second,
            false),
      Panel(runs, "Loss against time", "wall time (s)", "loss", &CurvePoint::wall_seconds, &CurvePoint::loss, true),
      Panel(runs, auc ? "AUC against time" : "Accuracy against time", "wall time (s)", metric_name,
            &CurvePoint::wall_seconds, metric, true),
      Panel(runs, "Staleness (async)", "global step", "max steps behind", &CurvePoint::step, &CurvePoint::max_staleness,
            false),
  };
}

std::vector<LegendEntry> PlotLegend(const std::vector<RunCurves>& runs) {
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < runs.size(); ++i) {
    legend.push_back({runs[i].name, kColors[i % (sizeof(kColors) / sizeof(kColors[0]))], false, false});
  }
  legend.push_back({"train (progress windows)", kStyleColor, false, false});
  legend.push_back({"test (evaluations)", kStyleColor, true, true});
  return legend;
}

int PlotMain(Env* /*env: unused*/, int argc, char** argv) {
  const std::string summary =
      "Draws the training and test curves of one or more runs (loss, accuracy or AUC, examples/s against step\n"
      "and wall time, async staleness). A RUN_DIR is a demo run dir, a model dir or a metrics.jsonl file.\n"
      "  pstrain plot runs/async runs/sync --out=compare.svg\n"
      "  pstrain plot runs/20250101-120000-cnn --out=curves.png   (needs rsvg-convert: librsvg2-bin)";
  auto cl = CommandLine::Parse("pstrain plot", argc, argv, 2, PlotFlags());
  if (!cl.ok()) {
    std::cerr << "pstrain plot: " << cl.status().message() << "\n";
    return kExitBadConfiguration;
  }
  if (cl->help()) {
    std::cout << "usage: pstrain plot RUN_DIR... --out=FILE\n" << FlagUsage("pstrain plot", summary, PlotFlags());
    return kExitOk;
  }
  absl::Status s = RunPlot(*cl);
  if (!s.ok()) {
    std::cerr << "pstrain plot: " << s.message() << "\n";
    return ExitCodeFor(s);
  }
  std::cerr << "pstrain plot: wrote " << cl->Get("out") << "\n";
  return kExitOk;
}

}  // namespace pstrain
