#include "chief/recovery/ps_health_watch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/wire/protocol_version.h"

namespace pstrain {

PsHealthWatch::PsHealthWatch(Env* env, std::vector<PsClient*> probes, int64_t interval_ms, SilentFn on_silent)
    : env_(env), probes_(std::move(probes)), interval_ms_(interval_ms), on_silent_(std::move(on_silent)) {}

PsHealthWatch::~PsHealthWatch() { Stop(); }

void PsHealthWatch::Start() {
  for (size_t i = 0; i < probes_.size(); ++i) threads_.emplace_back([this, i] { Watch(static_cast<int>(i)); });
}

void PsHealthWatch::Stop() {
  stopping_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void PsHealthWatch::Watch(int ps) {
  HandshakeRequest hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_caller("chief:0");
  while (!stopping_) {
    // Sleep in short slices so Stop() is prompt.
    for (int64_t slept = 0; slept < interval_ms_ && !stopping_; slept += 100) {
      env_->SleepForMicros(std::min<int64_t>(100, interval_ms_ - slept) * 1000);
    }
    if (stopping_) break;
    HandshakeResponse reply;
    absl::Status s = probes_[ps]->Handshake(hello, &reply);
    if (!s.ok() && !stopping_) {
      on_silent_(ps, absl::Status(s.code(), absl::StrCat("no answer to the chief's health check: ", s.message())));
    }
  }
}

}  // namespace pstrain
