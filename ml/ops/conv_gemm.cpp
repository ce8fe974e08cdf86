// Gemm and MatMul: both are the strided batched GEMM of conv/gemm.comp, set up through strides.
#include <vector>

#include "conv_common.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/conv.hpp"

namespace vkml::ops {

namespace {

// Gemm and MatMul with at most four rows of A (VKML_GEMV_MAX_ROWS; 0: never) run on
// conv/gemv.comp, K split across each workgroup: the tiles would pad A to 16 or more rows and walk
// all of K in a handful of workgroups (resnet18's 512 -> 1000 classifier at batch 1 took 55 us on
// an H200 so).
struct GemmKernel {
    const gpu::Pipeline* pipeline = nullptr;
    std::array<uint32_t, 3> groups{};
    bool vector = false;
    Accumulation accumulation = Accumulation::F32; // what the kernel sums in
};

GemmKernel gemm_kernel(gpu::Device& device, const char* op, DType dtype, const detail::conv::GemmSpec& spec,
                       Accumulation want) {
    static const int64_t max_rows = detail::tuning_knob("VKML_GEMV_MAX_ROWS", 4, 0, 4);
    uint64_t batches = 1;
    for (uint32_t b : spec.batch) batches *= b;
    const uint64_t columns = spec.b_sk == 1 ? 8 : 32; // per workgroup (conv/gemv.comp)
    const uint64_t column_groups = (spec.n + columns - 1) / columns;
    const auto& limits = device.caps().max_workgroup_count;
    if (spec.m <= uint64_t(max_rows) && column_groups <= limits[0] && batches <= limits[2]) {
        GemmKernel k;
        k.pipeline = &device.pipeline({.shader = detail::shader_for(device, op, "conv_gemv", dtype),
                                       .bindings = 5,
                                       .push_constant_bytes = 16,
                                       .workgroup = {256, 1, 1},
                                       .specialization = spec.values()});
        k.groups = {uint32_t(column_groups), 1, uint32_t(batches)};
        k.vector = true;
        return k;
    }
    const detail::conv::CoopTile* coop = detail::conv::coop_for(device, dtype, spec.m, spec.n, batches);
    Accumulation got = Accumulation::F32;
    const char* variant = coop ? detail::conv::coop_variant(device, want, got) : "f16";
    return {&detail::conv::gemm_pipeline(device, op, dtype, spec, coop, variant),
            detail::conv::gemm_groups(device, op, spec, coop), false, got};
}

} // namespace

std::unique_ptr<Gemm> Gemm::create(gpu::Device& device, const GemmDesc& desc) {
    const char* op = "Gemm";
    if (desc.a.shape.rank() != 2) fail(op, "a", "expected a 2-D matrix, got " + to_string(desc.a));
    if (desc.b.shape.rank() != 2) fail(op, "b", "expected a 2-D matrix, got " + to_string(desc.b));
    detail::require_float(op, "a", desc.a);
    detail::conv::require_dtype(op, "b", desc.b, desc.a);
    detail::conv::require_dense(op, "a", desc.a);
    detail::conv::require_dense(op, "b", desc.b);
    const int64_t m = desc.trans_a ? desc.a.shape[1] : desc.a.shape[0];
    const int64_t k = desc.trans_a ? desc.a.shape[0] : desc.a.shape[1];
    const int64_t kb = desc.trans_b ? desc.b.shape[1] : desc.b.shape[0];
    const int64_t n = desc.trans_b ? desc.b.shape[0] : desc.b.shape[1];
    if (k != kb)
        fail(op, "b",
             "inner dimensions differ: A" + std::string(desc.trans_a ? "'" : "") + " " + desc.a.shape.str() +
                 " has K = " + std::to_string(k) + ", B" + (desc.trans_b ? "'" : "") + " " +
                 desc.b.shape.str() + " has " + std::to_string(kb));
    detail::conv::check_activation(op, desc.activation);
    detail::conv::check_accumulation(op, desc.accumulation);

    detail::conv::GemmSpec spec;
    spec.m = uint32_t(m);
    spec.n = uint32_t(n);
    spec.k = uint32_t(k);
    spec.a_si = desc.trans_a ? 1 : uint32_t(k);
    spec.a_sk = desc.trans_a ? uint32_t(m) : 1;
    spec.b_sk = desc.trans_b ? 1 : uint32_t(n);
    spec.b_sj = desc.trans_b ? uint32_t(k) : 1;
    spec.act = desc.activation.kind;
    if (desc.c) {
        // Unidirectional broadcast to [M, N]: right-aligned, each dim equal or 1 (stride 0).
        const Shape& cs = desc.c->shape;
        detail::conv::require_dtype(op, "c", *desc.c, desc.a);
        detail::conv::require_dense(op, "c", *desc.c);
        if (cs.rank() > 2) fail(op, "c", "expected rank 0 to 2, got " + cs.str());
        const int64_t ci = cs.rank() == 2 ? cs[0] : 1;
        const int64_t cj = cs.rank() >= 1 ? cs[cs.rank() - 1] : 1;
        if ((ci != 1 && ci != m) || (cj != 1 && cj != n))
            fail(op, "c",
                 cs.str() + " does not broadcast to [" + std::to_string(m) + ", " + std::to_string(n) + "]");
        spec.has_c = true;
        spec.c_si = ci == 1 ? 0 : uint32_t(cj);
        spec.c_sj = cj == 1 ? 0 : 1;
    }

    auto gemm = std::unique_ptr<Gemm>(new Gemm(device));
    const TensorDesc output{Shape{m, n}, desc.a.dtype};
    detail::conv::require_dense(op, "output", output);
    gemm->inputs_ = {desc.a, desc.b};
    if (desc.c) gemm->inputs_.push_back(*desc.c);
    gemm->outputs_ = {output};
    gemm->has_c_ = desc.c.has_value();
    const GemmKernel kernel = gemm_kernel(device, op, desc.a.dtype, spec, desc.accumulation);
    gemm->pipeline_ = kernel.pipeline;
    gemm->groups_ = kernel.groups;
    gemm->vector_ = kernel.vector;
    gemm->accumulation_ = kernel.accumulation;
    gemm->push_ = {desc.alpha, desc.beta, desc.activation.alpha, desc.activation.beta};
    return gemm;
}

void Gemm::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                       std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange a = inputs[0].range();
    // Unused C and residual bindings get A, which the kernel never reads through them.
    const gpu::BufferRange bufs[] = {a, inputs[1].range(), has_c_ ? inputs[2].range() : a, a,
                                     outputs[0].range()};
    cmd.dispatch(*pipeline_, bufs, push_, groups_);
}

