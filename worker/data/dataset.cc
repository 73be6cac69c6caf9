#include "worker/data/dataset.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/config/json_util.h"
#include "common/platform/checked_math.h"
#include "common/platform/file_rules.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"
#include "worker/data/ctr_dataset.h"
#include "worker/data/file_reader.h"

namespace pstrain {
namespace {

constexpr uint32_t kIdxImagesMagic = 0x00000803;
constexpr uint32_t kIdxLabelsMagic = 0x00000801;

uint32_t BigEndian32(const std::string& data, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data() + offset);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Checks an IDX file's magic, its header and that the payload is exactly dims' product bytes.
absl::Status CheckIdx(const std::string& path, const std::string& data, uint32_t magic, int rank,
                      std::vector<int64_t>* dims) {
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (data.size() >= 4 && BigEndian32(data, 0) != magic) {
    return absl::InvalidArgumentError(absl::StrCat("IDX file ", path, " has a bad magic number (expected 0x",
                                                   absl::Hex(magic), "); is it the right file?"));
  }
  if (data.size() < header) {
    return absl::DataLossError(absl::StrCat("IDX file ", path, " is truncated: ", data.size(),
                                            " bytes, shorter than its ", header, "-byte header"));
  }
  dims->clear();
  for (int i = 0; i < rank; ++i) dims->push_back(BigEndian32(data, 4 + 4 * i));
  absl::StatusOr<int64_t> payload_or = CheckedNumElements(*dims, absl::StrCat("IDX file ", path, "'s header"));
  if (!payload_or.ok()) return absl::DataLossError(payload_or.status().message());
  const int64_t payload = *payload_or;
  const int64_t have = static_cast<int64_t>(data.size() - header);
  if (have < payload) {
    return absl::DataLossError(absl::StrCat("IDX file ", path, " is truncated: its header promises ", payload,
                                            " bytes of data, the file holds ", have));
  }
  if (have > payload) {
    return absl::InvalidArgumentError(absl::StrCat("IDX file ", path, " has ", have - payload,
                                                   " bytes after the data its header describes"));
  }
  return absl::OkStatus();
}

std::string PickFile(const std::string& dir, const std::string& name) {
  const std::string gz = absl::StrCat(dir, "/", name, ".gz");
  // Whether a name exists, not opened (a FIFO would block): the reader applies file_rules.h.
  struct stat st;
  if (::stat(gz.c_str(), &st) == 0) return gz;
  const std::string plain = absl::StrCat(dir, "/", name);
  if (::stat(plain.c_str(), &st) == 0) return plain;
  return gz;  // missing: the error names the usual (gzipped) file
}

absl::Status CheckFits(const Dataset& d, const JobSpec& job, const std::string& what) {
  if (NumElements(d.example_shape) != NumElements(job.model.input_shape)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has examples of shape ", ShapeString(d.example_shape),
                                                   " but the model's input_shape is ",
                                                   ShapeString(job.model.input_shape)));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t Dataset::example_floats() const { return NumElements(example_shape); }

absl::StatusOr<Dataset> LoadIdxDataset(Env* env, const std::string& images_path, const std::string& labels_path,
                                       int64_t max_file_bytes) {
  ASSIGN_OR_RETURN(std::string images, ReadMaybeGzipFile(env, images_path, max_file_bytes));
  ASSIGN_OR_RETURN(std::string labels, ReadMaybeGzipFile(env, labels_path, max_file_bytes));
  std::vector<int64_t> image_dims, label_dims;
  RETURN_IF_ERROR(CheckIdx(images_path, images, kIdxImagesMagic, 3, &image_dims));
  RETURN_IF_ERROR(CheckIdx(labels_path, labels, kIdxLabelsMagic, 1, &label_dims));
  if (image_dims[0] != label_dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat("IDX files disagree: ", images_path, " has ", image_dims[0],
                                                   " images but ", labels_path, " has ", label_dims[0], " labels"));
  }
  Dataset d;
  d.size = image_dims[0];
  d.example_shape = {image_dims[1], image_dims[2], 1};
  d.features.resize(images.size() - 16);
  const auto* pixels = reinterpret_cast<const unsigned char*>(images.data() + 16);
  for (size_t i = 0; i < d.features.size(); ++i) d.features[i] = pixels[i] * (1.0f / 255.0f);
  d.labels.resize(d.size);
  for (int64_t i = 0; i < d.size; ++i) d.labels[i] = static_cast<unsigned char>(labels[8 + i]);
  return d;
}

absl::StatusOr<Dataset> LoadCsvDataset(Env* env, const std::string& path, int64_t label_column, bool header,
                                       bool classification, int64_t max_file_bytes) {
  ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(env, path, max_file_bytes));
  static constexpr FileRules kCsvFile{"CSV file", INT64_MAX, true, kMaxDataLineBytes};
  Dataset d;
  int64_t columns = -1, line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    RETURN_IF_ERROR(CheckLineLength(path, kCsvFile, line_no, static_cast<int64_t>(line.size())));
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty() || (header && line_no == 1)) continue;
    std::vector<absl::string_view> cells = absl::StrSplit(line, ',');
    if (columns < 0) {
      columns = static_cast<int64_t>(cells.size());
      if (columns < 2) return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": needs at least 2 columns"));
      if (label_column >= columns || label_column < -1) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": label_column ", label_column, " is outside its ", columns, " columns"));
      }
      if (label_column == -1) label_column = columns - 1;
    }
    if (static_cast<int64_t>(cells.size()) != columns) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": has ", cells.size(), " columns, earlier lines have ", columns));
    }
    for (int64_t c = 0; c < columns; ++c) {
      float v = 0;
      if (!absl::SimpleAtof(absl::StripAsciiWhitespace(cells[c]), &v) || !std::isfinite(v)) {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": column ", c,
                                                       " (", cells[c].size(), " bytes) is not a finite number"));
      }
      if (c != label_column) {
        d.features.push_back(v);
      } else if (classification) {
        if (v < 0 || v > 1e9f || v != static_cast<float>(static_cast<int32_t>(v))) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ":", line_no, ": the label (column ", c, ") is not a class id (0, 1, 2, ...)"));
        }
        d.labels.push_back(static_cast<int32_t>(v));
      } else {
        d.targets.push_back(v);
      }
    }
    ++d.size;
  }
  if (d.size == 0) return absl::InvalidArgumentError(absl::StrCat("CSV file ", path, " has no examples"));
  d.example_shape = {columns - 1};
  d.target_width = classification ? 0 : 1;
  return d;
}

