#pragma once
// Tensor: a typed, shaped view of a range of a GPU buffer. Views (reshape, squeeze, unsqueeze, a
// slice of the outermost dimension) share the buffer and never copy.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vkml/gpu/buffer.hpp"

namespace vkml::gpu {

enum class DType : uint8_t { f32, f16, i32, i64, u8 };
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

inline constexpr size_t max_rank = 6;

// Up to 6 dimensions, outermost first (NCHW for images).
class Shape {
public:
    Shape() = default;
    Shape(std::initializer_list<int64_t> dims);
    explicit Shape(std::span<const int64_t> dims);

    size_t rank() const { return rank_; }
    int64_t operator[](size_t i) const { return dims_[i]; }
    int64_t& operator[](size_t i) { return dims_[i]; }
    int64_t elements() const;
    std::span<const int64_t> dims() const { return {dims_.data(), rank_}; }
    std::string str() const; // "[1, 3, 224, 224]"
    bool operator==(const Shape& other) const;

private:
    std::array<int64_t, max_rank> dims_{};
    size_t rank_ = 0;
};

class Tensor {
public:
    Tensor() = default;
    // Allocates a device-local buffer for a contiguous tensor.
    Tensor(Device& device, const Shape& shape, DType dtype, const std::string& name = {});
    // A contiguous view of an existing buffer, sharing its ownership.
    Tensor(std::shared_ptr<Buffer> buffer, uint64_t byte_offset, const Shape& shape, DType dtype);

    const Shape& shape() const { return shape_; }
    DType dtype() const { return dtype_; }
    // Strides in elements, outermost first; contiguous tensors have the last stride 1.
    std::span<const int64_t> strides() const { return {strides_.data(), shape_.rank()}; }
    int64_t elements() const { return shape_.elements(); }
    uint64_t bytes() const; // checked: a size past 2^64 - 16 bytes is an error naming the shape
    uint64_t byte_offset() const { return offset_; }
    bool contiguous() const;
    const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
    BufferRange range() const;
    explicit operator bool() const { return buffer_ != nullptr; }

    // Views. Each throws vkml::Error(InvalidArgument) naming the shapes when it cannot apply.
    Tensor reshape(const Shape& shape) const; // same element count, contiguous source; -1 infers one dim
    Tensor squeeze(int axis) const;           // drops a size-1 dim (negative axis counts from the end)
    Tensor unsqueeze(int axis) const;         // inserts a size-1 dim
    Tensor slice(int64_t begin, int64_t end) const; // [begin, end) of the outermost dim

private:
    std::shared_ptr<Buffer> buffer_;
    uint64_t offset_ = 0;
    Shape shape_;
    std::array<int64_t, max_rank> strides_{};
    DType dtype_ = DType::f32;
};

} // namespace vkml::gpu
