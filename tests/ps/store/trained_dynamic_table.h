// A dynamic table after one SGD push (learning rate 0.5) of the given keys, gradient element i
// being 0.1 * (i + 1): the rows it holds differ from their initial ones. For tests that need a
// table's saved state (checkpoints, evaluation, export).
// Thread-safety: a plain function.
#ifndef PSTRAIN_TESTS_PS_STORE_TRAINED_DYNAMIC_TABLE_H_
#define PSTRAIN_TESTS_PS_STORE_TRAINED_DYNAMIC_TABLE_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ps/store/dynamic_table.h"

namespace pstrain {

inline std::unique_ptr<DynamicTable> TrainedDynamicTable(const std::string& name, int64_t dim, uint64_t seed,
                                                         const InitializerProto& initializer,
                                                         const std::vector<int64_t>& keys) {
  OptimizerProto sgd;
  sgd.set_type("sgd");
  sgd.mutable_learning_rate()->set_initial(0.5);
  auto opt = Optimizer::Create(sgd);
  EXPECT_TRUE(opt.ok()) << opt.status();
  DynamicTableOptions o;
  o.name = name;
  o.dim = dim;
  o.seed = seed;
  o.initializer = initializer;
  o.optimizer = std::move(*opt);
  auto table = DynamicTable::Create(o);
  EXPECT_TRUE(table.ok()) << table.status();
  std::vector<float> grads(keys.size() * dim);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.1f * static_cast<float>(i + 1);
  EXPECT_TRUE((*table)->Push(keys, grads, 0).ok());
  return std::move(*table);
}

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_PS_STORE_TRAINED_DYNAMIC_TABLE_H_
