#include "elementwise_kernels.hpp"

#include <cstring>

#include "util.hpp"

namespace vkml::ops::detail::elementwise {

BroadcastLayout broadcast_layout(const char* op, const Shape& out, std::span<const Shape> inputs) {
    to_u32(op, "output elements", out.elements());
    std::array<std::array<int64_t, gpu::max_rank>, 3> strides{};
    for (size_t j = 0; j < inputs.size(); ++j) {
        to_u32(op, "input " + std::to_string(j) + " elements", inputs[j].elements());
        strides[j] = broadcast_strides(inputs[j], out);
    }

    // Walk outermost to innermost; a dimension joins its outer neighbour when every operand steps
    // over the neighbour exactly as over the whole of this dimension (contiguous, or broadcast in
    // both). Size-1 dimensions never need an index.
    struct Dim {
        int64_t size;
        std::array<int64_t, 3> stride;
    };
    std::vector<Dim> dims;
    for (size_t d = 0; d < out.rank(); ++d) {
        if (out[d] == 1) continue;
        const Dim cur{out[d], {strides[0][d], strides[1][d], strides[2][d]}};
        if (!dims.empty()) {
            Dim& outer = dims.back();
            bool merge = true;
            for (size_t j = 0; j < inputs.size(); ++j)
                merge = merge && outer.stride[j] == cur.stride[j] * cur.size;
            if (merge) {
                outer.size *= cur.size;
                outer.stride = cur.stride;
                continue;
            }
        }
        dims.push_back(cur);
    }

    BroadcastLayout layout;
    bool flat = dims.size() <= 1;
    if (dims.size() == 1)
        for (size_t j = 0; j < inputs.size(); ++j) flat = flat && dims[0].stride[j] == 1;
    if (flat) return layout; // rank 0: the flat index serves every operand
    layout.rank = uint32_t(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
        layout.dims[d] = uint32_t(dims[d].size);
        for (size_t j = 0; j < inputs.size(); ++j) layout.strides[j][d] = uint32_t(dims[d].stride[j]);
    }
    return layout;
}

BinaryPush binary_push(uint32_t n, const BroadcastLayout& layout, const Activation& activation, float scale) {
    BinaryPush p;
    p.n = n;
    p.alpha = activation.alpha;
    p.beta = activation.beta;
    p.scale = scale;
    p.dims = layout.dims;
    p.sa = layout.strides[0];
    p.sb = layout.strides[1];
    return p;
}

std::vector<uint32_t> as_words(const BinaryPush& push) {
    static_assert(sizeof(BinaryPush) == 88, "BinaryPush must match binary.comp's push constants");
    std::vector<uint32_t> words(sizeof(BinaryPush) / 4);
    std::memcpy(words.data(), &push, sizeof(BinaryPush));
    return words;
}

void check_activation(const char* op, const Activation& activation, DType dtype) {
    if (activation.kind == ActivationKind::None) return;
    if (uint32_t(activation.kind) > uint32_t(ActivationKind::Mish))
        fail(op, "activation", "unknown kind " + std::to_string(uint32_t(activation.kind)));
    if (dtype != DType::f32 && dtype != DType::f16)
        fail(op, "activation",
             std::string(activation_name(activation.kind)) + " needs a float result, the op stores " +
                 gpu::dtype_name(dtype));
    if (activation.kind == ActivationKind::Clip && !(activation.alpha <= activation.beta))
        fail(op, "activation",
             "Clip min " + std::to_string(activation.alpha) + " exceeds max " +
                 std::to_string(activation.beta));
}

const gpu::Pipeline& pipeline(gpu::Device& device, gpu::ShaderId shader, uint32_t bindings,
                              uint32_t push_bytes, std::vector<uint32_t> specialization) {
    return device.pipeline({.shader = shader,
                            .bindings = bindings,
                            .push_constant_bytes = push_bytes,
                            .workgroup = {workgroup_size, 1, 1},
                            .specialization = std::move(specialization)});
}

void dispatch(gpu::CommandBuffer& cmd, const gpu::Pipeline& pipeline,
              std::span<const gpu::BufferRange> buffers, const void* push, uint32_t push_bytes, uint32_t n) {
    if (n == 0) return;
    cmd.dispatch(pipeline, buffers, push, push_bytes, cmd.groups_for(pipeline, n));
}

void dispatch_vec(gpu::CommandBuffer& cmd, const gpu::Pipeline& scalar, const gpu::Pipeline* vec4,
                  std::span<const gpu::BufferRange> buffers, const void* push, uint32_t push_bytes, uint32_t n) {
    bool aligned = vec4 != nullptr;
    for (const gpu::BufferRange& b : buffers) aligned = aligned && b.offset % 16 == 0;
    if (!aligned) return dispatch(cmd, scalar, buffers, push, push_bytes, n);
    if (n == 0) return;
    cmd.dispatch(*vec4, buffers, push, push_bytes, cmd.groups_for(*vec4, (uint64_t(n) + 3) / 4));
}

} // namespace vkml::ops::detail::elementwise
