// FusedAttention (shaders/fused/attention.comp): the checks, the batch broadcasting, the tile choice.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "util.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/fused.hpp"

namespace vkml::ops {
namespace {

constexpr const char* op_name = "FusedAttention";
// Must match the shader.
constexpr uint32_t wg_size = 128, max_spt = 16, max_apt = 32, max_batch_dims = 3;
// NVIDIA gives a workgroup 48 KiB of shared memory without an opt-in Vulkan has no way to ask for.
constexpr uint64_t smem_cap = 48 * 1024;

struct Params {
    uint32_t sq, sk, nb0, nb1, nb2;
    uint32_t q_b0, q_b1, q_b2, q_row;
    uint32_t k_b0, k_b1, k_b2, k_row, k_col;
    uint32_t v_b0, v_b1, v_b2, v_row;
    uint32_t c_b0, c_b1, c_b2, c_row, c_col;
    uint32_t m_b0, m_b1, m_b2, m_row, m_col;
    float scale, fill;
    uint32_t keep;
};
static_assert(sizeof(Params) <= 128, "the push constants every device has");
static_assert(sizeof(Params) <= 32 * sizeof(uint32_t), "FusedAttention::push_ holds them");

// One tensor's element strides over the output's batch dimensions, its rows and its columns (0
// where it broadcasts).
struct Strides {
    std::vector<int64_t> batch;
    int64_t row = 0, col = 0;
};

// Reads `x` (contiguous, its last two dimensions the matrix) over the output batch `ob` and the
// matrix [rows, cols] it broadcasts to; `name` for errors.
Strides strides_of(const TensorDesc& x, const std::vector<int64_t>& ob, int64_t rows, int64_t cols,
                   const std::string& name, bool transposed = false) {
    const auto cs = detail::contiguous_strides(x.shape);
    const size_t rank = x.shape.rank(), nb = ob.size();
    if (rank > nb + 2) fail(op_name, name, "has more dimensions than the output " + std::to_string(nb + 2));
    Strides s;
    s.batch.assign(nb, 0);
    for (size_t i = 0; i < nb; ++i) {
        const int64_t a = int64_t(i) - int64_t(nb + 2 - rank);
        if (a < 0 || x.shape[size_t(a)] == 1) continue;
        if (x.shape[size_t(a)] != ob[i])
            fail(op_name, name, x.shape.str() + " does not broadcast to the batch dimensions of the output");
        s.batch[i] = cs[size_t(a)];
    }
    auto matrix = [&](size_t from_end, int64_t want) -> int64_t {
        if (rank < from_end) return 0;
        const size_t a = rank - from_end;
        if (x.shape[a] == want) return want == 1 ? 0 : cs[a];
        if (x.shape[a] != 1) fail(op_name, name, x.shape.str() + " does not broadcast to the scores");
        return 0;
    };
    if (transposed) { // K^T [D, Sk]: row c of K is column c of K^T
        s.row = matrix(1, rows);
        s.col = matrix(2, cols);
    } else {
        s.row = matrix(2, rows);
        s.col = matrix(1, cols);
    }
    return s;
}

struct Plan {
    int64_t sq = 0, sk = 0, d = 0, dv = 0;
    std::vector<int64_t> ob; // output batch dimensions
    Shape out;
    uint32_t bq = 0, bk = 0;
    uint64_t bytes = 0;
    Params params{};
    std::array<uint32_t, 3> groups{};
    gpu::ShaderId shader{};
};

uint64_t shared_bytes(int64_t d, int64_t dv, uint32_t bq, uint32_t bk) {
    const uint64_t ds = uint64_t(d) | 1, vs = uint64_t(dv) | 1, ps = bk | 1u;
    return 4 * (bq * ds + bk * ds + bk * vs + bq * ps + wg_size);
}

Plan make_plan(gpu::Device& device, const AttentionDesc& desc) {
    detail::require_float(op_name, "q", desc.q);
    for (const auto& [name, t] : {std::pair<const char*, const TensorDesc*>{"k", &desc.k}, {"v", &desc.v}})
        if (t->dtype != desc.q.dtype)
            fail(op_name, name,
                 std::string("must have q's dtype ") + gpu::dtype_name(desc.q.dtype) + ", is " +
                     gpu::dtype_name(t->dtype));
    for (const auto& [name, t] :
         {std::pair<const char*, const TensorDesc*>{"q", &desc.q}, {"k", &desc.k}, {"v", &desc.v}})
        if (t->shape.rank() < 2) fail(op_name, name, "must have at least 2 dimensions, is " + t->shape.str());
    Plan p;
    const Shape &q = desc.q.shape, &k = desc.k.shape, &v = desc.v.shape;
    p.sq = q[q.rank() - 2];
    p.d = q[q.rank() - 1];
    const int64_t kd = desc.k_transposed ? k[k.rank() - 2] : k[k.rank() - 1];
    p.sk = desc.k_transposed ? k[k.rank() - 1] : k[k.rank() - 2];
    if (kd != p.d)
        fail(op_name, "k",
             k.str() + (desc.k_transposed ? " (K^T)" : "") + " does not have q's row length " +
                 std::to_string(p.d));
    if (v[v.rank() - 2] != p.sk)
        fail(op_name, "v", v.str() + " does not have " + std::to_string(p.sk) + " rows, as K has");
    p.dv = v[v.rank() - 1];
    if (p.sq < 1 || p.sk < 1 || p.d < 1 || p.dv < 1)
        fail(op_name, "q",
             "empty attention: Sq " + std::to_string(p.sq) + ", Sk " + std::to_string(p.sk) + ", D " +
                 std::to_string(p.d) + ", Dv " + std::to_string(p.dv));
    if (p.d > FusedAttention::max_head_dim || p.dv > FusedAttention::max_head_dim)
        unsupported(op_name, "head dimensions up to " + std::to_string(FusedAttention::max_head_dim) +
                                 ", got D " + std::to_string(p.d) + " and Dv " + std::to_string(p.dv));

    // The output's batch dimensions: q's, k's and v's broadcast.
    auto batch = [](const Shape& s) {
        return Shape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 2));
    };
    const Shape obs =
        detail::broadcast_shapes(op_name, detail::broadcast_shapes(op_name, batch(q), batch(k)), batch(v));
    p.ob.assign(obs.dims().begin(), obs.dims().end());
    std::vector<int64_t> out = p.ob;
    out.push_back(p.sq);
    out.push_back(p.dv);
    p.out = detail::shape_of(op_name, "q", out);