Dataset SyntheticLinearDataset(int64_t examples, int64_t features, uint64_t seed, Split split) {
  std::mt19937_64 model_rng(seed);
  std::uniform_real_distribution<float> coef(-2.f, 2.f);
  std::vector<float> a(features);
  for (float& v : a) v = coef(model_rng);
  const float b = coef(model_rng);
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + (split == Split::kTrain ? 1 : 2));
  std::uniform_real_distribution<float> x(-1.f, 1.f);
  std::normal_distribution<float> noise(0.f, 0.01f);
  Dataset d;
  d.size = split == Split::kTrain ? examples : std::max<int64_t>(1, examples / 4);
  d.example_shape = {features};
  d.target_width = 1;
  d.features.resize(d.size * features);
  d.targets.resize(d.size);
  for (int64_t i = 0; i < d.size; ++i) {
    float y = b;
    for (int64_t j = 0; j < features; ++j) {
      d.features[i * features + j] = x(rng);
      y += a[j] * d.features[i * features + j];
    }
    d.targets[i] = y + noise(rng);
  }
  return d;
}

absl::StatusOr<Dataset> LoadDataset(Env* env, const JobSpec& job, Split split, const std::string& data_dir,
                                    int64_t max_file_bytes) {
  const DataSpec& spec = job.data;
  if (IsCtrDataset(spec.dataset)) return LoadCtrDataset(env, job, split, data_dir);
  const bool classification = job.model.loss == "sparse_categorical_crossentropy";
  Dataset d;
  std::string what;
  if (spec.dataset == "fashion_mnist") {
    const std::string dir = data_dir.empty() ? spec.dir : data_dir;
    const std::string prefix = split == Split::kTrain ? "train" : "t10k";
    const std::string images = PickFile(dir, prefix + "-images-idx3-ubyte");
    const std::string labels = PickFile(dir, prefix + "-labels-idx1-ubyte");
    ASSIGN_OR_RETURN(d, LoadIdxDataset(env, images, labels, max_file_bytes));
    what = images;
  } else if (spec.dataset == "csv") {
    const std::string& file = split == Split::kTrain ? spec.train_file : spec.test_file;
    if (file.empty()) {
      return absl::InvalidArgumentError("job spec: data.test_file is required to evaluate a csv job");
    }
    ASSIGN_OR_RETURN(d, LoadCsvDataset(env, file, spec.label_column, spec.header, classification, max_file_bytes));
    what = file;
  } else {
    if (job.model.input_shape.size() != 1) {
      return absl::InvalidArgumentError("job spec: synthetic_linear data needs a flat model.input_shape, e.g. [2]");
    }
    d = SyntheticLinearDataset(spec.num_examples, job.model.input_shape[0], job.seed, split);
    what = "synthetic_linear data";
  }
  RETURN_IF_ERROR(CheckFits(d, job, what));
  d.example_shape = job.model.input_shape;
  return d;
}

}  // namespace pstrain
