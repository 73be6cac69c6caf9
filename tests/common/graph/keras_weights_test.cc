// Keras weight files: both layouts round-trip every variable of real Keras fixture graphs, the
// Keras 3 groups are where Keras puts them, and bad files (not HDF5, truncated, a wrong shape, a
// missing or extra layer) are refused naming the file and what is wrong, leaving no partial file.
// (Loading pstrain's files in real Keras: tests/integration/keras_weights_test.sh.)
#include "common/graph/keras_weights.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/graph/hdf5_io.h"
#include "common/graph/keras_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/graph/keras_fixture.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

ModelGraph Load(const std::string& name) { return LoadFixtureGraph(name); }

// Distinct values for every element of every variable.
NamedWeights MakeWeights(const ModelGraph& graph) {
  NamedWeights out;
  float next = 0.25f;
  for (const GraphVariableSpec& var : graph.variables) {
    WeightValue& w = out[var.name];
    w.shape = var.shape;
    int64_t n = 1;
    for (int64_t d : var.shape) n *= d;
    for (int64_t i = 0; i < n; ++i) w.values.push_back(next += 0.125f);
  }
  return out;
}

class KerasWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/pstrain-keras-weights-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // Opens `path` read-write with HDF5 and runs `edit` on it (for damaging files).
  void EditFile(const std::string& path, const std::function<void(hid_t)>& edit) {
    absl::MutexLock lock(&Hdf5Mutex());
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    edit(file);
    H5Fclose(file);
  }

  std::string dir_;
};

TEST_F(KerasWeightsTest, RoundTripsBothLayouts) {
  for (const std::string fixture : {"keras3_many_layers.json", "keras3_cnn.json", "keras2_sequential_mlp.json",
                                    "keras3_sequential_mlp.json", "keras2_many_layers.json", "keras3_deepfm.json",
                                    "keras2_wide_deep.json", "keras3_two_tower.json"}) {
    const ModelGraph graph = Load(fixture);
    ASSERT_FALSE(graph.variables.empty()) << fixture;
    const NamedWeights weights = MakeWeights(graph);
    for (KerasWeightsFormat format : {KerasWeightsFormat::kKeras3, KerasWeightsFormat::kKeras2}) {
      const std::string path = Path(format == KerasWeightsFormat::kKeras3 ? "m.weights.h5" : "m.h5");
      ASSERT_TRUE(WriteKerasWeights(graph, weights, format, path).ok()) << fixture;
      absl::StatusOr<NamedWeights> read = ReadKerasWeights(graph, path);
      ASSERT_TRUE(read.ok()) << fixture << ": " << read.status();
      ASSERT_EQ(read->size(), weights.size()) << fixture;
      for (const auto& [name, value] : weights) {
        ASSERT_EQ(read->count(name), 1u) << name;
        EXPECT_EQ(read->at(name).shape, value.shape) << name;
        EXPECT_EQ(read->at(name).values, value.values) << fixture << " " << name;
      }
    }
  }
}

// Files Keras itself wrote (make_keras_fixtures.py) hold the values of the fixture's predict.json,
// read into the variables of the same names.
TEST_F(KerasWeightsTest, ReadsFilesKerasWrote) {
  for (const std::string file :
       {"keras3_two_inputs.weights.h5", "keras3_sequential_mlp.weights.h5", "keras3_many_layers.weights.h5",
        "keras3_cnn.weights.h5", "keras2_two_inputs.h5", "keras2_sequential_mlp.h5", "keras2_many_layers.h5",
        "keras2_cnn.h5", "keras2_recommenders.h5", "keras3_deepfm.weights.h5", "keras3_wide_deep.weights.h5",
        "keras3_two_tower.weights.h5", "keras2_deepfm.h5", "keras2_dcn_v2.h5", "keras2_wide_deep.h5",
        "keras2_dlrm.h5", "keras2_two_tower.h5"}) {
    const std::string base = file.substr(0, file.find('.'));
    const ModelGraph graph = Load(base + ".json");
    absl::StatusOr<NamedWeights> read = ReadKerasWeights(graph, std::string(PSTRAIN_GRAPH_TESTDATA) + "/" + file);
    ASSERT_TRUE(read.ok()) << read.status();
    const nlohmann::json want = nlohmann::json::parse(ReadFixture(base + ".predict.json"))["weights"];
    ASSERT_EQ(read->size(), want.size()) << file;
    for (const auto& [name, value] : want.items()) {
      ASSERT_EQ(read->count(name), 1u) << file << " " << name;
      EXPECT_EQ(read->at(name).shape, value["shape"].get<std::vector<int64_t>>()) << file << " " << name;
      std::vector<float> values;
      for (double v : value["values"]) values.push_back(static_cast<float>(v));
      EXPECT_EQ(read->at(name).values, values) << file << " " << name;
    }
  }
}

