#include "vkml/gpu/tensor.hpp"

#include <algorithm>

#include "vkml/error.hpp"
#include "vkml/gpu/device.hpp"

namespace vkml::gpu {

size_t dtype_size(DType dtype) {
    switch (dtype) {
    case DType::f32:
        return 4;
    case DType::f16:
        return 2;
    case DType::i32:
        return 4;
    case DType::i64:
        return 8;
    case DType::u8:
        return 1;
    }
    return 0;
}

const char* dtype_name(DType dtype) {
    switch (dtype) {
    case DType::f32:
        return "f32";
    case DType::f16:
        return "f16";
    case DType::i32:
        return "i32";
    case DType::i64:
        return "i64";
    case DType::u8:
        return "u8";
    }
    return "?";
}

Shape::Shape(std::initializer_list<int64_t> dims)
    : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
    if (dims.size() > max_rank)
        throw Error(ErrorCode::InvalidArgument, "tensor rank " + std::to_string(dims.size()) +
                                                    " exceeds vkml's maximum of " + std::to_string(max_rank));
    // Every product of dimensions (element counts, strides) must fit 64 bits, also in an empty
    // tensor such as [0, 2^40, 2^40], whose strides would overflow: the product of the dimensions
    // other than 0 and -1 (unknown) is checked.
    int64_t product = 1;
    for (int64_t d : dims) {
        if (d < 0 && d != -1)
            throw Error(ErrorCode::InvalidArgument, "negative dimension " + std::to_string(d));
        if (d > 0 && __builtin_mul_overflow(product, d, &product)) {
            std::string s = "[";
            for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
            throw Error(ErrorCode::InvalidArgument,
                        "shape " + s + "] has more elements than 64 bits can count");
        }
    }
    std::copy(dims.begin(), dims.end(), dims_.begin());
    rank_ = dims.size();
}

int64_t Shape::elements() const {
    // Checked: a model's huge Resize scales or pads must be an error, not a wrapped product.
    int64_t n = 1;
    for (size_t i = 0; i < rank_; ++i)
        if (__builtin_mul_overflow(n, dims_[i], &n))
            throw Error(ErrorCode::InvalidArgument, "shape " + str() + " has more elements than 64 bits can count");
    return n;
}

