// JsonFields and the range vocabulary (classes: unknown keys named with the nearest known one,
// values checked against their valid range).
#include "common/config/json_fields.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

TEST(JsonFieldsTest, UnknownKeysNameTheNearestKnownOne) {
  struct Case {
    const char* doc;
    const char* message;
  };
  const Case cases[] = {
      {R"({"optimiser": 1})", "unknown key \"optimiser\" in opt; did you mean \"optimizer\"?"},
      {R"({"learing_rate": 1})", "did you mean \"learning_rate\"?"},
      {R"({"bacth_size": 1})", "did you mean \"batch_size\"?"},  // a transposition
      {R"({"colour": 1})", "unknown key \"colour\" in opt (known keys: batch_size, learning_rate, optimizer)"},
  };
  for (const Case& c : cases) {
    const json doc = json::parse(c.doc);
    JsonFields f(doc, "opt", "spec: ");
    ASSERT_TRUE(f.Int("batch_size", 1, AnyInt()).ok());
    ASSERT_TRUE(f.Number("learning_rate", 1, AnyNumber()).ok());
    f.Find("optimizer");  // declared, parsed by the caller
    absl::Status s = f.NoUnknownKeys();
    ASSERT_FALSE(s.ok()) << c.doc;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message)) << c.doc;
  }
  const json ok = json::parse(R"({"batch_size": 3})");
  JsonFields f(ok, "", "");
  ASSERT_TRUE(f.Int("batch_size", 1, AnyInt()).ok());
  EXPECT_TRUE(f.NoUnknownKeys().ok());
}

TEST(JsonFieldsTest, ValuesOutsideTheirRangeNameTheBoundAndTheRule) {
  const json doc = json::parse(
      R"({"units": 0, "big": 4294967296, "huge": 18446744073709551615, "beta": 1, "lr": -0.5, "neg": -3,
          "list": [1, 2, -7], "name": "adamw", "flag": "yes", "nums": [0.1, "x"]})");
  JsonFields f(doc, "layer", "job spec: ");
  auto message = [](const auto& r) { return std::string(r.status().message()); };
  EXPECT_THAT(message(f.Int("units", 1, DimensionRange("(as Keras's Dense)"))),
              HasSubstr("job spec: layer.units must be positive, got 0 (as Keras's Dense)"));
  EXPECT_THAT(message(f.Int("big", 1, DimensionRange())), HasSubstr("layer.big must be at most 2147483647"));
  EXPECT_THAT(message(f.Int("huge", 1, AnyInt())), HasSubstr("18446744073709551615 is out of range"));
  EXPECT_THAT(message(f.Number("beta", 0.9, NumberBetween(0, false, 1, true))),
              HasSubstr("layer.beta must be less than 1, got 1"));
  EXPECT_THAT(message(f.Number("lr", 1, PositiveNumber())), HasSubstr("layer.lr must be positive, got -0.5"));
  EXPECT_THAT(message(f.Int("neg", 0, IntAtLeast(0))), HasSubstr("must not be negative, got -3"));
  EXPECT_THAT(message(f.IntList("list", IntAtLeast(0), 10)), HasSubstr("layer.list[2] must not be negative"));
  EXPECT_THAT(message(f.IntList("list", IntAtLeast(0), 2)), HasSubstr("has 3 entries, at most 2"));
  EXPECT_THAT(message(f.String("name", "", {"sgd", "adam"})), HasSubstr("\"adamw\" is not one of: sgd, adam; did you mean \"adam\"?"));
  EXPECT_THAT(message(f.Bool("flag", false)), HasSubstr("layer.flag must be true or false, got \"yes\""));
  EXPECT_THAT(message(f.NumberList("nums", AnyNumber(), 5)), HasSubstr("layer.nums[1] must be a number"));
  EXPECT_EQ(*f.Int("absent", 42, DimensionRange()), 42);  // defaults are not range-checked
}

TEST(JsonFieldsTest, RangeMessagesForEveryBound) {
  EXPECT_TRUE(CheckInRange(int64_t{5}, IntBetween(1, 5), "x").ok());
  EXPECT_THAT(std::string(CheckInRange(int64_t{-2}, IntBetween(-1, 5), "x").message()), HasSubstr("at least -1"));
  EXPECT_THAT(std::string(CheckInRange(std::numeric_limits<double>::infinity(), AnyNumber(), "x").message()), HasSubstr("finite"));
  EXPECT_TRUE(CheckInRange(0.0, NonNegativeNumber(), "x").ok());
  EXPECT_THAT(std::string(CheckInRange(2.0, NumberBetween(0, false, 1, false), "x").message()), HasSubstr("at most 1"));
  EXPECT_THAT(std::string(CheckInRange(0.5, NumberBetween(0.5, true, 1, false), "x").message()),
              HasSubstr("greater than 0.5"));
  EXPECT_EQ(NearestName("optimizr", {"optimizer", "model"}), "optimizer");
  EXPECT_EQ(NearestName("zzzz", {"optimizer", "model"}), "");
  EXPECT_EQ(NearestName(std::string(100000, 'a'), {"optimizer"}), "");  // no quadratic table for a huge key
}

}  // namespace
}  // namespace pstrain
