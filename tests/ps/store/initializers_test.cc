#include "ps/store/initializers.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "common/checkpoint/checksum.h"
#include "common/wire/protocol_version.h"
#include "gtest/gtest.h"
#include "ps/client/local_ps_client.h"
#include "ps/store/ps_server.h"
#include "tests/ps/ps_test_util.h"

namespace pstrain {
namespace {

using testing_util::Spec;
using testing_util::ToFloats;

// TensorFlow's "div" split: the first rows % n shards get one extra row.
std::vector<std::pair<int64_t, int64_t>> Split(int64_t rows, int n) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t offset = 0;
  for (int i = 0; i < n; ++i) {
    int64_t r = rows / n + (i < rows % n ? 1 : 0);
    out.push_back({offset, r});
    offset += r;
  }
  return out;
}

// Creates `variable` split `num_shards` ways over `num_ps` servers (round-robin), pulls every shard
// through LocalPsClient and returns the assembled full tensor.
std::vector<float> Assemble(const std::string& init, std::vector<int64_t> shape, int num_shards, int num_ps) {
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<CreateShardsRequest> requests(num_ps);
  for (int p = 0; p < num_ps; ++p) {
    servers.push_back(std::make_unique<PsServer>(PsServer::Options{"ps:" + std::to_string(p)}));
    requests[p].set_protocol_version(kProtocolVersion);
    requests[p].set_initialize(true);
    *requests[p].mutable_optimizer() = testing_util::Sgd(0.1);
  }
  auto parts = Split(shape[0], num_shards);
  for (int i = 0; i < num_shards; ++i) {
    *requests[i % num_ps].add_shards() =
        Spec("w", shape, parts[i].first, parts[i].second, init, "w/part_" + std::to_string(i));
  }
  std::vector<float> full;
  for (int i = 0; i < num_shards; ++i) {
    LocalPsClient client(servers[i % num_ps].get());
    if (i < num_ps) {
      CreateShardsResponse r;
      EXPECT_TRUE(client.CreateShards(requests[i], &r).ok());
    }
    PullResponse pulled;
    EXPECT_TRUE(client.Pull(testing_util::OnePull("w/part_" + std::to_string(i)), &pulled).ok());
    std::vector<float> v = ToFloats(pulled.values(0).value());
    full.insert(full.end(), v.begin(), v.end());
  }
  return full;
}

class PartitionInvariance : public ::testing::TestWithParam<std::string> {};

TEST_P(PartitionInvariance, OneTwoFourShardsOnOneOrThreePsAssembleTheSameTensor) {
  const std::vector<int64_t> shape = {11, 3, 2};
  const std::vector<float> whole = Assemble(GetParam(), shape, 1, 1);
  ASSERT_EQ(whole.size(), 66u);
  for (int shards : {2, 4}) {
    for (int ps : {1, 3}) {
      EXPECT_EQ(Assemble(GetParam(), shape, shards, ps), whole) << shards << " shards on " << ps << " ps";
    }
  }
  // And InitializeRows of the whole variable (what a single process does) agrees.
  Tensor t;
  ASSERT_TRUE(InitializeRows(Spec("w", shape, 0, 11, GetParam()), &t).ok());
  EXPECT_EQ(std::vector<float>(t.flat().begin(), t.flat().end()), whole);
}

INSTANTIATE_TEST_SUITE_P(AllInitializers, PartitionInvariance,
                         ::testing::Values("zeros", "ones", "random_normal", "random_uniform", "truncated_normal",
                                           "glorot_uniform", "he_normal", "glorot_normal", "he_uniform",
                                           "lecun_normal", "lecun_uniform"));

// A "mod" shard i of n (row_offset i, row_stride n) holds global rows i, i+n, ...: its values are
// those rows of the whole variable, for every initializer and shard count.
TEST_P(PartitionInvariance, ModShardsHoldTheirGlobalRowsValues) {
  const std::vector<int64_t> shape = {11, 3};
  Tensor whole;
  ASSERT_TRUE(InitializeRows(Spec("w", shape, 0, 11, GetParam()), &whole).ok());
  for (int n : {2, 3, 4}) {
    auto sizes = Split(11, n);
    for (int i = 0; i < n; ++i) {
      ShardSpecProto spec = Spec("w", shape, i, sizes[i].second, GetParam(), "w/part_" + std::to_string(i));
      spec.set_row_stride(n);
      Tensor t;
      ASSERT_TRUE(InitializeRows(spec, &t).ok());
      ASSERT_EQ(t.dim(0), sizes[i].second);
      for (int64_t j = 0; j < t.dim(0); ++j) {
        for (int e = 0; e < 3; ++e) {
          EXPECT_EQ(t.data<float>()[j * 3 + e], whole.data<float>()[(i + j * n) * 3 + e]) << n << " shards, " << i;
        }
      }
    }
  }
}

TEST(Initializers, StridedRowsMustFitTheVariable) {
  ShardSpecProto spec = Spec("w", {10, 2}, 1, 5, "ones");
  spec.set_row_stride(2);  // rows 1, 3, 5, 7, 9
  Tensor t;
  EXPECT_TRUE(InitializeRows(spec, &t).ok());
  spec.set_rows(6);  // row 11 is outside
  absl::Status s = InitializeRows(spec, &t);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("in steps of 2"), std::string::npos) << s;
  spec.set_rows(5);
  spec.set_row_stride(-1);
  EXPECT_EQ(InitializeRows(spec, &t).code(), absl::StatusCode::kInvalidArgument);
}

