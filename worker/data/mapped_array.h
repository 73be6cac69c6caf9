// An uninitialised array of T in its own anonymous memory mapping. Freeing it returns its pages
// to the system at once, whatever the heap's thresholds, so the temporary buffers of a large read
// never stay behind in the heap next to the data they were copied into.
// Thread-safety: a value (movable, not copyable); no sharing rules of its own.
#ifndef PSTRAIN_WORKER_DATA_MAPPED_ARRAY_H_
#define PSTRAIN_WORKER_DATA_MAPPED_ARRAY_H_

#include <sys/mman.h>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace pstrain {

template <typename T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T>, "MappedArray holds plain values");

 public:
  MappedArray() = default;
  // `size` elements; ok() is false when the system has no memory for them.
  explicit MappedArray(size_t size) : bytes_(size * sizeof(T)) {
    if (bytes_ == 0) return;
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) data_ = static_cast<T*>(p);
  }
  ~MappedArray() { Release(); }
  MappedArray(MappedArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  MappedArray& operator=(MappedArray&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }

  bool ok() const { return data_ != nullptr || bytes_ == 0; }
  T* get() const { return data_; }
  T& operator[](size_t i) const { return data_[i]; }

 private:
  void Release() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
    data_ = nullptr;
  }

  T* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_MAPPED_ARRAY_H_