    std::vector<Strides> st = {strides_of(desc.q, p.ob, p.sq, p.d, "q"),
                               strides_of(desc.k, p.ob, p.sk, p.d, "k", desc.k_transposed),
                               strides_of(desc.v, p.ob, p.sk, p.dv, "v")};
    Strides none;
    none.batch.assign(p.ob.size(), 0);
    if (desc.select) {
        if (desc.cond.dtype != DType::u8)
            fail(op_name, "cond", std::string("must be bool (u8), is ") + gpu::dtype_name(desc.cond.dtype));
        st.push_back(strides_of(desc.cond, p.ob, p.sq, p.sk, "cond"));
    } else {
        st.push_back(none);
    }
    if (desc.add_mask) {
        if (desc.mask.dtype != desc.q.dtype)
            fail(op_name, "mask",
                 std::string("must have q's dtype ") + gpu::dtype_name(desc.q.dtype) + ", is " +
                     gpu::dtype_name(desc.mask.dtype));
        st.push_back(strides_of(desc.mask, p.ob, p.sq, p.sk, "mask"));
    } else {
        st.push_back(none);
    }

    // Merge batch dimensions every tensor walks alike (drop those of size 1): the shader takes three.
    std::vector<int64_t> nb;
    std::vector<std::vector<int64_t>> bs(st.size());
    for (size_t i = 0; i < p.ob.size(); ++i) {
        if (p.ob[i] == 1) continue;
        bool merge = !nb.empty();
        for (size_t t = 0; merge && t < st.size(); ++t) merge = bs[t].back() == st[t].batch[i] * p.ob[i];
        if (merge) {
            nb.back() *= p.ob[i];
            for (size_t t = 0; t < st.size(); ++t) bs[t].back() = st[t].batch[i];
        } else {
            nb.push_back(p.ob[i]);
            for (size_t t = 0; t < st.size(); ++t) bs[t].push_back(st[t].batch[i]);
        }
    }
    if (nb.size() > max_batch_dims)
        unsupported(op_name,
                    "the batch dimensions of q, k, v and the masks broadcast in more than 3 distinct ways");
    while (nb.size() < max_batch_dims) {
        nb.insert(nb.begin(), 1);
        for (auto& b : bs) b.insert(b.begin(), 0);
    }
    // The shader indexes with 32-bit unsigned ints.
    for (const TensorDesc* t : {&desc.q, &desc.k, &desc.v, &desc.cond, &desc.mask})
        if (t->shape.elements() >= (int64_t(1) << 32))
            unsupported(op_name, "tensors of 2^32 elements or more");
    if (p.out.elements() >= (int64_t(1) << 32)) unsupported(op_name, "tensors of 2^32 elements or more");
    auto u = [](int64_t x) { return uint32_t(x); };
    Params& P = p.params;
    P.sq = u(p.sq);
    P.sk = u(p.sk);
    P.nb0 = u(nb[0]);
    P.nb1 = u(nb[1]);
    P.nb2 = u(nb[2]);
    uint32_t* fields[5][5] = {{&P.q_b0, &P.q_b1, &P.q_b2, &P.q_row, nullptr},
                              {&P.k_b0, &P.k_b1, &P.k_b2, &P.k_row, &P.k_col},
                              {&P.v_b0, &P.v_b1, &P.v_b2, &P.v_row, nullptr},
                              {&P.c_b0, &P.c_b1, &P.c_b2, &P.c_row, &P.c_col},
                              {&P.m_b0, &P.m_b1, &P.m_b2, &P.m_row, &P.m_col}};
    for (size_t t = 0; t < 5; ++t) {
        for (size_t i = 0; i < 3; ++i) *fields[t][i] = u(bs[t][i]);
        *fields[t][3] = u(st[t].row);
        if (fields[t][4]) *fields[t][4] = u(st[t].col);
    }
    P.scale = desc.scale;
    P.fill = desc.fill;
    P.keep = desc.select_keep ? 1u : 0u;

