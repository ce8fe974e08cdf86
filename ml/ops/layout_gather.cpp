// Gather and GatherElements (shaders/layout/gather.comp, gather_elements.comp).
#include "layout_common.hpp"

namespace vkml::ops {

std::unique_ptr<Gather> Gather::create(gpu::Device& device, const GatherDesc& desc) {
    const Shape& data = desc.data.shape;
    const Shape& idx = desc.indices.shape;
    if (data.rank() == 0) fail("Gather", "data", "must have rank 1 or more");
    detail::layout_require_index("Gather", "indices", desc.indices);
    const size_t a = detail::normalize_axis("Gather", "axis", desc.axis, data.rank());
    std::vector<int64_t> out;
    for (size_t i = 0; i < a; ++i) out.push_back(data[i]);
    for (int64_t d : idx.dims()) out.push_back(d);
    for (size_t i = a + 1; i < data.rank(); ++i) out.push_back(data[i]);
    if (out.size() > gpu::max_rank)
        fail("Gather", "indices",
             "give an output of rank " + std::to_string(out.size()) + ", more than vkml's maximum of 6");
    const int64_t words = detail::layout_words(desc.data.dtype);
    const Shape out_shape(std::span<const int64_t>(out.data(), out.size()));
    if (out_shape.elements() > int64_t(UINT32_MAX) / words || data.elements() > int64_t(UINT32_MAX) / words)
        fail("Gather", "data", "has more elements than 32-bit indices reach");
    const int64_t count = out_shape.elements() * words;
    int64_t inner = words;
    for (size_t i = a + 1; i < data.rank(); ++i) inner = detail::mul_dims("Gather", "data", inner, data[i]);
    if (data[a] > int64_t(INT32_MAX)) fail("Gather", "data", "axis is longer than 32-bit indices reach");

    auto op = std::unique_ptr<Gather>(new Gather(device));
    op->count_ = uint32_t(count);
    op->push_ = {op->count_, uint32_t(idx.elements()), uint32_t(data[a]), uint32_t(inner)};
    const char* shader = desc.indices.dtype == DType::i64 ? "layout_gather_i64" : "layout_gather";
    op->pipeline_ = &device.pipeline(
        {.shader = detail::shader_for(device, "Gather", shader, detail::layout_variant(desc.data.dtype)),
         .bindings = 3,
         .push_constant_bytes = sizeof(op->push_),
         .workgroup = {256, 1, 1}});
    op->inputs_ = {desc.data, desc.indices};
    op->outputs_ = {{out_shape, desc.data.dtype}};
    return op;
}

void Gather::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    if (count_ == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, count_);
}

std::unique_ptr<GatherElements> GatherElements::create(gpu::Device& device, const GatherElementsDesc& desc) {
    const Shape& data = desc.data.shape;
    const Shape& idx = desc.indices.shape;
    const size_t r = data.rank();
    if (r == 0) fail("GatherElements", "data", "must have rank 1 or more");
    detail::layout_require_index("GatherElements", "indices", desc.indices);
    const size_t a = detail::normalize_axis("GatherElements", "axis", desc.axis, r);
    if (idx.rank() != r)
        fail("GatherElements", "indices",
             "has rank " + std::to_string(idx.rank()) + ", data has " + std::to_string(r));
    for (size_t i = 0; i < r; ++i)
        if (i != a && idx[i] > data[i])
            fail("GatherElements", "indices",
                 idx.str() + " is larger than data " + data.str() + " in dimension " + std::to_string(i));
    const uint32_t words = detail::layout_words(desc.data.dtype);
    if (data.elements() > int64_t(UINT32_MAX / words) || idx.elements() > int64_t(UINT32_MAX / words))
        fail("GatherElements", "data", "has more elements than 32-bit indices reach");

    auto op = std::unique_ptr<GatherElements>(new GatherElements(device));
    auto& p = op->push_;
    const auto strides = detail::layout_strides(data);
    op->count_ = uint32_t(idx.elements());
    p[0] = op->count_;
    p[1] = uint32_t(r);
    p[2] = uint32_t(r - 1 - a); // the kernel counts dimensions innermost first
    p[3] = uint32_t(data[a]);
    for (size_t i = 0; i < r; ++i) {
        p[4 + (r - 1 - i)] = uint32_t(idx[i]);
        p[10 + (r - 1 - i)] = uint32_t(strides[i]);
    }
    const char* shader =
        desc.indices.dtype == DType::i64 ? "layout_gather_elements_i64" : "layout_gather_elements";
    op->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, "GatherElements", shader,
                                                                   detail::layout_variant(desc.data.dtype)),
                                      .bindings = 3,
                                      .push_constant_bytes = sizeof(op->push_),
                                      .workgroup = {256, 1, 1},
                                      .specialization = {words}});
    op->inputs_ = {desc.data, desc.indices};
    op->outputs_ = {{idx, desc.data.dtype}};
    return op;
}

void GatherElements::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                 std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    if (count_ == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, count_);
}

} // namespace vkml::ops