std::string Shape::str() const {
    std::string s = "[";
    for (size_t i = 0; i < rank_; ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
    return s + "]";
}

bool Shape::operator==(const Shape& o) const {
    return rank_ == o.rank_ && std::equal(dims_.begin(), dims_.begin() + rank_, o.dims_.begin());
}

namespace {
// The products cannot overflow: the Shape constructor checked the product of the non-zero
// dimensions, and once a 0 is multiplied in they stay 0.
void contiguous_strides(const Shape& shape, std::array<int64_t, max_rank>& strides) {
    int64_t s = 1;
    for (size_t i = shape.rank(); i-- > 0;) {
        strides[i] = s;
        s *= shape[i];
    }
}
} // namespace

Tensor::Tensor(Device& device, const Shape& shape, DType dtype, const std::string& name)
    : shape_(shape), dtype_(dtype) {
    for (int64_t d : shape.dims())
        if (d < 0)
            throw Error(ErrorCode::InvalidArgument,
                        "tensor '" + name + "' has unresolved shape " + shape.str());
    contiguous_strides(shape_, strides_);
    // Rounded up to 16 bytes so vectorised shaders may read a whole vec4 at the tail.
    const uint64_t size = std::max<uint64_t>((bytes() + 15) / 16 * 16, 16);
    buffer_ = std::make_shared<Buffer>(device, BufferDesc{.size = size, .name = name});
}

Tensor::Tensor(std::shared_ptr<Buffer> buffer, uint64_t byte_offset, const Shape& shape, DType dtype)
    : buffer_(std::move(buffer)), offset_(byte_offset), shape_(shape), dtype_(dtype) {
    contiguous_strides(shape_, strides_);
    if (!buffer_ || bytes() > buffer_->size() || byte_offset > buffer_->size() - bytes())
        throw Error(ErrorCode::InvalidArgument, "tensor view " + shape.str() + " " + dtype_name(dtype) +
                                                    " at byte " + std::to_string(byte_offset) +
                                                    " does not fit its buffer");
}

uint64_t Tensor::bytes() const {
    const uint64_t n = uint64_t(elements()), size = dtype_size(dtype_);
    // Room for the rounding up to 16 bytes the allocation adds.
    if (n > (UINT64_MAX - 15) / size)
        throw Error(ErrorCode::InvalidArgument, "tensor " + shape_.str() + " " + dtype_name(dtype_) +
                                                    " needs more bytes than 64 bits can count");
    return n * size;
}

bool Tensor::contiguous() const {
    int64_t s = 1;
    for (size_t i = shape_.rank(); i-- > 0;) {
        if (shape_[i] != 1 && strides_[i] != s) return false;
        s *= shape_[i];
    }
    return true;
}

BufferRange Tensor::range() const {
    return {buffer_ ? buffer_->vk() : VK_NULL_HANDLE, offset_, std::max<uint64_t>(bytes(), 1)};
}

Tensor Tensor::reshape(const Shape& shape) const {
    if (!contiguous())
        throw Error(ErrorCode::InvalidArgument, "reshape of a non-contiguous tensor " + shape_.str());
    Shape out = shape;
    int infer = -1;
    int64_t known = 1;
    for (size_t i = 0; i < out.rank(); ++i) {
        if (out[i] == -1) {
            if (infer >= 0)
                throw Error(ErrorCode::InvalidArgument, "reshape to " + shape.str() + ": more than one -1");
            infer = int(i);
        } else {
            known *= out[i]; // cannot overflow: Shape checked the product of its dimensions
        }
    }
    if (infer >= 0) out[size_t(infer)] = known ? elements() / known : 0;
    if (out.elements() != elements())
        throw Error(ErrorCode::InvalidArgument,
                    "reshape " + shape_.str() + " to " + shape.str() + ": element counts differ");
    Tensor t = *this;
    t.shape_ = out;
    contiguous_strides(t.shape_, t.strides_);
    return t;
}

Tensor Tensor::squeeze(int axis) const {
    const int rank = int(shape_.rank());
    const int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || shape_[size_t(a)] != 1)
        throw Error(ErrorCode::InvalidArgument, "squeeze axis " + std::to_string(axis) + " of " +
                                                    shape_.str() + ": not a size-1 dimension");
    std::array<int64_t, max_rank> dims{}, strides{};
    size_t n = 0;
    for (int i = 0; i < rank; ++i) {
        if (i == a) continue;
        dims[n] = shape_[size_t(i)];
        strides[n++] = strides_[size_t(i)];
    }
    Tensor t = *this;
    t.shape_ = Shape(std::span<const int64_t>(dims.data(), n));
    t.strides_ = strides;
    return t;
}

Tensor Tensor::unsqueeze(int axis) const {
    const int rank = int(shape_.rank());
    const int a = axis < 0 ? axis + rank + 1 : axis;
    if (a < 0 || a > rank || rank == int(max_rank))
        throw Error(ErrorCode::InvalidArgument,
                    "unsqueeze axis " + std::to_string(axis) + " of " + shape_.str());
    std::array<int64_t, max_rank> dims{}, strides{};
    size_t n = 0;
    for (int i = 0; i <= rank; ++i) {
        if (i == a) {
            dims[n] = 1;
            strides[n++] = i < rank ? strides_[size_t(i)] * shape_[size_t(i)] : 1;
        }
        if (i < rank) {
            dims[n] = shape_[size_t(i)];
            strides[n++] = strides_[size_t(i)];
        }
    }
    Tensor t = *this;
    t.shape_ = Shape(std::span<const int64_t>(dims.data(), n));
    t.strides_ = strides;
    return t;
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
    if (shape_.rank() == 0 || begin < 0 || end > shape_[0] || begin >= end)
        throw Error(ErrorCode::InvalidArgument, "slice [" + std::to_string(begin) + ", " +
                                                    std::to_string(end) + ") of the outer dimension of " +
                                                    shape_.str());
    Tensor t = *this;
    t.offset_ += uint64_t(begin * strides_[0]) * dtype_size(dtype_);
    t.shape_[0] = end - begin;
    return t;
}

} // namespace vkml::gpu
