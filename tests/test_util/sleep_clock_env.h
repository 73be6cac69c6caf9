// SleepClockEnv: a fake clock that moves when a thread sleeps on it, for code whose threads poll
// (the coordinator, recovery): a sleep of d begun at clock time t returns with the clock at t + d
// or later (overlapping sleeps of several threads overlap, as on a real clock), after only
// d / speedup of real time. So retry intervals, timeouts and polls pass at `speedup` times real
// time: a polling loop neither spins nor sleeps out its real interval, and what other threads do
// meanwhile (fake RPCs, a test's thread) still happens between its polls. Files are the real ones.
// Thread-safety: thread-safe.
#ifndef PSTRAIN_TESTS_TEST_UTIL_SLEEP_CLOCK_ENV_H_
#define PSTRAIN_TESTS_TEST_UTIL_SLEEP_CLOCK_ENV_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "absl/time/time.h"
#include "tests/test_util/forwarding_env.h"

namespace pstrain {
namespace testing_util {

class SleepClockEnv : public ForwardingEnv {
 public:
  // REQUIRES: speedup >= 1. The clock starts at the real time, so dates made from it read right.
  explicit SleepClockEnv(int64_t speedup = 20) : speedup_(speedup), now_(Env::Default()->NowMicros()) {}

  int64_t NowMicros() override { return now_.load(); }
  void SleepForMicros(int64_t micros) override {
    const int64_t end = now_.load() + micros;
    std::this_thread::sleep_for(std::chrono::microseconds(micros / speedup_));
    int64_t seen = now_.load();
    while (seen < end && !now_.compare_exchange_weak(seen, end)) {
    }
  }
  void Advance(absl::Duration d) { now_ += absl::ToInt64Microseconds(d); }

 private:
  const int64_t speedup_;
  std::atomic<int64_t> now_;
};

}  // namespace testing_util
}  // namespace pstrain

#endif  // PSTRAIN_TESTS_TEST_UTIL_SLEEP_CLOCK_ENV_H_