std::unique_ptr<MatMul> MatMul::create(gpu::Device& device, const MatMulDesc& desc) {
    const char* op = "MatMul";
    const Shape& as = desc.a.shape;
    const Shape& bs = desc.b.shape;
    if (as.rank() < 1) fail(op, "a", "must have rank 1 or more, got " + as.str());
    if (bs.rank() < 1) fail(op, "b", "must have rank 1 or more, got " + bs.str());
    detail::require_float(op, "a", desc.a);
    detail::conv::require_dtype(op, "b", desc.b, desc.a);
    detail::conv::require_dense(op, "a", desc.a);
    detail::conv::require_dense(op, "b", desc.b);
    detail::conv::check_accumulation(op, desc.accumulation);
    // numpy: a 1-D A is a row [1, K], a 1-D B a column [K, 1]; the promoted 1 leaves the output.
    const bool a_vec = as.rank() == 1, b_vec = bs.rank() == 1;
    const int64_t m = a_vec ? 1 : as[as.rank() - 2];
    const int64_t k = as[as.rank() - 1];
    const int64_t kb = b_vec ? bs[0] : bs[bs.rank() - 2];
    const int64_t n = b_vec ? 1 : bs[bs.rank() - 1];
    if (k != kb)
        fail(op, "b",
             "inner dimensions differ: A " + as.str() + " has K = " + std::to_string(k) + ", B " + bs.str() +
                 " has " + std::to_string(kb));

    const Shape a_batch(as.dims().first(a_vec ? 0 : as.rank() - 2));
    const Shape b_batch(bs.dims().first(b_vec ? 0 : bs.rank() - 2));
    const Shape batch = detail::broadcast_shapes(op, a_batch, b_batch);
    std::vector<int64_t> out_dims(batch.dims().begin(), batch.dims().end());
    if (!a_vec) out_dims.push_back(m);
    if (!b_vec) out_dims.push_back(n);
    if (out_dims.size() > gpu::max_rank)
        fail(op, "b", "the output would have rank " + std::to_string(out_dims.size()) + ", above 6");
    const TensorDesc output{Shape(std::span<const int64_t>(out_dims)), desc.a.dtype};

    detail::conv::GemmSpec spec;
    spec.m = uint32_t(m);
    spec.n = uint32_t(n);
    spec.k = uint32_t(k);
    spec.a_si = uint32_t(k);
    spec.a_sk = 1;
    spec.b_sk = uint32_t(n);
    spec.b_sj = 1;
    // Batch dims right-aligned into the kernel's four slots; a broadcast one has stride 0.
    const auto a_str = detail::broadcast_strides(a_batch, batch);
    const auto b_str = detail::broadcast_strides(b_batch, batch);
    const size_t lead = 4 - batch.rank();
    for (size_t i = 0; i < batch.rank(); ++i) {
        spec.batch[lead + i] = uint32_t(batch[i]);
        spec.a_batch[lead + i] = uint32_t(a_str[i] * m * k);
        spec.b_batch[lead + i] = uint32_t(b_str[i] * k * n);
    }

    auto mm = std::unique_ptr<MatMul>(new MatMul(device));
    mm->inputs_ = {desc.a, desc.b};
    mm->outputs_ = {output};
    detail::conv::require_dense(op, "output", output);
    const GemmKernel kernel = gemm_kernel(device, op, desc.a.dtype, spec, desc.accumulation);
    mm->pipeline_ = kernel.pipeline;
    mm->groups_ = kernel.groups;
    mm->vector_ = kernel.vector;
    mm->accumulation_ = kernel.accumulation;
    mm->push_ = {1.f, 0.f, 0.f, 0.f};
    return mm;
}

void MatMul::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange a = inputs[0].range();
    const gpu::BufferRange bufs[] = {a, inputs[1].range(), a, a, outputs[0].range()};
    cmd.dispatch(*pipeline_, bufs, push_, groups_);
}

const std::string& MatMul::kernel() const {
    return pipeline_->name();
}

} // namespace vkml::ops
