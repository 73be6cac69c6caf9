#include "common/graph/keras_weights.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/graph/hdf5_io.h"

namespace pstrain {
namespace {

constexpr char kKeras2Backend[] = "tensorflow";
constexpr char kKeras2Version[] = "2.15.0";  // the tf.keras whose legacy layout this writes

std::string ShapeText(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

// A name or list read from the file, cut for an error message.
std::string Cut(const std::string& text, size_t max_chars = 200) {
  return text.size() <= max_chars ? text : text.substr(0, max_chars) + "...";
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Each layer's variables (indices into graph.variables), trainable first as Keras stores them.
// "a, b, c": the names of a layer's variables (indices into graph.variables), for messages.
std::string VariableNames(const ModelGraph& graph, const std::vector<int>& layer_vars) {
  std::vector<std::string> names;
  for (int v : layer_vars) names.push_back(graph.variables[static_cast<size_t>(v)].name);
  return absl::StrJoin(names, ", ");
}

std::vector<std::vector<int>> VariablesByLayer(const ModelGraph& graph) {
  std::vector<std::vector<int>> out(graph.layers.size());
  for (size_t i = 0; i < graph.variables.size(); ++i) out[graph.variables[i].layer].push_back(static_cast<int>(i));
  for (std::vector<int>& vars : out) {
    std::stable_sort(vars.begin(), vars.end(),
                     [&](int a, int b) { return graph.variables[a].trainable && !graph.variables[b].trainable; });
  }
  return out;
}

// Whether the layer is one of Keras's `model.layers` (a Sequential model leaves its input out).
bool InModelLayers(const ModelGraph& graph, int layer) {
  return !(graph.sequential && graph.layers[layer].kind == LayerKind::kInput);
}

bool Upper(char c) { return c >= 'A' && c <= 'Z'; }
bool Lower(char c) { return c >= 'a' && c <= 'z'; }

// Keras 3's naming.to_snake_case for ASCII names: drops non-word characters, then (as its regular
// expressions do, left to right) "(.)([A-Z][a-z]+)" -> "\1_\2" and "([a-z])([A-Z])" -> "\1_\2",
// then lowercases.
std::string SnakeCase(const std::string& name) {
  std::string word;
  for (char c : name) {
    if (Upper(c) || Lower(c) || (c >= '0' && c <= '9') || c == '_') word += c;
  }
  std::string split;
  for (size_t i = 0; i < word.size();) {
    if (i + 2 < word.size() && Upper(word[i + 1]) && Lower(word[i + 2])) {
      size_t end = i + 3;
      while (end < word.size() && Lower(word[end])) ++end;
      split += word[i];
      split += '_';
      split += word.substr(i + 1, end - i - 1);
      i = end;
    } else {
      split += word[i++];
    }
  }
  std::string out;
  for (size_t i = 0; i < split.size();) {
    if (i + 1 < split.size() && Lower(split[i]) && Upper(split[i + 1])) {
      out += split[i];
      out += '_';
      out += split[i + 1];
      i += 2;
    } else {
      out += split[i++];
    }
  }
  for (char& c : out) {
    if (Upper(c)) c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Keras 3's group of each layer under `layers/` ("" for a layer not in model.layers): its class in
// snake_case, made unique in model order with _1, _2, ...
std::vector<std::string> Keras3LayerGroups(const ModelGraph& graph) {
  std::vector<std::string> out(graph.layers.size());
  std::map<std::string, int> used;
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    if (!InModelLayers(graph, static_cast<int>(i))) continue;
    const std::string base = SnakeCase(graph.layers[i].class_name);
    auto [it, fresh] = used.emplace(base, 0);
    out[i] = fresh ? base : absl::StrCat(base, "_", ++it->second);
  }
  return out;
}

absl::Status CheckKeras3Layers(const ModelGraph& graph) {
  for (const GraphLayerSpec& layer : graph.layers) {
    if (layer.kind == LayerKind::kCross) {
      return absl::InvalidArgumentError(
          absl::StrCat("layer '", layer.name,
                       "' is a TensorFlow Recommenders Cross layer, which exists only in Keras 2; "
                       "use the Keras 2 (.h5) weights format for this model"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckWeights(const ModelGraph& graph, const NamedWeights& weights) {
  for (const GraphVariableSpec& var : graph.variables) {
    auto it = weights.find(var.name);
    if (it == weights.end()) return absl::InvalidArgumentError(absl::StrCat("no value for variable '", var.name, "'"));
    if (it->second.shape != var.shape) {
      return absl::InvalidArgumentError(absl::StrCat("variable '", var.name, "' has shape ",
                                                     ShapeText(it->second.shape), "; the model's is ",
                                                     ShapeText(var.shape)));
    }
    if (static_cast<int64_t>(it->second.values.size()) != Elements(var.shape)) {
      return absl::InvalidArgumentError(absl::StrCat("variable '", var.name, "' has ", it->second.values.size(),
                                                     " values for shape ", ShapeText(var.shape)));
    }
  }
  for (const auto& [name, value] : weights) {
    if (graph.FindVariable(name) < 0) {
      return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a variable of model '", graph.name, "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status WriteKeras3(const ModelGraph& graph, const NamedWeights& weights, hid_t file) {
  const std::vector<std::vector<int>> vars = VariablesByLayer(graph);
  const std::vector<std::string> groups = Keras3LayerGroups(graph);
  Hdf5Handle layers(H5Gcreate2(file, "layers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!layers.ok()) return absl::InternalError("group 'layers' cannot be created");
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    if (groups[i].empty()) continue;
    Hdf5Handle group(H5Gcreate2(layers.get(), groups[i].c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    Hdf5Handle vars_group(group.ok() ? H5Gcreate2(group.get(), "vars", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1,
                          H5Gclose);
    if (!vars_group.ok()) return absl::InternalError(absl::StrCat("group 'layers/", groups[i], "' cannot be created"));
    if (absl::Status s = Hdf5WriteStrings(vars_group.get(), "name", {graph.layers[i].name}, true, true); !s.ok())
      return s;
    for (size_t k = 0; k < vars[i].size(); ++k) {
      const GraphVariableSpec& var = graph.variables[vars[i][k]];
      const WeightValue& value = weights.at(var.name);
      if (absl::Status s = Hdf5WriteFloats(vars_group.get(), std::to_string(k), value.shape, value.values); !s.ok()) {
        return s;
      }
    }
  }
  Hdf5Handle model_vars(H5Gcreate2(file, "vars", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!model_vars.ok()) return absl::InternalError("group 'vars' cannot be created");
  return Hdf5WriteStrings(model_vars.get(), "name", {graph.name}, true, true);
}

absl::Status WriteKeras2(const ModelGraph& graph, const NamedWeights& weights, hid_t file) {
  const std::vector<std::vector<int>> vars = VariablesByLayer(graph);
  std::vector<std::string> layer_names;
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    if (InModelLayers(graph, static_cast<int>(i))) layer_names.push_back(graph.layers[i].name);
  }
  if (absl::Status s = Hdf5WriteStrings(file, "layer_names", layer_names, false, false); !s.ok()) return s;
  if (absl::Status s = Hdf5WriteStrings(file, "backend", {kKeras2Backend}, true, false); !s.ok()) return s;
  if (absl::Status s = Hdf5WriteStrings(file, "keras_version", {kKeras2Version}, true, false); !s.ok()) return s;
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    if (!InModelLayers(graph, static_cast<int>(i))) continue;
    const std::string& name = graph.layers[i].name;
    Hdf5Handle group(H5Gcreate2(file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!group.ok()) return absl::InternalError(absl::StrCat("group '", name, "' cannot be created"));
    std::vector<std::string> weight_names;
    for (int v : vars[i]) weight_names.push_back(graph.variables[v].name + ":0");
    if (absl::Status s = Hdf5WriteStrings(group.get(), "weight_names", weight_names, false, false); !s.ok()) return s;
    for (size_t k = 0; k < vars[i].size(); ++k) {
      const WeightValue& value = weights.at(graph.variables[vars[i][k]].name);
      if (absl::Status s = Hdf5WriteFloats(group.get(), weight_names[k], value.shape, value.values); !s.ok()) return s;
    }
  }
  Hdf5Handle top(H5Gcreate2(file, "top_level_model_weights", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!top.ok()) return absl::InternalError("group 'top_level_model_weights' cannot be created");
  return Hdf5WriteStrings(top.get(), "weight_names", {}, false, false);
}

// Reads one variable from dataset `group`/`dataset`, checking its shape against the graph's (all
// but the number of rows for a variable in `any_rows`).
absl::Status ReadVariable(const GraphVariableSpec& var, hid_t group, const std::string& dataset,
                          const std::string& where, const std::set<std::string>& any_rows, NamedWeights* out) {
  absl::StatusOr<Hdf5DatasetInfo> info = Hdf5DatasetShape(group, dataset);
  if (!info.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", info.status().message()));
  if (!info->is_float) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": variable '", var.name, "' (dataset '", dataset,
                                                   "') does not hold floating-point numbers"));
  }
  std::vector<int64_t> want = var.shape;
  std::string expected = ShapeText(var.shape);
  if (any_rows.count(var.name) > 0 && !want.empty()) {
    if (info->shape.size() == want.size() && info->shape[0] >= 1) want[0] = info->shape[0];
    expected = ShapeText(std::vector<int64_t>(var.shape.begin() + 1, var.shape.end()));
    expected.insert(1, want.size() > 1 ? "any rows, " : "any rows");
  }
  if (info->shape != want) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": variable '", var.name, "' (dataset '", dataset,
                                                   "') has shape ", ShapeText(info->shape),
                                                   " in the file; the model expects ", expected));
  }
  absl::StatusOr<std::vector<float>> values = Hdf5ReadFloats(group, dataset, Elements(want));
  if (!values.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", values.status().message()));
  (*out)[var.name] = WeightValue{want, std::move(*values)};
  return absl::OkStatus();
}

absl::StatusOr<NamedWeights> ReadKeras3(const ModelGraph& graph, hid_t file, const std::string& path,
                                        const std::set<std::string>& any_rows) {
  if (absl::Status s = CheckKeras3Layers(graph); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  const std::vector<std::vector<int>> vars = VariablesByLayer(graph);
  const std::vector<std::string> groups = Keras3LayerGroups(graph);
  NamedWeights out;
  std::set<std::string> expected;
  std::vector<std::string> kept;  // the groups the model has, for messages
  for (const std::string& group : groups) {
    if (group.empty()) continue;
    expected.insert(group);
    kept.push_back(group);
  }
  if (Hdf5IsGroup(file, "layers")) {
    Hdf5Handle layers(H5Gopen2(file, "layers", H5P_DEFAULT), H5Gclose);
    absl::StatusOr<std::vector<std::string>> members = Hdf5LinkNames(layers.get(), path + ": group 'layers'");
    if (!members.ok()) return members.status();
    for (const std::string& member : *members) {
      if (expected.count(member) > 0) continue;
      // A Functional model's InputLayer groups hold nothing; a Sequential one of the same layers has none.
      const std::string vars_path = member + "/vars";
      if (absl::StartsWith(member, "input_layer") && Hdf5IsGroup(layers.get(), vars_path)) {
        Hdf5Handle input_vars(H5Gopen2(layers.get(), vars_path.c_str(), H5P_DEFAULT), H5Gclose);
        absl::StatusOr<std::vector<std::string>> held = Hdf5LinkNames(input_vars.get(), path);
        if (held.ok() && held->empty()) continue;
      }
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": has a layer group 'layers/", Cut(member), "' that model '", graph.name,
          "' does not have (its groups: ", absl::StrJoin(kept, ", "), "); the file is from another model"));
    }
  }
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    if (vars[i].empty()) continue;
    const std::string group_path = absl::StrCat("layers/", groups[i], "/vars");
    const std::string where = absl::StrCat(path, ": layer '", graph.layers[i].name, "' (group '", group_path, "')");
    if (!Hdf5IsGroup(file, group_path)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": missing from the file; the file is from another model"));
    }
    Hdf5Handle group(H5Gopen2(file, group_path.c_str(), H5P_DEFAULT), H5Gclose);
    absl::StatusOr<std::vector<std::string>> held = Hdf5LinkNames(group.get(), where);
    if (!held.ok()) return held.status();
    if (held->size() != vars[i].size()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": holds ", held->size(),
                                                     " variables; the model's layer has ", vars[i].size(), " (",
                                                     VariableNames(graph, vars[i]), ", as vars/0, vars/1, ...)"));
    }
    for (size_t k = 0; k < vars[i].size(); ++k) {
      if (absl::Status s = ReadVariable(graph.variables[vars[i][k]], group.get(), std::to_string(k), where, any_rows, &out);
          !s.ok()) {
        return s;
      }
    }
  }
  return out;
}

absl::StatusOr<NamedWeights> ReadKeras2(const ModelGraph& graph, hid_t base, const std::string& path,
                                        const std::set<std::string>& any_rows) {
  absl::StatusOr<std::vector<std::string>> names = Hdf5ReadStrings(base, "layer_names", path);
  if (!names.ok()) return absl::InvalidArgumentError(names.status().message());
  // The file's layers that hold weights, by name.
  std::map<std::string, std::vector<std::string>> file_layers;
  for (const std::string& name : *names) {
    if (!Hdf5IsGroup(base, name)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": lists layer '", Cut(name), "' but has no group for it"));
    }
    Hdf5Handle group(H5Gopen2(base, name.c_str(), H5P_DEFAULT), H5Gclose);
    absl::StatusOr<std::vector<std::string>> weight_names =
        Hdf5ReadStrings(group.get(), "weight_names", absl::StrCat(path, ": layer '", Cut(name), "'"));
    if (!weight_names.ok()) return absl::InvalidArgumentError(weight_names.status().message());
    if (!weight_names->empty()) file_layers[name] = std::move(*weight_names);
  }
  const std::vector<std::vector<int>> vars = VariablesByLayer(graph);
  NamedWeights out;
  std::set<std::string> used;
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    if (vars[i].empty()) continue;
    const std::string& name = graph.layers[i].name;
    const std::string where = absl::StrCat(path, ": layer '", name, "'");
    auto it = file_layers.find(name);
    if (it == file_layers.end()) {
      std::vector<std::string> have;
      for (const auto& [n, w] : file_layers) have.push_back(n);
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": missing from the file (its layers with weights: ", Cut(absl::StrJoin(have, ", ")),
                       "); the file is from another model"));
    }
    used.insert(name);
    if (it->second.size() != vars[i].size()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the file has ", it->second.size(), " weights (",
                                                     Cut(absl::StrJoin(it->second, ", ")), "); the model's layer has ",
                                                     vars[i].size(), " (", VariableNames(graph, vars[i]), ")"));
    }
    Hdf5Handle group(H5Gopen2(base, name.c_str(), H5P_DEFAULT), H5Gclose);
    for (size_t k = 0; k < vars[i].size(); ++k) {
      if (!Hdf5HasLink(group.get(), it->second[k])) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": weight '", Cut(it->second[k]), "' has no dataset"));
      }
      if (absl::Status s = ReadVariable(graph.variables[vars[i][k]], group.get(), it->second[k], where, any_rows, &out);
          !s.ok()) {
        return s;
      }
    }
  }
  for (const auto& [name, weight_names] : file_layers) {
    if (used.count(name) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": has weights for layer '", Cut(name), "' that model '",
                                                     graph.name, "' does not have; the file is from another model"));
    }
  }
  return out;
}

