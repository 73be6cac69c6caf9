#include "chief/records/tfevents_writer.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/tfevents.pb.h"

namespace pstrain {
namespace {

// The reflected Castagnoli polynomial, table-driven one byte at a time (event files are small).
struct Crc32cTable {
  uint32_t t[256];
  Crc32cTable() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
  }
};

void AppendLittleEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::atomic<int> files_opened{0};

}  // namespace

uint32_t Crc32c(absl::string_view data) {
  static const Crc32cTable table;
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table.t[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::string TfRecord(absl::string_view data) {
  std::string length;
  AppendLittleEndian(&length, data.size(), 8);
  std::string out = length;
  AppendLittleEndian(&out, MaskCrc32c(Crc32c(length)), 4);
  out.append(data.data(), data.size());
  AppendLittleEndian(&out, MaskCrc32c(Crc32c(data)), 4);
  return out;
}

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

absl::StatusOr<std::unique_ptr<TfEventsWriter>> TfEventsWriter::Open(const std::string& dir, double wall_time) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create the event-file directory ", dir, ": ", ec.message()));
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const std::string path =
      absl::StrFormat("%s/events.out.tfevents.%010d.%s.%d.%d", dir, static_cast<int64_t>(wall_time), host,
                      static_cast<int>(getpid()), files_opened.fetch_add(1));
  std::unique_ptr<TfEventsWriter> w(new TfEventsWriter(path));
  tfevents::Event first;
  first.set_wall_time(wall_time);
  first.set_file_version("brain.Event:2");
  absl::MutexLock lock(&w->mu_);
  w->out_.open(path, std::ios::binary | std::ios::app);
  if (!w->out_) return absl::InternalError(absl::StrCat("cannot create the event file ", path));
  absl::Status s = w->Append(first.SerializeAsString());
  if (!s.ok()) return s;
  return w;
}

absl::Status TfEventsWriter::Append(const std::string& event) {
  out_ << TfRecord(event);
  out_.flush();
  if (!out_) return absl::InternalError(absl::StrCat("cannot write to the event file ", path_));
  return absl::OkStatus();
}

absl::Status TfEventsWriter::Write(int64_t step, double wall_time, const Scalars& scalars) {
  tfevents::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  for (const auto& [tag, value] : scalars) {
    if (!std::isfinite(value)) continue;
    tfevents::Summary::Value* v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  if (!event.has_summary()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  return Append(event.SerializeAsString());
}

}  // namespace pstrain
