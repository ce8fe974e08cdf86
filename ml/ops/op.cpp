#include "vkml/ops/op.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "util.hpp"

namespace vkml::ops {

std::string to_string(const TensorDesc& desc) {
    return std::string(gpu::dtype_name(desc.dtype)) + desc.shape.str();
}

const char* activation_name(ActivationKind kind) {
    switch (kind) {
    case ActivationKind::None:
        return "none";
    case ActivationKind::Relu:
        return "Relu";
    case ActivationKind::LeakyRelu:
        return "LeakyRelu";
    case ActivationKind::Clip:
        return "Clip";
    case ActivationKind::Sigmoid:
        return "Sigmoid";
    case ActivationKind::HardSigmoid:
        return "HardSigmoid";
    case ActivationKind::HardSwish:
        return "HardSwish";
    case ActivationKind::Tanh:
        return "Tanh";
    case ActivationKind::Silu:
        return "Silu";
    case ActivationKind::Gelu:
        return "Gelu";
    case ActivationKind::Elu:
        return "Elu";
    case ActivationKind::Mish:
        return "Mish";
    }
    return "?";
}

void fail(const char* op, const std::string& field, const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, std::string(op) + ": " + field + ": " + what);
}

void unsupported(const char* op, const std::string& what) {
    throw Error(ErrorCode::Unsupported, std::string(op) + ": " + what);
}

void Op::record(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                const gpu::BufferRange& scratch) const {
    record(cmd, inputs, outputs, scratch, gpu::BufferRange{});
}

namespace {

// Bound buffers start at the device's storage-buffer offset alignment.
void check_aligned(const Op& op, const std::string& field, uint64_t offset, uint64_t align) {
    if (align > 1 && offset % align != 0)
        fail(op.type(), field, "starts at byte " + std::to_string(offset) +
                                   ", not a multiple of the device's storage-buffer alignment " + std::to_string(align));
}

void check_packed(const Op& op, const char* what, const gpu::BufferRange& packed, uint64_t align) {
    const Op::Prepack p = op.prepack();
    if (!p.bytes) fail(op.type(), what, "this op packs no input");
    if (!packed.buffer || packed.size < p.bytes)
        fail(op.type(), what, "needs " + std::to_string(p.bytes) + " bytes");
    check_aligned(op, what, packed.offset, align);
}

} // namespace

void Op::record_prepack(gpu::CommandBuffer& cmd, const Tensor& input, const gpu::BufferRange& packed) const {
    check_packed(*this, "prepacked", packed, device_.caps().min_storage_buffer_offset_alignment);
    const Prepack p = prepack();
    const TensorDesc& want = inputs_.at(p.input);
    if (!input || input.shape() != want.shape || input.dtype() != want.dtype || !input.contiguous())
        fail(type(), "inputs[" + std::to_string(p.input) + "]",
             "to pack is " + (input ? to_string({input.shape(), input.dtype()}) : std::string("no tensor")) +
                 ", the op was created for " + to_string(want));
    record_prepack_impl(cmd, input, packed);
}

void Op::record_prepack_impl(gpu::CommandBuffer&, const Tensor&, const gpu::BufferRange&) const {
    fail(type(), "prepacked", "this op packs no input");
}

void Op::record_prepacked_impl(gpu::CommandBuffer&, std::span<const Tensor>, std::span<const Tensor>,
                               const gpu::BufferRange&, const gpu::BufferRange&) const {
    fail(type(), "prepacked", "this op packs no input");
}

void Op::record(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                const gpu::BufferRange& scratch, const gpu::BufferRange& prepacked) const {
    auto check = [&](std::span<const Tensor> given, const std::vector<TensorDesc>& want, const char* what) {
        if (given.size() != want.size())
            fail(type(), what,
                 std::to_string(given.size()) + " tensors given, the op was created for " +
                     std::to_string(want.size()));
        const uint64_t align = device_.caps().min_storage_buffer_offset_alignment;
        for (size_t i = 0; i < given.size(); ++i) {
            const std::string field = std::string(what) + "[" + std::to_string(i) + "]";
            if (!given[i]) fail(type(), field, "no tensor bound");
            if (given[i].shape() != want[i].shape || given[i].dtype() != want[i].dtype)
                fail(type(), field,
                     "is " + to_string({given[i].shape(), given[i].dtype()}) + ", the op was created for " +
                         to_string(want[i]));
            if (!given[i].contiguous()) fail(type(), field, "is not contiguous");
            check_aligned(*this, field, given[i].byte_offset(), align);
        }
    };
    check(inputs, inputs_, "inputs");
    check(outputs, outputs_, "outputs");
    if (scratch_bytes_ && (!scratch.buffer || scratch.size < scratch_bytes_))
        fail(type(), "scratch", "needs " + std::to_string(scratch_bytes_) + " bytes");
    const uint64_t align = device_.caps().min_storage_buffer_offset_alignment;
    if (scratch_bytes_) check_aligned(*this, "scratch", scratch.offset, align);
    if (prepacked.buffer) {
        check_packed(*this, "prepacked", prepacked, align);
        record_prepacked_impl(cmd, inputs, outputs, scratch, prepacked);
    } else {
        record_impl(cmd, inputs, outputs, scratch);
    }
}

namespace detail {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
    const size_t rank = std::max(a.rank(), b.rank());
    std::array<int64_t, gpu::max_rank> dims{};
    for (size_t i = 0; i < rank; ++i) {
        const int64_t da = i < rank - a.rank() ? 1 : a[i - (rank - a.rank())];
        const int64_t db = i < rank - b.rank() ? 1 : b[i - (rank - b.rank())];
        if (da != db && da != 1 && db != 1)
            fail(op, "inputs", "shapes " + a.str() + " and " + b.str() + " do not broadcast");
        dims[i] = da == 1 ? db : da;
    }
    return Shape(std::span<const int64_t>(dims.data(), rank));
}

