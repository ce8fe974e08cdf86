// ScatterElements, ScatterND, GatherND and OneHot (shaders/layout/scatter.comp, gather_nd.comp,
// onehot.comp).
#include "layout_common.hpp"

namespace vkml::ops {

namespace {

const char* index_shader(const TensorDesc& indices, const char* i32, const char* i64) {
    return indices.dtype == DType::i64 ? i64 : i32;
}

} // namespace

std::unique_ptr<Scatter> Scatter::create(gpu::Device& device, const ScatterDesc& desc) {
    const char* op = desc.nd ? "ScatterND" : "ScatterElements";
    const Shape& data = desc.data.shape;
    const Shape& idx = desc.indices.shape;
    const Shape& upd = desc.updates.shape;
    detail::layout_require_index(op, "indices", desc.indices);
    if (desc.updates.dtype != desc.data.dtype) fail(op, "updates", "must have data's dtype");
    uint32_t reduction = 0;
    if (desc.reduction == "add") reduction = 1;
    else if (desc.reduction == "mul") reduction = 2;
    else if (desc.reduction == "max") reduction = 3;
    else if (desc.reduction == "min") reduction = 4;
    else if (desc.reduction != "none") fail(op, "reduction", "must be none, add, mul, max or min, is \"" + desc.reduction + "\"");
    const DType dt = desc.data.dtype;
    if (reduction != 0 && dt != DType::f32 && dt != DType::f16 && dt != DType::i32)
        unsupported(op, std::string("reduction ") + desc.reduction + " on " + gpu::dtype_name(dt) + " data");
    const uint32_t words = detail::layout_words(dt);
    if (data.elements() > int64_t(UINT32_MAX / words) || upd.elements() > int64_t(UINT32_MAX / words) ||
        idx.elements() > int64_t(INT32_MAX))
        fail(op, "data", "has more elements than 32-bit indices reach");
    if (data.rank() == 0) fail(op, "data", "must have rank 1 or more");

    auto s = std::unique_ptr<Scatter>(new Scatter(device));
    s->nd_ = desc.nd;
    s->sequential_ = reduction != 0;
    auto& p = s->push_;
    p[0] = uint32_t(upd.elements());
    const auto strides = detail::layout_strides(data);
    if (!desc.nd) {
        const size_t r = data.rank();
        const size_t a = detail::normalize_axis(op, "axis", desc.axis, r);
        if (idx != upd) fail(op, "updates", "shape " + upd.str() + " differs from indices " + idx.str());
        if (idx.rank() != r) fail(op, "indices", "has rank " + std::to_string(idx.rank()) + ", data has " + std::to_string(r));
        for (size_t i = 0; i < r; ++i)
            if (i != a && idx[i] > data[i])
                fail(op, "indices", idx.str() + " is larger than data " + data.str() + " in dimension " + std::to_string(i));
        p[1] = uint32_t(r);
        p[2] = uint32_t(r - 1 - a);
        p[3] = uint32_t(data[a]);
        for (size_t i = 0; i < r; ++i) {
            p[4 + (r - 1 - i)] = uint32_t(upd[i]);
            p[10 + (r - 1 - i)] = uint32_t(strides[i]);
        }
    } else {
        if (idx.rank() == 0) fail(op, "indices", "must have rank 1 or more");
        const int64_t q = idx[idx.rank() - 1];
        if (q < 1 || q > int64_t(data.rank()))
            fail(op, "indices", "last dimension " + std::to_string(q) + " must be in [1, " + std::to_string(data.rank()) + "]");
        std::vector<int64_t> want(idx.dims().begin(), idx.dims().end() - 1);
        for (size_t i = size_t(q); i < data.rank(); ++i) want.push_back(data[i]);
        if (upd != detail::shape_of(op, "updates", want))
            fail(op, "updates", "expected " + detail::shape_of(op, "updates", want).str() + ", got " + upd.str());
        p[1] = uint32_t(q);
        p[3] = uint32_t(q == int64_t(data.rank()) ? 1 : strides[size_t(q) - 1]);
        for (size_t m = 0; m < size_t(q); ++m) {
            p[4 + m] = uint32_t(data[m]);
            p[10 + m] = uint32_t(strides[m]);
        }
    }
    // Data is first copied whole into the output.
    detail::LayoutStridedView whole;
    whole.add(data.elements(), 1);
    s->copy_ = detail::make_layout_copy(device, op, dt, whole);
    const char* variant = dt == DType::f32 ? "f32" : detail::layout_variant(dt);
    s->pipeline_ = &device.pipeline(
        {.shader = detail::shader_for(device, op, index_shader(desc.indices, "layout_scatter", "layout_scatter_i64"),
                                      variant),
         .bindings = 3,
         .push_constant_bytes = sizeof(s->push_),
         .workgroup = {64, 1, 1},
         .specialization = {desc.nd ? 1u : 0u, reduction, words}});
    s->inputs_ = {desc.data, desc.indices, desc.updates};
    s->outputs_ = {desc.data};
    return s;
}

void Scatter::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                          const gpu::BufferRange&) const {
    detail::record_layout_copy(cmd, copy_, inputs[0], outputs[0]);
    if (push_[0] == 0) return;
    gpu::barrier::compute_to_compute(cmd);
    const gpu::BufferRange buffers[] = {inputs[1].range(), inputs[2].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, sequential_ ? 1 : push_[0]);
}

