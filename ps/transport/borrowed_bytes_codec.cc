#include "ps/transport/borrowed_bytes_codec.h"

#include <cstring>

namespace pstrain {
namespace {

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads across the slices of a received buffer.
class Cursor {
 public:
  explicit Cursor(const std::vector<grpc::Slice>& slices) : slices_(slices) { SkipEmpty(); }

  bool AtEnd() const { return index_ >= slices_.size(); }
  size_t index() const { return index_; }
  size_t offset() const { return offset_; }

  bool ReadByte(uint8_t* b) {
    if (AtEnd()) return false;
    *b = slices_[index_].begin()[offset_];
    Advance(1);
    return true;
  }
  bool ReadVarint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!ReadByte(&b)) return false;
      *v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  // Appends `n` bytes to `out` (nullptr: skips them).
  bool Take(size_t n, std::string* out) {
    while (n > 0) {
      if (AtEnd()) return false;
      const size_t avail = slices_[index_].size() - offset_;
      const size_t k = n < avail ? n : avail;
      if (out != nullptr) out->append(reinterpret_cast<const char*>(slices_[index_].begin()) + offset_, k);
      Advance(k);
      n -= k;
    }
    return true;
  }

 private:
  void Advance(size_t k) {
    offset_ += k;
    if (offset_ == slices_[index_].size()) {
      ++index_;
      offset_ = 0;
      SkipEmpty();
    }
  }
  void SkipEmpty() {
    while (index_ < slices_.size() && slices_[index_].size() == 0) ++index_;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t index_ = 0, offset_ = 0;
};

}  // namespace

grpc::ByteBuffer EncodeWithBorrowedBytes(const std::string& small_fields, int field, const char* data, size_t size) {
  std::string head = small_fields;
  AppendVarint((static_cast<uint64_t>(field) << 3) | 2, &head);
  AppendVarint(size, &head);
  grpc::Slice slices[2] = {grpc::Slice(head.data(), head.size()), grpc::Slice(data, size, grpc::Slice::STATIC_SLICE)};
  return grpc::ByteBuffer(slices, size > 0 ? 2 : 1);
}

absl::Status DecodeWithBorrowedBytes(const grpc::ByteBuffer& buffer, int field, DecodedMessage* out) {
  out->small_fields.clear();
  out->slices.clear();
  out->has_bytes = false;
  out->bytes_size = 0;
  if (!buffer.Dump(&out->slices).ok()) return absl::DataLossError("cannot read a received message");
  Cursor c(out->slices);
  const absl::Status malformed = absl::DataLossError("malformed chunk message on a ps stream");
  while (!c.AtEnd()) {
    uint64_t tag, v;
    if (!c.ReadVarint(&tag)) return malformed;
    const int number = static_cast<int>(tag >> 3), wire = static_cast<int>(tag & 7);
    if (number == field && wire == 2) {
      if (!c.ReadVarint(&v)) return malformed;
      out->has_bytes = true;
      out->bytes_size = v;
      out->slice_index = c.index();
      out->slice_offset = c.offset();
      if (!c.Take(v, nullptr)) return malformed;
      continue;
    }
    AppendVarint(tag, &out->small_fields);
    bool ok = true;
    switch (wire) {
      case 0:
        ok = c.ReadVarint(&v);
        AppendVarint(v, &out->small_fields);
        break;
      case 1:
        ok = c.Take(8, &out->small_fields);
        break;
      case 5:
        ok = c.Take(4, &out->small_fields);
        break;
      case 2:
        ok = c.ReadVarint(&v);
        AppendVarint(v, &out->small_fields);
        ok = ok && c.Take(v, &out->small_fields);
        break;
      default:
        ok = false;
    }
    if (!ok) return malformed;
  }
  return absl::OkStatus();
}

void DecodedMessage::CopyBytesTo(char* dst) const {
  size_t n = bytes_size, i = slice_index, off = slice_offset;
  while (n > 0) {
    const size_t avail = slices[i].size() - off;
    const size_t k = n < avail ? n : avail;
    std::memcpy(dst, slices[i].begin() + off, k);
    dst += k;
    n -= k;
    ++i;
    off = 0;
  }
}

}  // namespace pstrain
