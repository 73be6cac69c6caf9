// The largest message pstrain sends: protobuf's 2 GiB limit less room for framing. The ps refuses
// a pull or push beyond it (naming the fix: pull fewer shards or rows per call, partition the
// variable), and both transports refuse frames that announce more.
#ifndef PSTRAIN_COMMON_WIRE_MESSAGE_LIMITS_H_
#define PSTRAIN_COMMON_WIRE_MESSAGE_LIMITS_H_

#include <cstdint>

namespace pstrain {

inline constexpr int64_t kMaxMessageBytes = (int64_t{1} << 31) - (int64_t{1} << 20);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_WIRE_MESSAGE_LIMITS_H_