    // The tile: the first that fits the shared memory, with no more than 32 output columns per
    // invocation, preferring the most query rows up to the rows there are.
    const auto& caps = device.caps();
    if (caps.max_workgroup_invocations < wg_size)
        unsupported(op_name, "needs workgroups of " + std::to_string(wg_size) + " invocations");
    const uint64_t budget =
        std::min<uint64_t>(caps.max_shared_memory ? caps.max_shared_memory : smem_cap, smem_cap);
    std::vector<std::array<uint32_t, 2>> candidates;
    if (desc.tile[0] || desc.tile[1]) {
        const int bq = desc.tile[0], bk = desc.tile[1];
        if ((bq != 8 && bq != 16 && bq != 32) || bk < 1 || bk > 64)
            fail(op_name, "tile",
                 "query rows 8, 16 or 32 and key rows 1 to 64, or {0, 0}; got {" + std::to_string(bq) + ", " +
                     std::to_string(bk) + "}");
        candidates.push_back({uint32_t(bq), uint32_t(bk)});
    } else {
        const uint32_t rows = uint32_t(std::max<int64_t>(8, int64_t(std::bit_ceil(uint64_t(p.sq)))));
        for (const auto& c :
             std::vector<std::array<uint32_t, 2>>{{32, 32}, {16, 32}, {16, 16}, {8, 16}, {8, 8}})
            if (c[0] <= rows) candidates.push_back(c);
    }
    std::string tried;
    for (const auto& [bq, bk] : candidates) {
        const uint32_t t = wg_size / bq;
        const uint64_t bytes = shared_bytes(p.d, p.dv, bq, bk);
        std::string why;
        if ((bk + t - 1) / t > max_spt)
            why = "more than " + std::to_string(max_spt) + " scores per invocation";
        else if ((uint64_t(p.dv) + t - 1) / t > max_apt)
            why = "more than " + std::to_string(max_apt) + " output columns per invocation";
        else if (bytes > budget)
            why = std::to_string(bytes) + " bytes of shared memory";
        if (why.empty()) {
            p.bq = bq;
            p.bk = bk;
            p.bytes = bytes;
            break;
        }
        tried +=
            (tried.empty() ? "" : ", ") + std::to_string(bq) + "x" + std::to_string(bk) + " (" + why + ")";
    }
    if (!p.bq)
        unsupported(op_name, "no tile fits D " + std::to_string(p.d) + ", Dv " + std::to_string(p.dv) +
                                 " in " + std::to_string(budget) + " bytes of shared memory: " + tried);

