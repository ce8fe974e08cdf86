// Where: a select with three-way broadcasting (elementwise_where).
#include <cstring>

#include "elementwise_kernels.hpp"
#include "util.hpp"

namespace vkml::ops {

namespace ew = detail::elementwise;

namespace {
// The push constants of elementwise_where (std430, as the shader declares them).
struct WherePush {
    uint32_t n = 0;
    std::array<uint32_t, gpu::max_rank> dims{}, sc{}, sx{}, sy{};
};
static_assert(sizeof(WherePush) == 100, "WherePush must match where.comp's push constants");
} // namespace

std::unique_ptr<Where> Where::create(gpu::Device& device, const WhereDesc& desc) {
    if (desc.condition.dtype != DType::u8)
        fail("Where", "condition",
             std::string("must be u8 (bool), is ") + gpu::dtype_name(desc.condition.dtype));
    const DType dtype = desc.x.dtype;
    if (dtype == DType::i64) fail("Where", "x", "must be f32, f16, i32 or u8, is i64");
    if (desc.y.dtype != dtype)
        fail("Where", "y",
             std::string("dtype ") + gpu::dtype_name(desc.y.dtype) + " differs from x's " +
                 gpu::dtype_name(dtype));
    const Shape out = detail::broadcast_shapes(
        "Where", detail::broadcast_shapes("Where", desc.condition.shape, desc.x.shape), desc.y.shape);
    const Shape shapes[] = {desc.condition.shape, desc.x.shape, desc.y.shape};
    const ew::BroadcastLayout layout = ew::broadcast_layout("Where", out, shapes);

    auto op = std::make_unique<Where>(device, Key{});
    op->inputs_ = {desc.condition, desc.x, desc.y};
    op->outputs_ = {{out, dtype}};
    op->rank_ = layout.rank;
    op->n_ = uint32_t(out.elements());
    WherePush push;
    push.n = op->n_;
    push.dims = layout.dims;
    push.sc = layout.strides[0];
    push.sx = layout.strides[1];
    push.sy = layout.strides[2];
    op->push_.resize(sizeof(WherePush) / 4);
    std::memcpy(op->push_.data(), &push, sizeof(WherePush));
    op->pipeline_ = &ew::pipeline(device, detail::shader_for(device, "Where", "elementwise_where", dtype), 4,
                                  sizeof(WherePush), {layout.rank});
    return op;
}

void Where::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                        std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), inputs[2].range(),
                                        outputs[0].range()};
    ew::dispatch(cmd, *pipeline_, buffers, push_.data(), uint32_t(push_.size() * 4), n_);
}

} // namespace vkml::ops
