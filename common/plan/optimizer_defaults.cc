#include "common/plan/optimizer_defaults.h"

#include "absl/strings/str_cat.h"
#include "common/plan/optimizer_proto.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

absl::Status Invalid(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("optimizer.", field, " ", problem));
}

// Keras Ftrl's defaults and argument checks.
absl::Status FillFtrlDefaultsAndValidate(OptimizerProto* p) {
  if (!p->has_learning_rate_power()) p->set_learning_rate_power(-0.5);
  if (p->learning_rate_power() > 0) return Invalid("learning_rate_power", "must be <= 0");
  if (p->l1() < 0) return Invalid("l1", "must be >= 0");
  if (p->l2() < 0) return Invalid("l2", "must be >= 0");
  if (p->l2_shrinkage() < 0) return Invalid("l2_shrinkage", "must be >= 0");
  if (p->beta() < 0) return Invalid("beta", "must be >= 0");
  return absl::OkStatus();
}

}  // namespace

absl::Status FillOptimizerDefaults(OptimizerProto* p) {
  if (p->type().empty()) p->set_type("adam");
  const std::string& type = p->type();
  if (type != "sgd" && type != "adagrad" && type != "adam" && type != "rmsprop" && type != "ftrl" &&
      type != "lazy_adam") {
    return Invalid("type", absl::StrCat("\"", type, "\" is unknown (sgd, adagrad, adam, rmsprop, ftrl, lazy_adam)"));
  }
  LearningRateProto* lr = p->mutable_learning_rate();
  if (lr->initial() == 0) lr->set_initial(type == "sgd" ? 0.01 : 0.001);
  if (lr->schedule().empty()) lr->set_schedule("constant");
  if (p->beta_1() == 0) p->set_beta_1(0.9);
  if (p->beta_2() == 0) p->set_beta_2(0.999);
  if (p->epsilon() == 0) p->set_epsilon(1e-7);
  if (p->rho() == 0) p->set_rho(0.9);
  if (p->initial_accumulator_value() == 0) p->set_initial_accumulator_value(0.1);
  if (lr->initial() < 0) return Invalid("learning_rate", "must be positive");
  if (p->epsilon() < 0) return Invalid("epsilon", "must be positive");
  if (p->momentum() < 0) return Invalid("momentum", "must be >= 0");
  RETURN_IF_ERROR(FillFtrlDefaultsAndValidate(p));
  if (lr->schedule() == "exponential_decay") {
    if (lr->decay_steps() <= 0) return Invalid("learning_rate.decay_steps", "must be positive for exponential_decay");
  } else if (lr->schedule() == "piecewise_constant") {
    if (lr->values_size() != lr->boundaries_size() + 1) {
      return Invalid("learning_rate.values", absl::StrCat("needs boundaries+1 = ", lr->boundaries_size() + 1,
                                                          " entries, got ", lr->values_size()));
    }
  } else if (lr->schedule() != "constant") {
    return Invalid(
        "learning_rate.schedule",
        absl::StrCat("\"", lr->schedule(), "\" is unknown (constant, exponential_decay, piecewise_constant)"));
  }
  return absl::OkStatus();
}

std::vector<std::string> OptimizerSlotNames(const OptimizerProto& filled) {
  const std::string& type = filled.type();
  if (type == "sgd") {
    if (filled.momentum() == 0) return {};
    return {"momentum"};
  }
  if (type == "adagrad") return {"accumulator"};
  if (type == "adam" || type == "lazy_adam") return {"m", "v"};
  if (type == "ftrl") return {"accumulator", "linear"};
  std::vector<std::string> names = {"velocity"};  // rmsprop
  if (filled.momentum() > 0) names.push_back("momentum");
  if (filled.centered()) names.push_back("average_gradient");
  return names;
}

absl::StatusOr<int> OptimizerSlotCount(const OptimizerSpec& spec) {
  OptimizerProto p = OptimizerProtoFromSpec(spec);
  RETURN_IF_ERROR(FillOptimizerDefaults(&p));
  return static_cast<int>(OptimizerSlotNames(p).size());
}

}  // namespace pstrain