TEST(Initializers, FillsAnAllocatedTensorInPlace) {
  const ShardSpecProto spec = Spec("w", {6, 4}, 2, 3, "random_uniform");
  Tensor fresh, reused(DType::kFloat32, {3, 4});
  const void* buffer = reused.raw();
  ASSERT_TRUE(InitializeRows(spec, &fresh).ok());
  ASSERT_TRUE(InitializeRows(spec, &reused).ok());
  EXPECT_EQ(reused.raw(), buffer);
  EXPECT_EQ(std::memcmp(reused.raw(), fresh.raw(), fresh.num_bytes()), 0);
}

TEST(Initializers, GlorotUniformUsesTheFullShapesFans) {
  // Dense [in=300, out=100]: limit sqrt(6/400); a shard of 10 rows must use the same limit.
  Tensor t;
  ASSERT_TRUE(InitializeRows(Spec("k", {300, 100}, 50, 10, "glorot_uniform"), &t).ok());
  const double limit = std::sqrt(6.0 / 400.0);
  double max_abs = 0;
  for (float f : t.flat()) max_abs = std::max(max_abs, std::fabs(static_cast<double>(f)));
  EXPECT_LE(max_abs, limit);
  EXPECT_GT(max_abs, 0.9 * limit);  // 1000 draws reach close to the limit
}

TEST(Initializers, ConvFansFollowKeras) {
  double fan_in, fan_out;
  ComputeFans({3, 3, 8, 16}, &fan_in, &fan_out);
  EXPECT_EQ(fan_in, 72);
  EXPECT_EQ(fan_out, 144);
  ComputeFans({5}, &fan_in, &fan_out);
  EXPECT_EQ(fan_in, 5);
  EXPECT_EQ(fan_out, 5);
}

TEST(Initializers, HeNormalIsTruncatedWithKerasStddev) {
  Tensor t;
  ASSERT_TRUE(InitializeRows(Spec("k", {200, 400}, 0, 200, "he_normal"), &t).ok());
  const double stddev = std::sqrt(2.0 / 200.0) / 0.87962566103423978;
  double sum = 0, sq = 0;
  for (float f : t.flat()) {
    EXPECT_LE(std::fabs(f), 2 * stddev + 1e-6);
    sum += f;
    sq += static_cast<double>(f) * f;
  }
  const double n = static_cast<double>(t.num_elements());
  // A normal truncated at 2 stddev has variance 0.774 stddev^2: the Keras constant makes it 2/fan_in.
  EXPECT_NEAR(sq / n - (sum / n) * (sum / n), 2.0 / 200.0, 0.05 * 2.0 / 200.0);
}