bool HasKeras2Names(hid_t obj) { return H5Aexists(obj, "layer_names") > 0 || H5Aexists(obj, "layer_names0") > 0; }

}  // namespace

absl::Status WriteKerasWeights(const ModelGraph& graph, const NamedWeights& weights, KerasWeightsFormat format,
                               const std::string& path) {
  if (absl::Status s = CheckWeights(graph, weights); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("writing ", path, ": ", s.message()));
  }
  if (format == KerasWeightsFormat::kKeras3) {
    if (absl::Status s = CheckKeras3Layers(graph); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("writing ", path, ": ", s.message()));
    }
  }
  const std::string temp = absl::StrCat(path, ".tmp-", getpid());
  absl::MutexLock lock(&Hdf5Mutex());
  SilenceHdf5Errors();
  absl::Status status;
  {
    Hdf5Handle file(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) return absl::InternalError(absl::StrCat("cannot create ", temp, " (is the folder writable?)"));
    status = format == KerasWeightsFormat::kKeras3 ? WriteKeras3(graph, weights, file.get())
                                                   : WriteKeras2(graph, weights, file.get());
    if (status.ok() && H5Fclose(file.Release()) < 0) status = absl::InternalError("closing it failed (disk full?)");
  }
  if (status.ok() && std::rename(temp.c_str(), path.c_str()) != 0) {
    status = absl::InternalError(absl::StrCat("cannot rename ", temp, " to ", path));
  }
  if (!status.ok()) {
    std::remove(temp.c_str());
    return absl::InternalError(absl::StrCat("writing ", path, ": ", status.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<NamedWeights> ReadKerasWeights(const ModelGraph& graph, const std::string& path) {
  return ReadKerasWeights(graph, path, {});
}

absl::StatusOr<NamedWeights> ReadKerasWeights(const ModelGraph& graph, const std::string& path,
                                              const std::set<std::string>& any_rows) {
  int64_t size = 0;
  absl::StatusOr<int> fd = OpenRegularFileForReading(path, kKerasWeightsFile, &size);
  if (!fd.ok()) return fd.status();
  close(*fd);
  if (size > kKerasWeightsFile.max_bytes) {
    return absl::OutOfRangeError(absl::StrCat(kKerasWeightsFile.kind, " ", path, ": ", size, " bytes, more than the ",
                                              kKerasWeightsFile.max_bytes, " allowed"));
  }
  absl::MutexLock lock(&Hdf5Mutex());
  SilenceHdf5Errors();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not an HDF5 file; expected Keras weights written by model.save_weights (x.weights.h5 or x.h5)"));
  }
  Hdf5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot be opened as HDF5 (a truncated or damaged file?)"));
  }
  if (HasKeras2Names(file.get())) return ReadKeras2(graph, file.get(), path, any_rows);
  if (Hdf5IsGroup(file.get(), "model_weights")) {  // a whole model saved by tf.keras's model.save("x.h5")
    Hdf5Handle weights(H5Gopen2(file.get(), "model_weights", H5P_DEFAULT), H5Gclose);
    if (HasKeras2Names(weights.get())) return ReadKeras2(graph, weights.get(), path, any_rows);
  }
  if (Hdf5IsGroup(file.get(), "layers") || Hdf5IsGroup(file.get(), "vars")) return ReadKeras3(graph, file.get(), path, any_rows);
  return absl::InvalidArgumentError(absl::StrCat(
      path,
      ": an HDF5 file but not Keras weights (no 'layers' group as Keras 3 writes, no 'layer_names' attribute "
      "as Keras 2 writes)"));
}

}  // namespace pstrain
