#include "common/graph/hdf5_io.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace pstrain {
namespace {

absl::Status Fail(const std::string& what) { return absl::InvalidArgumentError(what); }

// Reads one string attribute (already open) into `out`.
absl::Status ReadStringAttribute(hid_t attr, const std::string& what, std::vector<std::string>* out) {
  Hdf5Handle space(H5Aget_space(attr), H5Sclose);
  Hdf5Handle type(H5Aget_type(attr), H5Tclose);
  if (!space.ok() || !type.ok()) return Fail(absl::StrCat(what, ": cannot read its type"));
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0 || n > (1 << 24)) return Fail(absl::StrCat(what, ": bad size"));
  if (H5Tget_class(type.get()) != H5T_STRING) {
    if (n == 0) return absl::OkStatus();
    return Fail(absl::StrCat(what, ": is not a list of strings"));
  }
  if (H5Tis_variable_str(type.get()) > 0) {
    Hdf5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    std::vector<char*> buffer(static_cast<size_t>(n), nullptr);
    if (n > 0 && H5Aread(attr, mem.get(), buffer.data()) < 0) return Fail(absl::StrCat(what, ": cannot be read"));
    for (char* s : buffer) out->push_back(s == nullptr ? "" : s);
    if (n > 0) H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, buffer.data());
    return absl::OkStatus();
  }
  const size_t size = H5Tget_size(type.get());
  if (size == 0 || size > (1 << 20)) return Fail(absl::StrCat(what, ": bad string size"));
  Hdf5Handle mem(H5Tcopy(type.get()), H5Tclose);
  std::vector<char> buffer(size * static_cast<size_t>(n));
  if (n > 0 && H5Aread(attr, mem.get(), buffer.data()) < 0) return Fail(absl::StrCat(what, ": cannot be read"));
  for (hssize_t i = 0; i < n; ++i) {
    const char* s = buffer.data() + i * size;
    out->emplace_back(s, strnlen(s, size));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Mutex& Hdf5Mutex() {
  static absl::Mutex* mu = new absl::Mutex();
  return *mu;
}

void SilenceHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

Hdf5Handle& Hdf5Handle::operator=(Hdf5Handle&& other) noexcept {
  if (this != &other) {
    Reset();
    id_ = other.id_;
    close_ = other.close_;
    other.id_ = -1;
  }
  return *this;
}

void Hdf5Handle::Reset() {
  if (id_ >= 0 && close_ != nullptr) close_(id_);
  id_ = -1;
}

bool Hdf5HasLink(hid_t parent, const std::string& name) {
  // H5Lexists checks one path component at a time, so each prefix is checked first.
  size_t pos = 0;
  while (true) {
    pos = name.find('/', pos);
    const std::string prefix = name.substr(0, pos);
    if (H5Lexists(parent, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (pos == std::string::npos) return true;
    ++pos;
  }
}

absl::StatusOr<std::vector<std::string>> Hdf5LinkNames(hid_t group, const std::string& what) {
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
    static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
  };
  if (H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names) < 0) {
    return Fail(absl::StrCat(what, ": its members cannot be listed"));
  }
  return names;
}

bool Hdf5IsGroup(hid_t parent, const std::string& name) {
  if (!Hdf5HasLink(parent, name)) return false;
  H5O_info_t info;
  if (H5Oget_info_by_name(parent, name.c_str(), &info, H5P_DEFAULT) < 0) return false;
  return info.type == H5O_TYPE_GROUP;
}

absl::StatusOr<std::vector<std::string>> Hdf5ReadStrings(hid_t obj, const std::string& name, const std::string& what) {
  std::vector<std::string> out;
  if (H5Aexists(obj, name.c_str()) > 0) {
    Hdf5Handle attr(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
    if (!attr.ok()) return Fail(absl::StrCat(what, ": attribute '", name, "' cannot be opened"));
    absl::Status s = ReadStringAttribute(attr.get(), absl::StrCat(what, ": attribute '", name, "'"), &out);
    if (!s.ok()) return s;
    return out;
  }
  // Keras 2 splits an attribute larger than an HDF5 object header into name0, name1, ...
  int chunk = 0;
  for (; chunk < (1 << 16); ++chunk) {
    const std::string part = absl::StrCat(name, chunk);
    if (H5Aexists(obj, part.c_str()) <= 0) break;
    Hdf5Handle attr(H5Aopen(obj, part.c_str(), H5P_DEFAULT), H5Aclose);
    if (!attr.ok()) return Fail(absl::StrCat(what, ": attribute '", part, "' cannot be opened"));
    absl::Status s = ReadStringAttribute(attr.get(), absl::StrCat(what, ": attribute '", part, "'"), &out);
    if (!s.ok()) return s;
  }
  if (chunk == 0) return absl::NotFoundError(absl::StrCat(what, ": has no attribute '", name, "'"));
  return out;
}

absl::Status Hdf5WriteStrings(hid_t obj, const std::string& name, const std::vector<std::string>& values, bool scalar,
                              bool utf8) {
  const std::string what = absl::StrCat("attribute '", name, "'");
  if (!scalar && values.empty()) {
    const hsize_t zero = 0;
    Hdf5Handle space(H5Screate_simple(1, &zero, nullptr), H5Sclose);
    Hdf5Handle attr(H5Acreate2(obj, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.ok()) return absl::InternalError(absl::StrCat(what, ": cannot be created"));
    return absl::OkStatus();
  }
  Hdf5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), utf8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
  const hsize_t n = values.size();
  Hdf5Handle space(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr), H5Sclose);
  Hdf5Handle attr(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.ok()) return absl::InternalError(absl::StrCat(what, ": cannot be created"));
  std::vector<const char*> pointers;
  for (const std::string& v : values) pointers.push_back(v.c_str());
  if (H5Awrite(attr.get(), type.get(), pointers.data()) < 0) {
    return absl::InternalError(absl::StrCat(what, ": cannot be written"));
  }
  return absl::OkStatus();
}

absl::Status Hdf5WriteFloats(hid_t parent, const std::string& name, const std::vector<int64_t>& shape,
                             const std::vector<float>& values) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Hdf5Handle space(
      dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
      H5Sclose);
  Hdf5Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  Hdf5Handle set(H5Dcreate2(parent, name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
                 H5Dclose);
  if (!set.ok()) return absl::InternalError(absl::StrCat("dataset '", name, "': cannot be created"));
  if (!values.empty() && H5Dwrite(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
    return absl::InternalError(absl::StrCat("dataset '", name, "': cannot be written"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Hdf5DatasetInfo> Hdf5DatasetShape(hid_t parent, const std::string& name) {
  Hdf5Handle set(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!set.ok()) return Fail(absl::StrCat("dataset '", name, "' cannot be opened"));
  Hdf5Handle space(H5Dget_space(set.get()), H5Sclose);
  Hdf5Handle type(H5Dget_type(set.get()), H5Tclose);
  if (!space.ok() || !type.ok()) return Fail(absl::StrCat("dataset '", name, "' cannot be read"));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > 32) return Fail(absl::StrCat("dataset '", name, "' has a bad shape"));
  std::vector<hsize_t> dims(rank);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  Hdf5DatasetInfo info;
  info.shape.assign(dims.begin(), dims.end());
  info.is_float = H5Tget_class(type.get()) == H5T_FLOAT;
  return info;
}

absl::StatusOr<std::vector<float>> Hdf5ReadFloats(hid_t parent, const std::string& name, int64_t count) {
  Hdf5Handle set(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!set.ok()) return Fail(absl::StrCat("dataset '", name, "' cannot be opened"));
  std::vector<float> values(static_cast<size_t>(count));
  if (count > 0 && H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
    return Fail(absl::StrCat("dataset '", name, "' cannot be read (a truncated or damaged file?)"));
  }
  return values;
}

}  // namespace pstrain
