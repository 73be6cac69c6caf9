#include "worker/data/tf_example_wire.h"

#include <cstring>
#include <type_traits>

namespace pstrain {
namespace {

// Wire types (protobuf encoding): varint, 64-bit, length-delimited, 32-bit; 3 and 4 (groups) and
// anything else are left to protobuf.
constexpr int kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5;

class Reader {
 public:
  explicit Reader(absl::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  bool done() const { return p_ == end_; }

  bool Varint(uint64_t* out) {
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
      if (p_ == end_) return false;
      const auto b = static_cast<unsigned char>(*p_++);
      if (i == 9 && b > 1) return false;  // more than 64 bits
      v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        *out = v;
        return true;
      }
    }
    return false;
  }

  // The next tag; false at a malformed one (field 0 or past 2^29 - 1).
  bool Tag(int* field, int* wire) {
    uint64_t tag;
    if (!Varint(&tag) || tag > 0xffffffffu || (tag >> 3) == 0 || (tag >> 3) > (1u << 29) - 1) return false;
    *field = static_cast<int>(tag >> 3);
    *wire = static_cast<int>(tag & 7);
    return true;
  }

  bool Bytes(absl::string_view* out) {
    uint64_t n;
    if (!Varint(&n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    *out = absl::string_view(p_, n);
    p_ += n;
    return true;
  }

  bool Fixed32(uint32_t* out) {
    if (end_ - p_ < 4) return false;
    std::memcpy(out, p_, 4);  // little-endian, as x86 and the format have it
    p_ += 4;
    return true;
  }

  // Skips an unknown field's value.
  bool Skip(int wire) {
    uint64_t v;
    absl::string_view s;
    uint32_t f32;
    switch (wire) {
      case kVarint:
        return Varint(&v);
      case kFixed64:
        if (end_ - p_ < 8) return false;
        p_ += 8;
        return true;
      case kLen:
        return Bytes(&s);
      case kFixed32:
        return Fixed32(&f32);
      default:
        return false;
    }
  }

 private:
  const char* p_;
  const char* end_;
};

static_assert(sizeof(float) == 4, "floats on the wire are 4 bytes");

// Well-formed UTF-8 (as protobuf requires of proto3 strings): no overlongs, surrogates or values
// past U+10FFFF.
bool IsUtf8(absl::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int n;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (end - p <= n) return false;
    for (int i = 1; i <= n; ++i) {
      if ((p[i] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    p += n + 1;
  }
  return true;
}

// Walks a BytesList, FloatList or Int64List (`kind`), packed or not: on_value(v) for each value in
// order, v an absl::string_view (into `bytes`), a float or an int64_t. False when the bytes do not
// parse as that list.
template <typename OnValue>
bool WalkList(absl::string_view bytes, FeatureView::Kind kind, OnValue&& on_value) {
  Reader r(bytes);
  while (!r.done()) {
    int field, wire;
    if (!r.Tag(&field, &wire)) return false;
    if (field != 1) {
      if (!r.Skip(wire)) return false;
      continue;
    }
    if (kind == FeatureView::kBytes) {
      absl::string_view value;
      if (wire != kLen || !r.Bytes(&value)) return false;
      on_value(value);
    } else if (kind == FeatureView::kFloat) {
      uint32_t bits;
      float value;
      if (wire == kFixed32) {
        if (!r.Fixed32(&bits)) return false;
        std::memcpy(&value, &bits, 4);
        on_value(value);
      } else if (wire == kLen) {
        absl::string_view packed;
        if (!r.Bytes(&packed) || packed.size() % 4 != 0) return false;
        for (size_t i = 0; i < packed.size(); i += 4) {
          std::memcpy(&value, packed.data() + i, 4);
          on_value(value);
        }
      } else {
        return false;
      }
    } else if (kind == FeatureView::kInt64) {
      uint64_t v;
      if (wire == kVarint) {
        if (!r.Varint(&v)) return false;
        on_value(static_cast<int64_t>(v));
      } else if (wire == kLen) {
        absl::string_view packed;
        if (!r.Bytes(&packed)) return false;
        Reader values(packed);
        while (!values.done()) {
          if (!values.Varint(&v)) return false;
          on_value(static_cast<int64_t>(v));
        }
      } else {
        return false;
      }
    } else {
      return false;
    }
  }
  return true;
}

// A list (`kind`) into `view`: its count and last value.
bool List(absl::string_view bytes, FeatureView::Kind kind, FeatureView* view) {
  return WalkList(bytes, kind, [view](auto value) {
    using T = decltype(value);
    if constexpr (std::is_same_v<T, absl::string_view>) {
      view->bytes_value = value;
    } else if constexpr (std::is_same_v<T, float>) {
      view->float_value = value;
    } else {
      view->int64_value = value;
    }
    ++view->count;
  });
}

// A Feature: at most one list field (protobuf merges or replaces on more: left to it).
bool Feature(absl::string_view bytes, FeatureView* view) {
  Reader r(bytes);
  while (!r.done()) {
    int field, wire;
    if (!r.Tag(&field, &wire)) return false;
    if (field < 1 || field > 3) {
      if (!r.Skip(wire)) return false;
      continue;
    }
    absl::string_view list;
    if (wire != kLen || view->kind != FeatureView::kNone || !r.Bytes(&list)) return false;
    view->kind = static_cast<FeatureView::Kind>(field);
    view->list = list;
    if (!List(list, view->kind, view)) return false;
  }
  return true;
}

// One map entry of Features: key (1) and value (2), each at most once.
bool Entry(absl::string_view bytes, const FeatureSlots& slots, std::vector<FeatureView>* views) {
  Reader r(bytes);
  absl::string_view key, value;
  bool has_key = false, has_value = false;
  while (!r.done()) {
    int field, wire;
    if (!r.Tag(&field, &wire)) return false;
    if (field == 1 || field == 2) {
      bool& seen = field == 1 ? has_key : has_value;
      if (wire != kLen || seen || !r.Bytes(field == 1 ? &key : &value)) return false;
      seen = true;
    } else if (!r.Skip(wire)) {
      return false;
    }
  }
  if (!IsUtf8(key)) return false;
  FeatureView view;
  view.present = true;
  if (!Feature(value, &view)) return false;  // checked even when not wanted, as protobuf does
  auto it = slots.find(key);
  if (it != slots.end()) (*views)[it->second] = view;  // a later entry with the same key wins
  return true;
}

}  // namespace

bool ListValues(absl::string_view list, FeatureView::Kind kind, std::vector<int64_t>* int64_values,
                std::vector<float>* float_values, std::vector<absl::string_view>* bytes_values) {
  return WalkList(list, kind, [&](auto value) {
    using T = decltype(value);
    if constexpr (std::is_same_v<T, absl::string_view>) {
      bytes_values->push_back(value);
    } else if constexpr (std::is_same_v<T, float>) {
      float_values->push_back(value);
    } else {
      int64_values->push_back(value);
    }
  });
}

bool FastFeatureViews(absl::string_view serialized, const FeatureSlots& slots, std::vector<FeatureView>* views) {
  views->assign(slots.size(), FeatureView());
  Reader example(serialized);
  bool has_features = false;
  while (!example.done()) {
    int field, wire;
    if (!example.Tag(&field, &wire)) return false;
    if (field != 1) {
      if (!example.Skip(wire)) return false;
      continue;
    }
    absl::string_view features;
    if (wire != kLen || has_features || !example.Bytes(&features)) return false;
    has_features = true;
    Reader entries(features);
    while (!entries.done()) {
      int f, w;
      if (!entries.Tag(&f, &w)) return false;
      if (f != 1) {
        if (!entries.Skip(w)) return false;
        continue;
      }
      absl::string_view entry;
      if (w != kLen || !entries.Bytes(&entry) || !Entry(entry, slots, views)) return false;
    }
  }
  return true;
}

}  // namespace pstrain
