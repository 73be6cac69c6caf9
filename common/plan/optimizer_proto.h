// The wire form of a job spec's optimizer (OptimizerProto in proto/common.proto): what the chief
// sends the ps in CreateShards and Restore, and what `pstrain train` builds its optimizer from.
// Thread-safety: pure function.
#ifndef PSTRAIN_COMMON_PLAN_OPTIMIZER_PROTO_H_
#define PSTRAIN_COMMON_PLAN_OPTIMIZER_PROTO_H_

#include "common/config/job_spec.h"
#include "proto/common.pb.h"

namespace pstrain {

// `spec` with every field explicit (the ps fills Keras defaults for the zeros; ps/store/optimizer.h).
OptimizerProto OptimizerProtoFromSpec(const OptimizerSpec& spec);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_OPTIMIZER_PROTO_H_
