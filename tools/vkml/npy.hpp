#pragma once
// NumPy .npy files (format versions 1.0 to 3.0), as `vkml run` reads inputs and writes outputs:
// little-endian f2/f4/f8, i1/i2/i4/i8, u1/u2/u4 and bool, C order. Anything else (big-endian,
// Fortran order, object arrays, a cut-off file) is an error naming the file and the problem.
#include <filesystem>

#include "vkml/graph/tensor_data.hpp"

namespace vkml::tool {

// f8 arrays become f32, i1/i2 and u2/u4 become i32 or i64 (the dtypes vkml holds), values kept.
graph::TensorData read_npy(const std::filesystem::path& path);
void write_npy(const std::filesystem::path& path, const graph::TensorData& tensor);
// The same, from and to memory (tests); `source` names the data in errors.
graph::TensorData parse_npy(const std::string& bytes, const std::string& source);
std::string format_npy(const graph::TensorData& tensor);

} // namespace vkml::tool
