// Small pieces of the HDF5 C API that keras_weights.cc needs: handles that close themselves, string
// and string-list attributes, float32 datasets. Errors are absl::Status values naming the object;
// HDF5's own error printing is off (SilenceHdf5Errors).
// Thread-safety: none; the caller holds Hdf5Mutex() around every use.
#ifndef PSTRAIN_COMMON_GRAPH_HDF5_IO_H_
#define PSTRAIN_COMMON_GRAPH_HDF5_IO_H_

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace pstrain {

// The one lock around HDF5 in this process (Debian's libhdf5 is built without thread-safety).
absl::Mutex& Hdf5Mutex();

// Turns off HDF5's printing of its error stack to stderr (errors come back as Status). Idempotent.
void SilenceHdf5Errors();

// An HDF5 identifier closed with the close function of its kind when it goes out of scope.
class Hdf5Handle {
 public:
  using CloseFn = herr_t (*)(hid_t);
  Hdf5Handle() = default;
  Hdf5Handle(hid_t id, CloseFn close) : id_(id), close_(close) {}
  Hdf5Handle(Hdf5Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Hdf5Handle& operator=(Hdf5Handle&& other) noexcept;
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;
  ~Hdf5Handle() { Reset(); }

  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  void Reset();
  // Gives up ownership: the caller closes the returned id.
  hid_t Release() {
    const hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_ = -1;
  CloseFn close_ = nullptr;
};

// Whether `parent` has a link `name` (a child group or dataset); false on any error.
bool Hdf5HasLink(hid_t parent, const std::string& name);
// The names of `group`'s links, in HDF5's name order.
absl::StatusOr<std::vector<std::string>> Hdf5LinkNames(hid_t group, const std::string& what);
// True when `parent`/`name` is a group.
bool Hdf5IsGroup(hid_t parent, const std::string& name);

// The strings of attribute `name` of `obj`: a scalar or 1-D string attribute (variable or fixed
// length), or an empty numeric one (Keras 2 writes an empty float array for a layer with no
// weights). Keras 2 splits a long list into `name0`, `name1`...: those are joined.
// NotFound when there is no such attribute; InvalidArgument when it is not a list of strings.
absl::StatusOr<std::vector<std::string>> Hdf5ReadStrings(hid_t obj, const std::string& name, const std::string& what);

// Writes attribute `name` on `obj`: variable-length strings, as a scalar when `scalar` (one value),
// else a 1-D list (an empty list is written as an empty float64 array, as Keras 2 does).
absl::Status Hdf5WriteStrings(hid_t obj, const std::string& name, const std::vector<std::string>& values, bool scalar,
                              bool utf8);

// Writes a float32 little-endian dataset at `parent`/`name` (intermediate groups created).
absl::Status Hdf5WriteFloats(hid_t parent, const std::string& name, const std::vector<int64_t>& shape,
                             const std::vector<float>& values);

// The shape of dataset `parent`/`name`, and whether it holds floating-point numbers.
struct Hdf5DatasetInfo {
  std::vector<int64_t> shape;
  bool is_float = false;
};
absl::StatusOr<Hdf5DatasetInfo> Hdf5DatasetShape(hid_t parent, const std::string& name);
// Reads dataset `parent`/`name` as float32 (HDF5 converts float64 and other float sizes); `count`
// is the number of values it holds.
absl::StatusOr<std::vector<float>> Hdf5ReadFloats(hid_t parent, const std::string& name, int64_t count);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_HDF5_IO_H_
