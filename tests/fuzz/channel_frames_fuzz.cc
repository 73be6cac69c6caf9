// libFuzzer target: the ps's end of the tensor channel (TensorChannelSession): everything a
// client sends after the preface (the hello, frame headers, messages, payload sizes, payloads) fed
// to a real PsServer holding a dense shard "w" [64] and an embedding-table shard "t" [100, 4].
// Beyond "no crash, no sanitizer report": the session never asks to read or write more than the
// input or the answers hold, and what it writes back parses as frames.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "common/wire/protocol_version.h"
#include "ps/transport/tensor_channel_server.h"
#include "ps/transport/tensor_channel_session.h"
#include "tests/fuzz/fuzz_util.h"

namespace pstrain {
namespace {

// A stream over the fuzz input; writes are kept to be checked.
class MemoryStream : public ByteStream {
 public:
  explicit MemoryStream(absl::string_view input) : input_(input) {}
  IoResult Read(char* dst, size_t n) override {
    IoResult r;
    if (input_.empty()) {
      r.want = Want::kRead;  // the client went quiet: the session must wait, not fail
      return r;
    }
    r.bytes = std::min(n, input_.size());
    std::memcpy(dst, input_.data(), r.bytes);
    input_.remove_prefix(r.bytes);
    return r;
  }
  IoResult Write(const iovec* parts, size_t count) override {
    IoResult r;
    for (size_t i = 0; i < count; ++i) {
      written_.append(static_cast<const char*>(parts[i].iov_base), parts[i].iov_len);
      r.bytes += parts[i].iov_len;
    }
    return r;
  }
  int fd() const override { return -1; }
  const std::string& written() const { return written_; }

 private:
  absl::string_view input_;
  std::string written_;
};

ShardSpecProto Shard(const std::string& name, std::vector<int64_t> shape, bool table) {
  ShardSpecProto s;
  s.set_shard_name(name);
  s.set_variable_name(name);
  for (int64_t d : shape) s.add_full_shape(d);
  s.set_rows(shape[0]);
  s.set_dtype(DT_FLOAT);
  s.set_sparse(table);
  s.mutable_initializer()->set_type("ones");
  return s;
}

struct Fixture {
  Fixture() : ps(PsServer::Options{"ps:0"}) {
    CreateShardsRequest create;
    create.set_protocol_version(kProtocolVersion);
    *create.add_shards() = Shard("w", {64}, false);
    *create.add_shards() = Shard("t", {100, 4}, true);
    create.mutable_optimizer()->set_type("adagrad");
    create.set_sync_timeout_ms(1);  // a pull waiting for a version gives up at once
    create.set_initialize(true);
    CreateShardsResponse created;
    Check(ps.CreateShards(create, &created).ok());
    TensorChannelServer::Options options;
    options.max_pending_message_bytes = int64_t{4} << 20;
    options.max_pending_payload_bytes = int64_t{4} << 20;
    options.log = [](const std::string&) {};
    options.env = Env::Default();
    server = *TensorChannelServer::Create(&ps, options);
  }
  static void Check(bool c) { fuzz::Check(c); }

  PsServer ps;
  std::unique_ptr<TensorChannelServer> server;
};

// Every whole frame in `bytes` (after the 8-byte preface echo) must decode.
void CheckAnswers(absl::string_view bytes) {
  fuzz::Check(bytes.size() >= kPrefaceBytes && bytes.substr(0, kPrefaceBytes) == kPrefacePlain);
  bytes.remove_prefix(kPrefaceBytes);
  while (bytes.size() >= kFrameHeaderBytes) {
    absl::StatusOr<FrameHeader> h = DecodeFrameHeader(bytes.data());
    fuzz::Check(h.ok());
    bytes.remove_prefix(kFrameHeaderBytes);
    if (bytes.size() < h->message_bytes + h->payload_bytes) break;  // the last answer may be partial
    TensorCallResponse answer;
    fuzz::Check(answer.ParseFromArray(bytes.data(), static_cast<int>(h->message_bytes)));
    bytes.remove_prefix(h->message_bytes + h->payload_bytes);
  }
}

}  // namespace
}  // namespace pstrain

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pstrain;
  static Fixture* fixture = new Fixture;
  auto stream = std::make_unique<MemoryStream>(absl::string_view(reinterpret_cast<const char*>(data), size));
  MemoryStream* memory = stream.get();
  std::shared_ptr<TensorChannelSession> session =
      fixture->server->NewSession(-1, std::move(stream), PrefaceKind::kPlain, absl::InfiniteFuture());
  // A parked call (a pull waiting for a version) finishes on another thread: wait for its wake.
  absl::Notification* woken = nullptr;
  session->set_wake([&woken] { woken->Notify(); });
  for (int steps = 0; steps < 10000; ++steps) {
    absl::Notification wake;
    woken = &wake;
    const TensorChannelSession::Wait wait = session->Advance();
    if (wait == TensorChannelSession::Wait::kCall) {
      fuzz::Check(wake.WaitForNotificationWithTimeout(absl::Seconds(10)));
      continue;
    }
    // kRead: the input is all read; kRoom: nothing else frees the budget in this one-session run.
    if (wait != TensorChannelSession::Wait::kWrite) break;
  }
  CheckAnswers(memory->written());
  return 0;
}