TEST_F(KerasWeightsTest, CrossLayersRoundTripInKeras2AndAreRefusedInKeras3) {
  const ModelGraph graph = Load("keras2_recommenders.json");
  const NamedWeights weights = MakeWeights(graph);
  ASSERT_TRUE(WriteKerasWeights(graph, weights, KerasWeightsFormat::kKeras2, Path("r.h5")).ok());
  absl::StatusOr<NamedWeights> read = ReadKerasWeights(graph, Path("r.h5"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->at("cross_low/dense_1/kernel").values, weights.at("cross_low/dense_1/kernel").values);
  EXPECT_EQ(read->size(), weights.size());
  // The nested Dense's weight sits at the path its Keras 2 name gives.
  EditFile(Path("r.h5"), [](hid_t file) { EXPECT_TRUE(Hdf5HasLink(file, "cross_low/cross_low/dense_1/kernel:0")); });
  absl::Status s = WriteKerasWeights(graph, weights, KerasWeightsFormat::kKeras3, Path("r.weights.h5"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Cross"));
  EXPECT_NE(access(Path("r.weights.h5").c_str(), F_OK), 0);
}

// Keras 3 finds a layer by its class in snake_case, numbered in model order; the values are in
// vars/0, vars/1 ... in Keras's order (BatchNormalization: gamma, beta, moving_mean, moving_variance).
TEST_F(KerasWeightsTest, Keras3GroupsAreWhereKerasLooks) {
  const ModelGraph graph = Load("keras3_many_layers.json");
  const NamedWeights weights = MakeWeights(graph);
  ASSERT_TRUE(WriteKerasWeights(graph, weights, KerasWeightsFormat::kKeras3, Path("m.weights.h5")).ok());
  EditFile(Path("m.weights.h5"), [&](hid_t file) {
    for (const char* group : {"layers/input_layer/vars", "layers/input_layer_1/vars", "layers/embedding/vars",
                              "layers/layer_normalization/vars", "layers/dense/vars", "layers/dense_1/vars",
                              "layers/dense_2/vars", "vars"}) {
      EXPECT_TRUE(Hdf5IsGroup(file, group)) << group;
    }
    absl::StatusOr<std::vector<float>> mean = Hdf5ReadFloats(file, "layers/batch_normalization/vars/2", 8);
    ASSERT_TRUE(mean.ok()) << mean.status();
    EXPECT_EQ(*mean, weights.at("batch_norm/moving_mean").values);
    Hdf5Handle vars(H5Gopen2(file, "layers/batch_normalization/vars", H5P_DEFAULT), H5Gclose);
    absl::StatusOr<std::vector<std::string>> name = Hdf5ReadStrings(vars.get(), "name", "vars");
    ASSERT_TRUE(name.ok());
    EXPECT_EQ(*name, std::vector<std::string>{"batch_norm"});
  });
}

// Keras's model.layers of a Sequential model leaves its InputLayer out: no group for it in either layout.
TEST_F(KerasWeightsTest, SequentialModelsHaveNoInputLayerGroup) {
  const ModelGraph graph = Load("keras3_sequential_mlp.json");
  ASSERT_TRUE(graph.sequential);
  const NamedWeights weights = MakeWeights(graph);
  ASSERT_TRUE(WriteKerasWeights(graph, weights, KerasWeightsFormat::kKeras3, Path("s.weights.h5")).ok());
  ASSERT_TRUE(WriteKerasWeights(graph, weights, KerasWeightsFormat::kKeras2, Path("s.h5")).ok());
  EditFile(Path("s.weights.h5"), [](hid_t file) {
    Hdf5Handle layers(H5Gopen2(file, "layers", H5P_DEFAULT), H5Gclose);
    absl::StatusOr<std::vector<std::string>> groups = Hdf5LinkNames(layers.get(), "layers");
    ASSERT_TRUE(groups.ok());
    EXPECT_EQ(*groups, (std::vector<std::string>{"dense", "dense_1", "dense_2", "dropout"}));
  });
  EditFile(Path("s.h5"), [&](hid_t file) {
    absl::StatusOr<std::vector<std::string>> names = Hdf5ReadStrings(file, "layer_names", "root");
    ASSERT_TRUE(names.ok());
    ASSERT_EQ(names->size(), graph.layers.size() - 1);
    EXPECT_EQ(names->front(), graph.layers[1].name);
  });
}

TEST_F(KerasWeightsTest, RefusesWeightsThatDoNotFitTheGraph) {
  const ModelGraph graph = Load("keras3_sequential_mlp.json");
  NamedWeights weights = MakeWeights(graph);
  const std::string first = graph.variables[0].name;
  NamedWeights missing = weights;
  missing.erase(first);
  absl::Status s = WriteKerasWeights(graph, missing, KerasWeightsFormat::kKeras3, Path("m.weights.h5"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(first));
  NamedWeights wrong = weights;
  wrong[first].shape.push_back(1);
  s = WriteKerasWeights(graph, wrong, KerasWeightsFormat::kKeras2, Path("m.h5"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(first));
  // A failed write leaves nothing behind, not even its temporary file.
  EXPECT_NE(access(Path("m.weights.h5").c_str(), F_OK), 0);
  EXPECT_NE(access(Path("m.h5").c_str(), F_OK), 0);
  s = WriteKerasWeights(graph, weights, KerasWeightsFormat::kKeras3, Path("no/such/dir/m.weights.h5"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
}

TEST_F(KerasWeightsTest, RefusesFilesThatAreNotKerasWeights) {
  const ModelGraph graph = Load("keras3_sequential_mlp.json");
  std::ofstream(Path("text.h5")) << "not hdf5\n";
  absl::StatusOr<NamedWeights> r = ReadKerasWeights(graph, Path("text.h5"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("not an HDF5 file"));
  EXPECT_THAT(r.status().message(), HasSubstr(Path("text.h5")));

  EXPECT_EQ(ReadKerasWeights(graph, Path("missing.h5")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadKerasWeights(graph, dir_).status().code(), absl::StatusCode::kInvalidArgument);

  // An HDF5 file without Keras's layout.
  {
    absl::MutexLock lock(&Hdf5Mutex());
    hid_t file = H5Fcreate(Path("empty.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    H5Fclose(file);
  }
  r = ReadKerasWeights(graph, Path("empty.h5"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("not Keras weights"));
}

TEST_F(KerasWeightsTest, RefusesTruncatedFiles) {
  const ModelGraph graph = Load("keras3_many_layers.json");
  for (KerasWeightsFormat format : {KerasWeightsFormat::kKeras3, KerasWeightsFormat::kKeras2}) {
    const std::string path = Path("t.h5");
    ASSERT_TRUE(WriteKerasWeights(graph, MakeWeights(graph), format, path).ok());
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    for (off_t keep : {off_t{100}, st.st_size / 2, st.st_size - 16}) {
      ASSERT_EQ(truncate(path.c_str(), keep), 0);
      absl::StatusOr<NamedWeights> r = ReadKerasWeights(graph, path);
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << keep << ": " << r.status();
      EXPECT_THAT(r.status().message(), HasSubstr(path));
    }
  }
}

TEST_F(KerasWeightsTest, Keras3FileOfAnotherModelIsRefusedNamingTheLayer) {
  const ModelGraph graph = Load("keras3_many_layers.json");
  const NamedWeights weights = MakeWeights(graph);
  const std::string path = Path("m.weights.h5");
  auto rewrite = [&] { ASSERT_TRUE(WriteKerasWeights(graph, weights, KerasWeightsFormat::kKeras3, path).ok()); };

  rewrite();  // a wrong shape
  EditFile(path, [](hid_t file) {
    H5Ldelete(file, "layers/dense_1/vars/0", H5P_DEFAULT);
    EXPECT_TRUE(Hdf5WriteFloats(file, "layers/dense_1/vars/0", {4, 2}, std::vector<float>(8, 1.0f)).ok());
  });
  absl::StatusOr<NamedWeights> r = ReadKerasWeights(graph, path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("layer 'd3'"));
  EXPECT_THAT(r.status().message(), HasSubstr("variable 'd3/kernel'"));
  EXPECT_THAT(r.status().message(), HasSubstr("[4, 2] in the file; the model expects [4, 3]"));

  rewrite();  // a missing layer
  EditFile(path, [](hid_t file) { H5Ldelete(file, "layers/embedding", H5P_DEFAULT); });
  r = ReadKerasWeights(graph, path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("layer 'embedding'"));
  EXPECT_THAT(r.status().message(), HasSubstr("missing from the file"));

  rewrite();  // an extra layer
  EditFile(path, [](hid_t file) {
    EXPECT_TRUE(Hdf5WriteFloats(file, "layers/dense_9/vars/0", {2}, {1.0f, 2.0f}).ok());
  });
  r = ReadKerasWeights(graph, path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("layers/dense_9"));

  rewrite();  // one weight too few
  EditFile(path, [](hid_t file) { H5Ldelete(file, "layers/batch_normalization/vars/3", H5P_DEFAULT); });
  r = ReadKerasWeights(graph, path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("holds 3 variables; the model's layer has 4"));
}

TEST_F(KerasWeightsTest, Keras2FileOfAnotherModelIsRefusedNamingTheLayer) {
  const ModelGraph graph = Load("keras2_many_layers.json");
  const NamedWeights weights = MakeWeights(graph);
  const std::string path = Path("m.h5");
  auto rewrite = [&] { ASSERT_TRUE(WriteKerasWeights(graph, weights, KerasWeightsFormat::kKeras2, path).ok()); };

  rewrite();  // a wrong shape
  EditFile(path, [](hid_t file) {
    H5Ldelete(file, "proj/proj/kernel:0", H5P_DEFAULT);
    EXPECT_TRUE(Hdf5WriteFloats(file, "proj/proj/kernel:0", {8, 5}, std::vector<float>(40, 1.0f)).ok());
  });
  absl::StatusOr<NamedWeights> r = ReadKerasWeights(graph, path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("variable 'proj/kernel'"));
  EXPECT_THAT(r.status().message(), HasSubstr("[8, 5] in the file; the model expects [8, 4]"));

  rewrite();  // a missing layer: the file lists other layers
  EditFile(path, [](hid_t file) {
    H5Adelete(file, "layer_names");
    EXPECT_TRUE(
        Hdf5WriteStrings(file, "layer_names", {"embedding", "layer_norm", "batch_norm", "d3", "logits"}, false, false)
            .ok());
  });
  r = ReadKerasWeights(graph, path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("layer 'proj': missing from the file"));

  rewrite();  // an extra layer with weights
  EditFile(path, [](hid_t file) {
    H5Adelete(file, "layer_names");
    EXPECT_TRUE(Hdf5WriteStrings(file, "layer_names",
                                 {"embedding", "layer_norm", "batch_norm", "proj", "d3", "logits", "extra"}, false,
                                 false)
                    .ok());
    hid_t g = H5Gcreate2(file, "extra", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_TRUE(Hdf5WriteStrings(g, "weight_names", {"extra/kernel:0"}, false, false).ok());
    EXPECT_TRUE(Hdf5WriteFloats(g, "extra/kernel:0", {1}, {1.0f}).ok());
    H5Gclose(g);
  });
  r = ReadKerasWeights(graph, path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("layer 'extra'"));
}

}  // namespace
}  // namespace pstrain