    const int64_t batches = nb[0] * nb[1] * nb[2];
    const int64_t lim_x = caps.max_workgroup_count[0] ? caps.max_workgroup_count[0] : 65535;
    const int64_t lim_y = caps.max_workgroup_count[1] ? caps.max_workgroup_count[1] : 65535;
    const int64_t lim_z = caps.max_workgroup_count[2] ? caps.max_workgroup_count[2] : 65535;
    const int64_t gx = (p.sq + p.bq - 1) / p.bq, gy = std::min(batches, lim_y), gz = (batches + gy - 1) / gy;
    if (gx > lim_x || gz > lim_z)
        unsupported(op_name, "needs " + std::to_string(gx) + " x " + std::to_string(gy) + " x " +
                                 std::to_string(gz) + " workgroups, more than the device allows");
    p.groups = {u(gx), u(gy), u(gz)};
    p.shader = detail::shader_for(device, op_name, desc.select ? "fused_attention_sel" : "fused_attention",
                                  desc.q.dtype);
    return p;
}

} // namespace

bool FusedAttention::supported(gpu::Device& device, const AttentionDesc& desc, std::string* why) {
    return detail::plan_succeeds([&] { return make_plan(device, desc); }, why);
}

std::unique_ptr<FusedAttention> FusedAttention::create(gpu::Device& device, const AttentionDesc& desc) {
    const Plan p = make_plan(device, desc);
    auto op = std::unique_ptr<FusedAttention>(new FusedAttention(device));
    // K's rows are contiguous (read row by row) unless it is K^T, whose columns are.
    const uint32_t krows = p.params.k_col == 1 || p.params.k_row != 1 ? 1u : 0u;
    op->pipeline_ = &device.pipeline(
        {.shader = p.shader,
         .bindings = 6,
         .push_constant_bytes = sizeof(Params),
         .workgroup = {wg_size, 1, 1},
         .specialization = {uint32_t(p.d), uint32_t(p.dv), p.bq, p.bk, desc.add_mask ? 1u : 0u, krows}});
    std::memcpy(op->push_.data(), &p.params, sizeof(Params));
    op->tile_ = {int(p.bq), int(p.bk)};
    op->shared_bytes_ = uint32_t(p.bytes);
    op->groups_ = p.groups;
    op->has_cond_ = desc.select;
    op->has_mask_ = desc.add_mask;
    op->inputs_ = {desc.q, desc.k, desc.v};
    if (desc.select) op->inputs_.push_back(desc.cond);
    if (desc.add_mask) op->inputs_.push_back(desc.mask);
    op->outputs_ = {{p.out, desc.q.dtype}};
    return op;
}

void FusedAttention::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                 std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    // Unused bindings (no condition, no mask) get q: the shader never reads them.
    const gpu::BufferRange q = inputs[0].range();
    const gpu::BufferRange cond = has_cond_ ? inputs[3].range() : q;
    const gpu::BufferRange mask = has_mask_ ? inputs[has_cond_ ? 4 : 3].range() : q;
    const gpu::BufferRange buffers[] = {q,    inputs[1].range(), inputs[2].range(), cond,
                                        mask, outputs[0].range()};
    cmd.dispatch(*pipeline_, buffers, push_.data(), sizeof(Params), groups_);
}

} // namespace vkml::ops