std::array<int64_t, gpu::max_rank> contiguous_strides(const Shape& shape) {
    std::array<int64_t, gpu::max_rank> s{};
    int64_t acc = 1;
    for (size_t i = shape.rank(); i-- > 0;) {
        s[i] = acc;
        acc *= shape[i];
    }
    return s;
}

std::array<int64_t, gpu::max_rank> broadcast_strides(const Shape& in, const Shape& out) {
    const auto own = contiguous_strides(in);
    std::array<int64_t, gpu::max_rank> s{};
    const size_t lead = out.rank() - in.rank();
    for (size_t i = 0; i < out.rank(); ++i) {
        if (i < lead) continue;
        const size_t j = i - lead;
        s[i] = in[j] == 1 && out[i] != 1 ? 0 : own[j];
    }
    return s;
}

size_t normalize_axis(const char* op, const std::string& field, int64_t axis, size_t rank) {
    const int64_t r = int64_t(rank);
    if (axis < -r || axis >= r)
        fail(op, field, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    return size_t(axis < 0 ? axis + r : axis);
}

const char* variant_name(DType dtype) {
    switch (dtype) {
    case DType::f32:
        return "f32";
    case DType::f16:
        return "f16";
    case DType::i32:
        return "i32";
    case DType::u8:
        return "u8";
    case DType::i64:
        return nullptr;
    }
    return nullptr;
}

gpu::ShaderId shader_for(gpu::Device& device, const char* op, std::string_view name,
                         std::string_view variant) {
    gpu::ShaderId id{};
    if (!gpu::find_shader(name, variant, id))
        unsupported(op, "no " + std::string(variant) + " variant of shader " + std::string(name));
    const auto& info = gpu::shader_info(id);
    const auto& caps = device.caps();
    auto need = [&](uint32_t bit, bool have, const char* what) {
        if ((info.requires_bits & bit) && !have)
            unsupported(op,
                        std::string(variant) + " needs " + what + ", which " + caps.device_name + " lacks");
    };
    need(gpu::shader_requires_storage16, caps.storage16, "16-bit storage");
    need(gpu::shader_requires_float16, caps.float16, "float16 arithmetic");
    need(gpu::shader_requires_coopmat_nv, caps.coopmat_nv, "VK_NV_cooperative_matrix");
    need(gpu::shader_requires_storage8, caps.storage8, "8-bit storage");
    need(gpu::shader_requires_int64, caps.int64, "64-bit integers");
    return id;
}

gpu::ShaderId shader_for(gpu::Device& device, const char* op, std::string_view name, DType dtype) {
    const char* v = variant_name(dtype);
    if (!v) unsupported(op, std::string("no kernel stores ") + gpu::dtype_name(dtype) + " tensors");
    return shader_for(device, op, name, std::string_view(v));
}

bool use_f16_math(const gpu::Device& device, DType dtype, MathPrecision math) {
    return dtype == DType::f16 && math == MathPrecision::Auto && device.caps().float16 &&
           device.caps().storage16;
}

void check_math(const char* op, MathPrecision math) {
    if (math != MathPrecision::Auto && math != MathPrecision::F32)
        fail(op, "math", "unknown precision " + std::to_string(uint32_t(math)));
}

void require_float(const char* op, const std::string& field, const TensorDesc& desc) {
    if (desc.dtype != DType::f32 && desc.dtype != DType::f16)
        fail(op, field, std::string("must be f32 or f16, is ") + gpu::dtype_name(desc.dtype));
}

std::vector<int64_t> axis_values(const char* op, const char* field, const char* what,
                                 const std::vector<int64_t>& v, size_t count, int64_t min, int64_t fallback) {
    if (v.empty()) return std::vector<int64_t>(count, fallback);
    if (v.size() != count)
        fail(op, field, "expected " + std::to_string(count) + " values for " + what + ", got " + std::to_string(v.size()));
    for (int64_t x : v)
        if (x < min || x > 65535) fail(op, field, "values must be in [" + std::to_string(min) + ", 65535]");
    return v;
}

uint32_t to_u32(const char* op, const std::string& field, int64_t value) {
    if (value < 0 || value > int64_t(UINT32_MAX))
        fail(op, field, std::to_string(value) + " does not fit the 32-bit indices vkml's kernels use");
    return uint32_t(value);
}

int64_t add_dims(const char* op, const std::string& field, int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
        fail(op, field, std::to_string(a) + " + " + std::to_string(b) + " overflows 64 bits");
    return r;
}

int64_t mul_dims(const char* op, const std::string& field, int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r))
        fail(op, field, std::to_string(a) + " x " + std::to_string(b) + " overflows 64 bits");
    return r;
}

Shape shape_of(const char* op, const std::string& field, std::span<const int64_t> dims) {
    try {
        return Shape(dims);
    } catch (const Error& e) {
        fail(op, field, e.what());
    }
}

int64_t floor_size(const char* op, const std::string& field, double v) {
    // 2^63 is exact as a double; a C++ cast of anything at or past it (or of NaN) is undefined.
    if (!(v > -1.0 && v < 9223372036854775808.0))
        fail(op, field, "gives the size " + std::to_string(v) + ", which is not a 64-bit size");
    return int64_t(std::floor(v));
}

int64_t tuning_knob(const char* name, int64_t fallback, int64_t lo, int64_t hi) {
    const char* v = std::getenv(name);
    return v ? std::clamp<int64_t>(std::strtoll(v, nullptr, 10), lo, hi) : fallback;
}

} // namespace detail
} // namespace vkml::ops
