#include "common/tensor/tensor.h"

#include "common/tensor/tensor_proto.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

TEST(TensorTest, RoundTripsThroughProto) {
  Tensor t(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) t.flat()[i] = 0.5f * i;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  TensorProto proto;
  TensorToProto(t, &proto);
  EXPECT_EQ(proto.data().size(), 24u);
  auto back = TensorFromProto(proto, "x");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape(), t.shape());
  EXPECT_EQ(back->flat()[5], 2.5f);
  Tensor copy = t;
  copy.flat()[0] = 9;
  EXPECT_EQ(t.flat()[0], 0.0f);
}

TEST(TensorTest, ShapeMismatchOnTheWireIsAnError) {
  TensorProto proto;
  proto.set_dtype(DT_FLOAT);
  proto.add_shape(4);
  proto.set_data(std::string(12, '\0'));
  auto t = TensorFromProto(proto, "dense/kernel/part_0");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "dense/kernel/part_0: tensor of shape [4] and dtype float32 needs 16 bytes but 12 arrived");
  proto.set_dtype(DT_INVALID);
  EXPECT_FALSE(TensorFromProto(proto, "x").ok());
  proto.set_dtype(DT_FLOAT);
  proto.set_shape(0, -4);
  EXPECT_FALSE(TensorFromProto(proto, "x").ok());
}

}  // namespace
}  // namespace pstrain
