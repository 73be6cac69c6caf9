// The one JSON entry (class: nesting, and messages that quote a bounded excerpt): documents nest at
// most kMaxJsonDepth levels, checked before the recursive parser runs; integers that do not fit
// int64 are reported as themselves; excerpts stay short whatever the value's size.
#include <string>

#include "common/config/json_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

std::string Nested(int depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

TEST(JsonLimitsTest, DeepNestingIsRefusedBeforeParsing) {
  for (int depth : {kMaxJsonDepth + 1, 1000, 100000, 1000000}) {
    absl::StatusOr<nlohmann::json> doc = ParseJson(Nested(depth), "TF_CONFIG");
    ASSERT_FALSE(doc.ok()) << depth;
    EXPECT_THAT(std::string(doc.status().message()), HasSubstr("TF_CONFIG nests arrays and objects deeper than 64"));
  }
  // Objects count the same as arrays, and mixed nesting too.
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  EXPECT_FALSE(ParseJson(objects, "job").ok());
  EXPECT_TRUE(ParseJson(Nested(kMaxJsonDepth), "x").ok());
  // Brackets inside strings are text, escaped quotes included.
  EXPECT_TRUE(ParseJson("{\"s\": \"" + std::string(5000, '[') + "\\\"" + std::string(5000, '{') + "\"}", "x").ok());
}

TEST(JsonLimitsTest, IntegersOutsideInt64AreReportedAsThemselves) {
  absl::StatusOr<int64_t> big = JsonToInt64(nlohmann::json::parse("18446744073709551615"), "task.index");
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(std::string(big.status().message()), HasSubstr("task.index = 18446744073709551615 is out of range"));
  EXPECT_FALSE(JsonToInt64(nlohmann::json::parse("1e300"), "x").ok());
  EXPECT_FALSE(JsonToInt64(nlohmann::json::parse("1.5"), "x").ok());
  EXPECT_FALSE(JsonToInt64(nlohmann::json::parse("\"3\""), "x").ok());
  EXPECT_EQ(*JsonToInt64(nlohmann::json::parse("-7"), "x"), -7);
  EXPECT_EQ(*JsonToInt64(nlohmann::json::parse("4.0"), "x"), 4);
  EXPECT_EQ(*JsonToInt64(nlohmann::json::parse("9223372036854775807"), "x"), INT64_MAX);
}

TEST(JsonLimitsTest, ExcerptsAreBoundedWhateverTheValue) {
  const nlohmann::json huge_string = std::string(1 << 20, 'x');
  nlohmann::json huge_array = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) huge_array.push_back(i);
  nlohmann::json wide_object;
  for (int i = 0; i < 10000; ++i) wide_object["key" + std::to_string(i)] = std::string(100, 'v');
  const nlohmann::json* values[] = {&huge_string, &huge_array, &wide_object};
  for (const nlohmann::json* v : values) {
    const std::string e = JsonExcerpt(*v);
    EXPECT_LE(e.size(), 70u) << e;
    EXPECT_THAT(e, HasSubstr("..."));
  }
  EXPECT_EQ(JsonExcerpt(nlohmann::json::parse("[1,2]")), "[1,2]");
  EXPECT_EQ(QuotedExcerpt("short"), "\"short\"");
  // A syntax error inside a huge token quotes a bounded part of it.
  absl::StatusOr<nlohmann::json> bad = ParseJson("{\"a\": \"" + std::string(1 << 20, 'y'), "job.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_LT(bad.status().message().size(), 400u);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("job.json is not valid JSON: error at line 1"));
}

}  // namespace
}  // namespace pstrain