// Keras's VarianceScaling family: each fills a [200, 400] kernel with the variance scale / n
// (fan_in 200, fan_out 400), the normals truncated at 2 stddev, the uniforms within sqrt(3 * variance).
TEST(Initializers, VarianceScalingFamilyHasKerasVariances) {
  struct Case {
    const char* type;
    double variance;
    bool uniform;
  };
  for (const Case& c : {Case{"glorot_normal", 2.0 / 600.0, false}, Case{"lecun_normal", 1.0 / 200.0, false},
                        Case{"he_uniform", 2.0 / 200.0, true}, Case{"lecun_uniform", 1.0 / 200.0, true},
                        Case{"glorot_uniform", 2.0 / 600.0, true}}) {
    Tensor t;
    ASSERT_TRUE(InitializeRows(Spec("k", {200, 400}, 0, 200, c.type), &t).ok()) << c.type;
    const double bound = c.uniform ? std::sqrt(3.0 * c.variance) : 2.0 * std::sqrt(c.variance) / 0.87962566103423978;
    double sum = 0, sq = 0;
    for (float f : t.flat()) {
      ASSERT_LE(std::fabs(f), bound + 1e-6) << c.type;
      sum += f;
      sq += static_cast<double>(f) * f;
    }
    const double n = static_cast<double>(t.num_elements());
    EXPECT_NEAR(sq / n - (sum / n) * (sum / n), c.variance, 0.05 * c.variance) << c.type;
  }
}

TEST(Initializers, SeedAndNameChangeTheValues) {
  Tensor a, b, c;
  ShardSpecProto spec = Spec("w", {4, 4}, 0, 4, "random_normal");
  ASSERT_TRUE(InitializeRows(spec, &a).ok());
  spec.set_seed(43);
  ASSERT_TRUE(InitializeRows(spec, &b).ok());
  spec.set_seed(42);
  spec.set_variable_name("v");
  ASSERT_TRUE(InitializeRows(spec, &c).ok());
  EXPECT_NE(std::vector<float>(a.flat().begin(), a.flat().end()), std::vector<float>(b.flat().begin(), b.flat().end()));
  EXPECT_NE(std::vector<float>(a.flat().begin(), a.flat().end()), std::vector<float>(c.flat().begin(), c.flat().end()));
}

TEST(Initializers, ConstantAndScalar) {
  ShardSpecProto spec = Spec("c", {}, 0, 1, "constant");
  spec.mutable_initializer()->set_value(2.5);
  Tensor t;
  ASSERT_TRUE(InitializeRows(spec, &t).ok());
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.flat()[0], 2.5f);
}

TEST(Initializers, BadSpecsNameTheShard) {
  Tensor t;
  absl::Status s = InitializeRows(Spec("w", {4, 2}, 3, 2), &t);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("shard w"), std::string::npos) << s;
  s = InitializeRows(Spec("w", {4, 2}, 0, 4, "xavier"), &t);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("xavier"), std::string::npos) << s;
}

TEST(Checksum, MatchesXxh64Reference) {
  EXPECT_EQ(Checksum64(""), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(Checksum64("a"), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(Checksum64("abc"), 0x44BC2CF5AD770999ULL);
}

TEST(Checksum, StreamedInAnyPiecesEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>((i * 131) % 251));
  for (size_t size : {size_t{0}, size_t{5}, size_t{31}, size_t{32}, size_t{33}, size_t{100}, size_t{1000}}) {
    const std::string text = data.substr(0, size);
    for (size_t piece : {size_t{1}, size_t{7}, size_t{32}, size_t{64}, size_t{999}}) {
      Checksum64Stream stream;
      for (size_t off = 0; off < text.size(); off += piece) stream.Update(absl::string_view(text).substr(off, piece));
      EXPECT_EQ(stream.Digest(), Checksum64(text)) << size << " in pieces of " << piece;
    }
  }
  EXPECT_EQ(Checksum64Stream().Digest(), 0xEF46DB3751D8E999ULL);
}

}  // namespace
}  // namespace pstrain
