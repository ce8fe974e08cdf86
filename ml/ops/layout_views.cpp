// Reshape, Flatten, Squeeze and Unsqueeze: ONNX shape rules, applied as views (no kernel).
#include <algorithm>

#include "layout_common.hpp"

namespace vkml::ops {
namespace {

Shape checked_shape(const char* op, const std::string& field, const std::vector<int64_t>& dims) {
    if (dims.size() > gpu::max_rank)
        fail(op, field, "gives rank " + std::to_string(dims.size()) + ", more than vkml's maximum of 6");
    return Shape(std::span<const int64_t>(dims));
}

// Marks each normalized axis, failing on repeats.
std::vector<bool> axis_set(const char* op, std::span<const int64_t> axes, size_t rank) {
    std::vector<bool> set(rank, false);
    for (int64_t a : axes) {
        const size_t i = detail::normalize_axis(op, "axes", a, rank);
        if (set[i]) fail(op, "axes", detail::layout_list(axes) + " repeats axis " + std::to_string(i));
        set[i] = true;
    }
    return set;
}

} // namespace

Shape reshape_shape(const Shape& in, std::span<const int64_t> shape, bool allowzero) {
    std::vector<int64_t> out(shape.begin(), shape.end());
    int64_t infer = -1, known = 1;
    bool has_zero = false;
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == -1) {
            if (infer >= 0) fail("Reshape", "shape", detail::layout_list(shape) + " has more than one -1");
            infer = int64_t(i);
            continue;
        }
        if (out[i] < -1) fail("Reshape", "shape", detail::layout_list(shape) + " has a dimension below -1");
        if (out[i] == 0) {
            has_zero = true;
            if (!allowzero) {
                if (i >= in.rank())
                    fail("Reshape", "shape",
                         detail::layout_list(shape) + ": 0 at index " + std::to_string(i) +
                             " copies no dimension of " + in.str());
                out[i] = in[i];
            }
        }
        if (__builtin_mul_overflow(known, out[i], &known))
            fail("Reshape", "shape", detail::layout_list(shape) + " has more elements than 64 bits count");
    }
    if (allowzero && has_zero && infer >= 0)
        fail("Reshape", "shape", detail::layout_list(shape) + ": allowzero forbids 0 together with -1");
    if (infer >= 0) {
        if (known == 0 || in.elements() % known != 0)
            fail("Reshape", "shape", detail::layout_list(shape) + " cannot infer -1 for " + in.str());
        out[size_t(infer)] = in.elements() / known;
    }
    const Shape result = checked_shape("Reshape", "shape", out);
    if (result.elements() != in.elements())
        fail("Reshape", "shape",
             "reshaping " + in.str() + " to " + result.str() + " changes the element count");
    return result;
}

Shape flatten_shape(const Shape& in, int64_t axis) {
    const int64_t r = int64_t(in.rank());
    if (axis < -r || axis > r)
        fail("Flatten", "axis",
             std::to_string(axis) + " is out of range [-" + std::to_string(r) + ", " + std::to_string(r) +
                 "]");
    const size_t a = size_t(axis < 0 ? axis + r : axis);
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < in.rank(); ++i) {
        int64_t& part = i < a ? outer : inner;
        if (__builtin_mul_overflow(part, in[i], &part))
            fail("Flatten", "input", in.str() + " has more elements than 64 bits count");
    }
    return Shape{outer, inner};
}

Shape squeeze_shape(const Shape& in, std::span<const int64_t> axes) {
    const std::vector<bool> drop = axis_set("Squeeze", axes, in.rank());
    std::vector<int64_t> out;
    for (size_t i = 0; i < in.rank(); ++i) {
        if (axes.empty() ? in[i] == 1 : drop[i]) {
            if (in[i] != 1)
                fail("Squeeze", "axes",
                     "dimension " + std::to_string(i) + " of " + in.str() + " has size " +
                         std::to_string(in[i]) + ", not 1");
            continue;
        }
        out.push_back(in[i]);
    }
    return checked_shape("Squeeze", "axes", out);
}

Shape unsqueeze_shape(const Shape& in, std::span<const int64_t> axes) {
    const size_t rank = in.rank() + axes.size();
    if (rank > gpu::max_rank)
        fail("Unsqueeze", "axes", "gives rank " + std::to_string(rank) + ", more than vkml's maximum of 6");
    const std::vector<bool> add = axis_set("Unsqueeze", axes, rank);
    std::vector<int64_t> out;
    size_t j = 0;
    for (size_t i = 0; i < rank; ++i) out.push_back(add[i] ? 1 : in[j++]);
    return checked_shape("Unsqueeze", "axes", out);
}

Tensor reshape_view(const Tensor& t, std::span<const int64_t> shape, bool allowzero) {
    return t.reshape(reshape_shape(t.shape(), shape, allowzero));
}

Tensor flatten_view(const Tensor& t, int64_t axis) {
    return t.reshape(flatten_shape(t.shape(), axis));
}

Tensor squeeze_view(const Tensor& t, std::span<const int64_t> axes) {
    return t.reshape(squeeze_shape(t.shape(), axes));
}

Tensor unsqueeze_view(const Tensor& t, std::span<const int64_t> axes) {
    return t.reshape(unsqueeze_shape(t.shape(), axes));
}

} // namespace vkml::ops
