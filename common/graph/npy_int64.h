// The keys of a dynamic table's rows as numpy's .npy files: `pstrain export` writes them beside Keras
// weights (one vector per id input) and `--init_from` reads them back, so a Keras user maps ids with
// numpy or IntegerLookup and can hand the same files back to pstrain.
// Format (numpy's "NPY format" 1.0 and 2.0): "\x93NUMPY", major and minor version bytes, the header
// length (u16 little-endian in 1.0, u32 in 2.0), a Python dict literal header with 'descr',
// 'fortran_order' and 'shape', padded with spaces and ended by '\n', then the data.
// Thread-safety: pure functions over bytes.
#ifndef PSTRAIN_COMMON_GRAPH_NPY_INT64_H_
#define PSTRAIN_COMMON_GRAPH_NPY_INT64_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pstrain {

// The bytes of a .npy file (format 1.0) of `values` as a little-endian int64 vector, shape (n,),
// as numpy.load reads it.
std::string NpyInt64Vector(absl::Span<const int64_t> values);

// The values of a .npy file holding a vector (shape (n,), C order) of little-endian int64 or int32
// (numpy's '<i8', '<i4'; int32 widened). InvalidArgument, naming `what` and the problem (not .npy,
// another dtype or shape, a short file, a header over 64 KiB), for anything else.
absl::StatusOr<std::vector<int64_t>> ParseNpyIntVector(absl::string_view bytes, const std::string& what);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_NPY_INT64_H_
