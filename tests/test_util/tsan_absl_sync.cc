// ThreadSanitizer builds only (deploy/sanitize-tests.sh tsan links it into every test binary):
// makes abseil's Mutex, CondVar and Notification visible to TSan as synchronisation.
//
// Why: Debian's abseil is compiled without TSan, so its Mutex takes and gives up the lock with
// atomics and futexes TSan never sees; every variable guarded by an absl::Mutex would then read as
// a race. Each function below is the one of that name in libabsl_synchronization (this definition
// wins for the test binary's own calls), which calls the real one (found with dlsym(RTLD_NEXT)) and
// tells TSan what it does: a release of the mutex before it is let go, an acquire once it is held.
// Memory accesses inside the real functions are ignored: abseil evaluates a waiter's Condition in
// whichever thread unlocks, after the release above, and would otherwise show as a race.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

extern "C" {
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
void __tsan_ignore_thread_begin();
void __tsan_ignore_thread_end();
}

namespace {

// The real member function of the class `T` whose mangled name ends in `tail` (e.g. "4LockEv");
// `konst` for a const one.
template <typename Fn, typename T>
Fn Real(const char* tail, bool konst = false) {
  const std::string type = typeid(T).name();  // "N4absl7debian35MutexE": the inline namespace included
  const std::string symbol = std::string("_ZN") + (konst ? "K" : "") + type.substr(1, type.size() - 2) + tail;
  void* f = dlsym(RTLD_NEXT, symbol.c_str());
  if (f == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found in abseil\n", symbol.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

// Runs the real function with this thread's memory accesses ignored.
template <typename R, typename... A>
R Quiet(R (*f)(A...), A... args) {
  __tsan_ignore_thread_begin();
  if constexpr (std::is_void_v<R>) {
    f(args...);
    __tsan_ignore_thread_end();
  } else {
    R r = f(args...);
    __tsan_ignore_thread_end();
    return r;
  }
}

using absl::CondVar;
using absl::Condition;
using absl::Duration;
using absl::Mutex;
using absl::Notification;
using absl::Time;

}  // namespace

namespace absl {

#define PSTRAIN_REAL(Class, Type, tail) static const auto real = Real<Type, Class>(tail)

void Mutex::Lock() {
  PSTRAIN_REAL(Mutex, void (*)(Mutex*), "4LockEv");
  Quiet(real, this);
  __tsan_acquire(this);
}

void Mutex::Unlock() {
  PSTRAIN_REAL(Mutex, void (*)(Mutex*), "6UnlockEv");
  __tsan_release(this);
  Quiet(real, this);
}

bool Mutex::TryLock() {
  PSTRAIN_REAL(Mutex, bool (*)(Mutex*), "7TryLockEv");
  const bool held = Quiet(real, this);
  if (held) __tsan_acquire(this);
  return held;
}

void Mutex::ReaderLock() {
  PSTRAIN_REAL(Mutex, void (*)(Mutex*), "10ReaderLockEv");
  Quiet(real, this);
  __tsan_acquire(this);
}

void Mutex::ReaderUnlock() {
  PSTRAIN_REAL(Mutex, void (*)(Mutex*), "12ReaderUnlockEv");
  __tsan_release(this);
  Quiet(real, this);
}

bool Mutex::ReaderTryLock() {
  PSTRAIN_REAL(Mutex, bool (*)(Mutex*), "13ReaderTryLockEv");
  const bool held = Quiet(real, this);
  if (held) __tsan_acquire(this);
  return held;
}

void Mutex::Await(const Condition& cond) {
  PSTRAIN_REAL(Mutex, void (*)(Mutex*, const Condition&), "5AwaitERKNS0_9ConditionE");
  __tsan_release(this);
  Quiet<void, Mutex*, const Condition&>(real, this, cond);
  __tsan_acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  PSTRAIN_REAL(Mutex, bool (*)(Mutex*, const Condition&, Duration),
               "16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  __tsan_release(this);
  const bool met = Quiet<bool, Mutex*, const Condition&, Duration>(real, this, cond, timeout);
  __tsan_acquire(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  PSTRAIN_REAL(Mutex, bool (*)(Mutex*, const Condition&, Time), "17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  __tsan_release(this);
  const bool met = Quiet<bool, Mutex*, const Condition&, Time>(real, this, cond, deadline);
  __tsan_acquire(this);
  return met;
}

void Mutex::LockWhen(const Condition& cond) {
  PSTRAIN_REAL(Mutex, void (*)(Mutex*, const Condition&), "8LockWhenERKNS0_9ConditionE");
  Quiet<void, Mutex*, const Condition&>(real, this, cond);
  __tsan_acquire(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  PSTRAIN_REAL(Mutex, void (*)(Mutex*, const Condition&), "14ReaderLockWhenERKNS0_9ConditionE");
  Quiet<void, Mutex*, const Condition&>(real, this, cond);
  __tsan_acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  PSTRAIN_REAL(Mutex, bool (*)(Mutex*, const Condition&, Duration),
               "19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  const bool met = Quiet<bool, Mutex*, const Condition&, Duration>(real, this, cond, timeout);
  __tsan_acquire(this);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  PSTRAIN_REAL(Mutex, bool (*)(Mutex*, const Condition&, Time), "20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const bool met = Quiet<bool, Mutex*, const Condition&, Time>(real, this, cond, deadline);
  __tsan_acquire(this);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  PSTRAIN_REAL(CondVar, void (*)(CondVar*, Mutex*), "4WaitEPNS0_5MutexE");
  __tsan_release(mu);
  Quiet(real, this, mu);
  __tsan_acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  PSTRAIN_REAL(CondVar, bool (*)(CondVar*, Mutex*, Duration), "15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  __tsan_release(mu);
  const bool timed_out = Quiet(real, this, mu, timeout);
  __tsan_acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  PSTRAIN_REAL(CondVar, bool (*)(CondVar*, Mutex*, Time), "16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  __tsan_release(mu);
  const bool timed_out = Quiet(real, this, mu, deadline);
  __tsan_acquire(mu);
  return timed_out;
}

void Notification::Notify() {
  PSTRAIN_REAL(Notification, void (*)(Notification*), "6NotifyEv");
  __tsan_release(this);
  Quiet(real, this);
}

void Notification::WaitForNotification() const {
  static const auto real = Real<void (*)(const Notification*), Notification>("19WaitForNotificationEv", true);
  Quiet(real, static_cast<const Notification*>(this));
  __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static const auto real =
      Real<bool (*)(const Notification*, Duration), Notification>("30WaitForNotificationWithTimeoutENS0_8DurationE", true);
  const bool notified = Quiet(real, static_cast<const Notification*>(this), timeout);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static const auto real =
      Real<bool (*)(const Notification*, Time), Notification>("31WaitForNotificationWithDeadlineENS0_4TimeE", true);
  const bool notified = Quiet(real, static_cast<const Notification*>(this), deadline);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

#undef PSTRAIN_REAL

}  // namespace absl
