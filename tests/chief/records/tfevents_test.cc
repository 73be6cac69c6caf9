// TFRecord framing, CRC32C and the scalars RunEvents takes from a metrics.jsonl record.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chief/records/run_events.h"
#include "chief/records/tfevents_writer.h"
#include "gtest/gtest.h"
#include "proto/tfevents.pb.h"

namespace pstrain {
namespace {

TEST(TfRecordTest, Crc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(TfRecordTest, FramesLengthCrcDataCrc) {
  const std::string r = TfRecord("abc");
  ASSERT_EQ(r.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(r.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  uint32_t length_crc, data_crc;
  std::memcpy(&length_crc, r.data() + 8, 4);
  std::memcpy(&data_crc, r.data() + 15, 4);
  EXPECT_EQ(length_crc, MaskCrc32c(Crc32c(r.substr(0, 8))));
  EXPECT_EQ(r.substr(12, 3), "abc");
  EXPECT_EQ(data_crc, MaskCrc32c(Crc32c("abc")));
}

TEST(RunEventsTest, ScalarsOfTrainAndEvalRecords) {
  const nlohmann::json train = {{"kind", "train"},     {"step", 10},   {"wall_time", 1.5},   {"loss", 0.5},
                                {"accuracy", nullptr}, {"epoch", 0.1}, {"staleness", {0, 3}}};
  Scalars s = RunEvents::ScalarsOf(train);
  std::sort(s.begin(), s.end());
  EXPECT_EQ(s, (Scalars{{"epoch", 0.1}, {"loss", 0.5}, {"staleness/worker_0", 0}, {"staleness/worker_1", 3}}));
  const nlohmann::json eval = {{"kind", "eval"}, {"step", 10}, {"test_loss", 0.4}, {"checkpoint", "x"}};
  EXPECT_EQ(RunEvents::ScalarsOf(eval), (Scalars{{"loss", 0.4}}));
}

TEST(RunEventsTest, WritesFileVersionThenOneEventPerRecordUnderTrainAndEval) {
  const std::string dir = ::testing::TempDir() + "/run_events_test";
  std::filesystem::remove_all(dir);
  RunEvents events(dir, 1.7e9);
  ASSERT_TRUE(events.Record({{"kind", "train"}, {"step", 5}, {"wall_time", 2.0}, {"loss", 0.25}}).ok());
  ASSERT_TRUE(events.Record({{"kind", "eval"}, {"step", 5}, {"test_accuracy", 0.75}}).ok());
  for (const char* run : {"train", "eval"}) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/" + run)) files.push_back(e.path());
    ASSERT_EQ(files.size(), 1u) << run;
    EXPECT_EQ(files[0].filename().string().rfind("events.out.tfevents.", 0), 0u);
    std::ifstream in(files[0], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string data = ss.str();
    std::vector<tfevents::Event> got;
    for (size_t pos = 0; pos < data.size();) {
      uint64_t len;
      std::memcpy(&len, data.data() + pos, 8);
      got.emplace_back();
      ASSERT_TRUE(got.back().ParseFromString(data.substr(pos + 12, len)));
      pos += 16 + len;
    }
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].file_version(), "brain.Event:2");
    EXPECT_EQ(got[1].step(), 5);
    ASSERT_EQ(got[1].summary().value_size(), 1);
    if (std::string(run) == "train") {
      EXPECT_DOUBLE_EQ(got[1].wall_time(), 1.7e9 + 2.0);
      EXPECT_EQ(got[1].summary().value(0).tag(), "loss");
      EXPECT_FLOAT_EQ(got[1].summary().value(0).simple_value(), 0.25f);
    } else {
      EXPECT_EQ(got[1].summary().value(0).tag(), "accuracy");
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(TfEventsWriterTest, AZeroIsWrittenAsAValue) {
  // TensorFlow's simple_value sits in a oneof: a 0 must be present on the wire, not dropped.
  const std::string dir = ::testing::TempDir() + "/tfevents_zero_test";
  std::filesystem::remove_all(dir);
  auto w = TfEventsWriter::Open(dir, 1.7e9);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write(1, 1.7e9, {{"staleness/worker_0", 0.0}}).ok());
  std::ifstream in((*w)->path(), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  uint64_t first;
  std::memcpy(&first, data.data(), 8);
  const size_t second = 16 + first;
  uint64_t len;
  std::memcpy(&len, data.data() + second, 8);
  tfevents::Event e;
  ASSERT_TRUE(e.ParseFromString(data.substr(second + 12, len)));
  ASSERT_EQ(e.summary().value_size(), 1);
  EXPECT_EQ(e.summary().value(0).value_case(), tfevents::Summary::Value::kSimpleValue);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pstrain