std::unique_ptr<GatherND> GatherND::create(gpu::Device& device, const GatherNDDesc& desc) {
    const char* op = "GatherND";
    const Shape& data = desc.data.shape;
    const Shape& idx = desc.indices.shape;
    detail::layout_require_index(op, "indices", desc.indices);
    if (idx.rank() == 0 || data.rank() == 0) fail(op, "indices", "indices and data must have rank 1 or more");
    const int64_t b = desc.batch_dims;
    if (b < 0 || b >= int64_t(std::min(idx.rank(), data.rank())))
        fail(op, "batch_dims", std::to_string(b) + " must be below both ranks");
    for (size_t i = 0; i < size_t(b); ++i)
        if (idx[i] != data[i]) fail(op, "indices", "batch dimension " + std::to_string(i) + " differs from data's");
    const int64_t q = idx[idx.rank() - 1];
    if (q < 1 || b + q > int64_t(data.rank()))
        fail(op, "indices", "last dimension " + std::to_string(q) + " must be in [1, data rank - batch_dims]");
    std::vector<int64_t> out(idx.dims().begin(), idx.dims().end() - 1);
    for (size_t i = size_t(b + q); i < data.rank(); ++i) out.push_back(data[i]);
    if (out.size() > gpu::max_rank) fail(op, "indices", "give an output of rank above 6");
    const Shape out_shape = detail::shape_of(op, "output", out);
    const uint32_t words = detail::layout_words(desc.data.dtype);
    if (data.elements() > int64_t(UINT32_MAX / words) || out_shape.elements() > int64_t(UINT32_MAX / words))
        fail(op, "data", "has more elements than 32-bit indices reach");
    const auto strides = detail::layout_strides(data);
    int64_t batches = 1;
    for (size_t i = 0; i < size_t(b); ++i) batches *= data[i];
    const int64_t tuples = idx.elements() / q;
    auto g = std::unique_ptr<GatherND>(new GatherND(device));
    auto& p = g->push_;
    p[0] = uint32_t(out_shape.elements());
    p[1] = uint32_t(q);
    p[2] = uint32_t(size_t(b + q) == data.rank() ? 1 : strides[size_t(b + q) - 1]);
    p[3] = uint32_t(batches == 0 ? 1 : std::max<int64_t>(tuples / batches, 1));
    p[4] = uint32_t(b == 0 ? 0 : strides[size_t(b) - 1]);
    for (size_t m = 0; m < size_t(q); ++m) {
        p[5 + m] = uint32_t(data[size_t(b) + m]);
        p[11 + m] = uint32_t(strides[size_t(b) + m]);
    }
    g->pipeline_ = &device.pipeline(
        {.shader = detail::shader_for(device, op, index_shader(desc.indices, "layout_gather_nd", "layout_gather_nd_i64"),
                                      detail::layout_variant(desc.data.dtype)),
         .bindings = 3,
         .push_constant_bytes = sizeof(g->push_),
         .workgroup = {256, 1, 1},
         .specialization = {words}});
    g->inputs_ = {desc.data, desc.indices};
    g->outputs_ = {{out_shape, desc.data.dtype}};
    return g;
}

void GatherND::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                           const gpu::BufferRange&) const {
    if (push_[0] == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, push_[0]);
}

std::unique_ptr<OneHot> OneHot::create(gpu::Device& device, const OneHotDesc& desc) {
    const char* op = "OneHot";
    if (desc.indices.dtype != DType::f32) detail::layout_require_index(op, "indices", desc.indices);
    if (desc.values.shape != Shape{2}) fail(op, "values", "expected [2] (off, on), got " + desc.values.shape.str());
    if (desc.depth < 1 || desc.depth > int64_t(INT32_MAX)) fail(op, "depth", "must be in [1, 2^31), is " + std::to_string(desc.depth));
    const Shape& idx = desc.indices.shape;
    const size_t a = detail::normalize_axis(op, "axis", desc.axis, idx.rank() + 1);
    std::vector<int64_t> out(idx.dims().begin(), idx.dims().end());
    out.insert(out.begin() + std::ptrdiff_t(a), desc.depth);
    if (out.size() > gpu::max_rank) fail(op, "indices", "give an output of rank above 6");
    const Shape out_shape = detail::shape_of(op, "output", out);
    const uint32_t words = detail::layout_words(desc.values.dtype);
    if (out_shape.elements() > int64_t(UINT32_MAX / words)) fail(op, "depth", "gives more elements than 32-bit indices reach");
    int64_t inner = 1;
    for (size_t i = a; i < idx.rank(); ++i) inner *= idx[i];
    auto o = std::unique_ptr<OneHot>(new OneHot(device));
    o->push_ = {uint32_t(out_shape.elements()), uint32_t(desc.depth), uint32_t(std::max<int64_t>(inner, 1))};
    o->pipeline_ = &device.pipeline(
        {.shader = detail::shader_for(device, op, desc.indices.dtype == DType::f32 ? "layout_onehot_f32" : index_shader(desc.indices, "layout_onehot", "layout_onehot_i64"),
                                      detail::layout_variant(desc.values.dtype)),
         .bindings = 3,
         .push_constant_bytes = sizeof(o->push_),
         .workgroup = {256, 1, 1},
         .specialization = {words}});
    o->inputs_ = {desc.indices, desc.values};
    o->outputs_ = {{out_shape, desc.values.dtype}};
    return o;
}

void OneHot::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                         const gpu::BufferRange&) const {
    if (push_[0] == 0) return;
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[1].range(), outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, push_, push_[0]);
}

} // namespace vkml::ops
