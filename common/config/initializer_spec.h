// A Keras initializer and its arguments (Keras's defaults): shared by the job spec's layers and the
// variables of a Keras model graph. The ps fills variables from it (ps/store/initializers.cc).
// Thread-safety: a plain value.
#ifndef PSTRAIN_COMMON_CONFIG_INITIALIZER_SPEC_H_
#define PSTRAIN_COMMON_CONFIG_INITIALIZER_SPEC_H_

#include <string>

namespace pstrain {

struct InitializerSpec {
  // zeros, ones, constant, random_normal, random_uniform (alias "uniform", Keras's name),
  // truncated_normal, glorot_uniform, glorot_normal, he_normal, he_uniform, lecun_normal, lecun_uniform
  std::string type = "zeros";
  double value = 0.0;     // constant
  double mean = 0.0;      // random_normal, truncated_normal
  double stddev = 0.05;   // random_normal, truncated_normal
  double minval = -0.05;  // random_uniform
  double maxval = 0.05;   // random_uniform
};

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_INITIALIZER_SPEC_H_
