// Cast (elementwise_cast_<source>, the variant naming the destination; *_to_i64 for i64).
#include "elementwise_kernels.hpp"
#include "util.hpp"

namespace vkml::ops {

namespace ew = detail::elementwise;

std::unique_ptr<Cast> Cast::create(gpu::Device& device, const CastDesc& desc) {
    if (uint32_t(desc.input.dtype) > uint32_t(DType::u8)) fail("Cast", "input", "unknown dtype");
    if (uint32_t(desc.to) > uint32_t(DType::u8)) fail("Cast", "to", "unknown dtype");
    if (desc.to_bool && desc.to != DType::u8)
        fail("Cast", "to_bool", std::string("needs to = u8 (vkml's bool), is ") + gpu::dtype_name(desc.to));
    const bool to_i64 = desc.to == DType::i64;
    const std::string shader =
        std::string("elementwise_cast_") + gpu::dtype_name(desc.input.dtype) + (to_i64 ? "_to_i64" : "");
    auto op = std::make_unique<Cast>(device, Key{});
    op->inputs_ = {desc.input};
    op->outputs_ = {{desc.input.shape, desc.to}};
    op->n_ = detail::to_u32("Cast", "input elements", desc.input.shape.elements());
    // f32 <-> f16 (a network's input and output conversions) 4 elements an invocation: on an H200
    // esrgan-slim's 960x540 input cast took 11 -> 8 us, its 1920x1080 output cast 21 -> 12 us (at
    // 1080p in: 28 -> 17, out: 80 -> 38 us).
    // (Where every binding starts on 16 bytes: ew::dispatch_vec picks at record time.)
    auto is_float = [](DType t) { return t == DType::f32 || t == DType::f16; };
    const gpu::ShaderId id =
        detail::shader_for(device, "Cast", shader, to_i64 ? "i32" : detail::variant_name(desc.to));
    op->pipeline_ = &ew::pipeline(device, id, 2, sizeof(uint32_t), {uint32_t(desc.to_bool), 1});
    if (is_float(desc.input.dtype) && is_float(desc.to) && op->n_ % 4 == 0)
        op->vec_pipeline_ = &ew::pipeline(device, id, 2, sizeof(uint32_t), {uint32_t(desc.to_bool), 4});
    return op;
}

void Cast::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                       std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), outputs[0].range()};
    ew::dispatch_vec(cmd, *pipeline_, vec_pipeline_, buffers, &n_, sizeof(n_), n_);
}

} // namespace vkml::ops
