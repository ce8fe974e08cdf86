// FusedConvStack (shaders/fused/conv_stack.comp, and conv_stack_mma.comp on tensor cores): the checks,
// the kernel and tile choice, the weight packing.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "conv_common.hpp"
#include "util.hpp"
#include "vkml/gpu/half.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/gpu/transfer.hpp"
#include "vkml/ops/fused.hpp"

namespace vkml::ops {
namespace {

constexpr const char* op_name = "FusedConvStack";
// Must match the shader's compile-time bounds.
constexpr int64_t cmax = 8, pmax = 4, qmax = 4, kmax_1x1 = 16;
// NVIDIA gives a workgroup 48 KiB of shared memory without an opt-in Vulkan has no way to ask for.
constexpr uint64_t smem_cap = 48 * 1024;

int64_t c4(int64_t c) {
    return (c + 3) / 4;
}

// The network's dimensions, checked.
struct Net {
    int64_t n = 1, cin = 1, h = 1, w = 1;
    int64_t c = 1, d = 1, k = 1, s = 2, oc = 1;
    bool head1x1 = true;
    int mode = 0; // 0: DepthToSpace + bilinear, 1: residual
    int64_t co(int64_t l) const { return l == d - 1 && !head1x1 ? k : c; }
    int64_t ci(int64_t l) const { return l == 0 ? cin : s * c; }
    // vec4s of outputs a layer computes: the layers after the first share one code path, so all
    // compute as many as the widest of them (zero weights beyond their own outputs).
    int64_t co4(int64_t l) const { return l == 0 ? c4(co(0)) : std::max(c4(c), c4(co(d - 1))); }
    // vec4s of a layer's packed block, and of the 1x1 head's.
    int64_t block(int64_t l) const { return co4(l) * (1 + 9 * ci(l)); }
    int64_t head_block() const { return head1x1 ? c4(k) * (1 + d * s * c) : 0; }
};

struct Layout {
    int64_t tw = 0, th = 0;
    int64_t a = 0, b = 0;  // 8-byte units of windows A and B
    int64_t wl_max = 0;    // vec4s of a layer slot
    int64_t w_size = 0;    // vec4s of staged weights
    uint64_t bytes = 0;    // shared memory
    double cost = 0;       // estimated work of the whole dispatch
};

Layout layout_for(const Net& net, int64_t tw, int64_t th, bool smem_f16, int64_t rows) {
    const int64_t per_unit = smem_f16 ? 4 : 2;
    auto units = [&](int64_t ch) { return (ch + per_unit - 1) / per_unit; };
    auto window = [&](int64_t halo) { return (tw + 2 * halo) * (th + 2 * halo); };
    Layout L;
    L.tw = tw;
    L.th = th;
    L.a = window(net.d) * units(net.cin);
    double work = double(window(net.d)) * double(net.cin) * 4; // staging the input
    for (int64_t l = 0; l < net.d; ++l) {
        const int64_t halo = net.d - 1 - l;
        const int64_t sz = window(halo) * units(net.co(l));
        int64_t& buf = l % 2 == 0 ? L.b : L.a;
        buf = std::max(buf, sz);
        L.wl_max = std::max(L.wl_max, net.block(l));
        const int64_t rh = (th + 2 * halo + rows - 1) / rows * rows; // strips overrun the window
        work += double(tw + 2 * halo) * double(rh) * 9.0 * double(net.ci(l)) * double(4 * net.co4(l));
        work += 512; // a barrier and the weight staging
    }
    if (net.head1x1) work += double(tw * th) * double(net.d * net.s * net.c) * double(4 * c4(net.k));
    L.w_size = net.head_block() + 2 * L.wl_max;
    L.bytes = uint64_t(L.a + L.b) * 8 + uint64_t(L.w_size) * 16;
    const double tiles = double((net.w + tw - 1) / tw) * double((net.h + th - 1) / th) * double(net.n);
    L.cost = tiles * work;
    return L;
}

// The tensor-core kernel (fused/conv_stack_mma.comp): windows of one 16-byte unit per pixel, each
// followed by a zero guard unit; a 16 x 16 f16 staging fragment per subgroup; 256 invocations.
// The cost counts the MMAs: a layer computes its window in chunks of 16 pixels of a row.
constexpr int64_t mma_threads = 256, mma_subgroups = mma_threads / 32, mma_head_chunks = 4;
// The CReLU is applied to the loaded A fragments element by element, and how many elements an
// invocation holds is implementation-defined (KHR has no constant for it): 8 on NVIDIA, where the
// kernel runs; other vendors take the scalar kernel.
constexpr uint32_t mma_a_elements = 8, nvidia_vendor = 0x10de;

bool mma_runs(const gpu::Device& device) {
    return device.caps().vendor_id == nvidia_vendor && detail::conv::coop_available(device, DType::f16);
}

Layout mma_layout_for(const Net& net, int64_t tw, int64_t th) {
    auto window = [&](int64_t halo) { return (tw + 2 * halo) * (th + 2 * halo); };
    Layout L;
    L.tw = tw;
    L.th = th;
    L.a = window(net.d) + 1;
    L.b = window(net.d - 1) + 1;
    // the head's fp32 staging (16 x 16 floats a subgroup) reuses the windows at the end
    const int64_t act = std::max(L.a + L.b, net.head1x1 ? mma_subgroups * 64 : int64_t(0));
    L.b = act - L.a;
    L.bytes = uint64_t(act) * 16 + uint64_t(mma_subgroups) * 512;
    double work = double(window(net.d)) * 2; // staging the input
    for (int64_t l = 0; l < net.d; ++l) {
        const int64_t halo = net.d - 1 - l, rw = tw + 2 * halo, rh = th + 2 * halo;
        const double chunks = double(rh) * double((rw + 15) / 16);
        work += chunks * ((l == 0 ? 6.0 : 6.0 * double(net.s)) * 16 + 4) + 64; // MMAs, the store, a barrier
        if (net.head1x1) work += double(tw * th / 16) * double(net.s) * 16;
    }
    const double tiles = double((net.w + tw - 1) / tw) * double((net.h + th - 1) / th) * double(net.n);
    L.cost = tiles * work;
    return L;
}

struct Plan {
    Net net;
    Layout layout;
    bool mma = false;
    int64_t rows = 4, threads = 256;
    gpu::ShaderId shader{};
    Shape out;
    std::array<uint32_t, 3> groups{};
};

int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}

void check_layer(const ConvStackLayer& l, const std::string& field, int64_t outputs, int64_t inputs, int64_t taps) {
    if (l.outputs != outputs)
        fail(op_name, field, "has " + std::to_string(l.outputs) + " outputs, expected " + std::to_string(outputs));
    const uint64_t want = uint64_t(outputs * inputs * taps);
    if (l.weight.size() != want)
        fail(op_name, field + ".weight",
             "has " + std::to_string(l.weight.size()) + " values, expected " + std::to_string(want) + " ([" +
                 std::to_string(outputs) + ", " + std::to_string(inputs) + ", " + (taps == 9 ? "3, 3" : "1, 1") + "])");
    if (!l.bias.empty() && l.bias.size() != uint64_t(outputs))
        fail(op_name, field + ".bias", "has " + std::to_string(l.bias.size()) + " values, expected " + std::to_string(outputs));
}

Plan make_plan(gpu::Device& device, const ConvStackDesc& desc) {
    detail::require_float(op_name, "input", desc.input);
    if (desc.smem != DType::f32 && desc.smem != DType::f16)
        fail(op_name, "smem", std::string("must be f32 or f16, is ") + gpu::dtype_name(desc.smem));
    const Shape& x = desc.input.shape;
    if (x.rank() != 4) fail(op_name, "input", "must be [N, C, H, W], is " + x.str());
    Plan p;
    Net& net = p.net;
    net.n = x[0];
    net.cin = x[1];
    net.h = x[2];
    net.w = x[3];
    if (net.n < 1 || net.h < 1 || net.w < 1) fail(op_name, "input", "must not be empty, is " + x.str());
    if (net.cin < 1 || net.cin > 4) unsupported(op_name, "the input must have 1 to 4 channels, has " + std::to_string(net.cin));
    net.d = int64_t(desc.layers.size());
    net.head1x1 = desc.head == StackHead::Concat1x1;
    if (desc.head != StackHead::Concat1x1 && desc.head != StackHead::LastLayer) fail(op_name, "head", "unknown kind");
    if (desc.act != StackAct::CRelu && desc.act != StackAct::Relu) fail(op_name, "act", "unknown kind");
    if (desc.output != StackOutput::DepthToSpaceBilinear && desc.output != StackOutput::Residual)
        fail(op_name, "output", "unknown kind");
    if (net.d < 1 || net.d > 64) unsupported(op_name, "takes 1 to 64 layers, got " + std::to_string(net.d));
    net.s = desc.act == StackAct::CRelu ? 2 : 1;
    net.c = net.head1x1 || net.d > 1 ? desc.layers[0].outputs : 1;
    if (net.c < 1 || net.c > cmax)
        unsupported(op_name, "hidden layers of 1 to 8 channels only, layer 0 has " + std::to_string(net.c));
    net.k = net.head1x1 ? desc.head_conv.outputs : desc.layers.back().outputs;
    if (net.k < 1 || net.k > (net.head1x1 ? kmax_1x1 : cmax))
        unsupported(op_name, std::string("a ") + (net.head1x1 ? "1x1 head of 1 to 16" : "3x3 head of 1 to 8") +
                                 " outputs only, got " + std::to_string(net.k));
    for (int64_t l = 0; l < net.d; ++l)
        check_layer(desc.layers[size_t(l)], "layers[" + std::to_string(l) + "]", net.co(l), net.ci(l), 9);
    if (net.head1x1) check_layer(desc.head_conv, "head_conv", net.k, net.d * net.s * net.c, 1);

    net.mode = desc.output == StackOutput::Residual ? 1 : 0;
    if (net.mode == 0) {
        if (net.k % 4) fail(op_name, "output", "DepthToSpace(2) needs a multiple of 4 head outputs, got " + std::to_string(net.k));
        const int64_t dc = net.k / 4;
        net.oc = std::max(dc, net.cin);
        if ((dc != 1 && dc != net.oc) || (net.cin != 1 && net.cin != net.oc))
            fail(op_name, "output",
                 std::to_string(dc) + " channels after DepthToSpace do not broadcast with " + std::to_string(net.cin) +
                     " input channels");
        p.out = detail::shape_of(op_name, "input",
                                 std::array<int64_t, 4>{net.n, net.oc, detail::mul_dims(op_name, "input", net.h, 2),
                                                        detail::mul_dims(op_name, "input", net.w, 2)});
    } else {
        if (net.k < net.cin)
            fail(op_name, "output", "the residual adds " + std::to_string(net.cin) + " head channels, the head has " +
                                        std::to_string(net.k));
        net.oc = net.cin;
        p.out = x;
    }
    // The kernel indexes with 32-bit ints.
    if (p.out.elements() >= (int64_t(1) << 31) || x.elements() >= (int64_t(1) << 31))
        unsupported(op_name, "tensors of 2^31 elements or more");

    const bool f16 = desc.smem == DType::f16;
    const auto& caps = device.caps();
    if (desc.kernel != StackKernel::Auto && desc.kernel != StackKernel::Scalar && desc.kernel != StackKernel::TensorCores)
        fail(op_name, "kernel", "unknown kind");
    if (desc.kernel == StackKernel::TensorCores) {
        if (!f16) fail(op_name, "kernel", "TensorCores keeps the activations in f16: smem must be f16");
        if (!mma_runs(device))
            unsupported(op_name, "TensorCores needs an NVIDIA GPU with 16x16x16 f16 cooperative matrices, float16 "
                                 "arithmetic and 32-wide subgroups, which " + caps.device_name + " is not");
    }
    const char* mma_env = std::getenv("VKML_STACK_MMA");
    // Auto: the tensor cores for layers reading more than 8 channels (Anime4K L: 16). Their kernel
    // costs the same per layer up to 16 (12 MMAs per 16 pixels), while the scalar one's work
    // scales with the channels: on the H200, L (16) 0.677 -> 0.331 ms, M (8) 0.149 -> 0.333 ms.
    p.mma = desc.kernel == StackKernel::TensorCores ||
            (desc.kernel == StackKernel::Auto && f16 && net.s * net.c > 8 &&
             !(mma_env && std::string(mma_env) == "0") && mma_runs(device));
    if (p.mma) {
        p.shader = detail::shader_for(device, op_name, "fused_conv_stack_mma", desc.input.dtype);
        p.threads = mma_threads;
    } else {
        p.shader = detail::shader_for(device, op_name, f16 ? "fused_conv_stack_h" : "fused_conv_stack", desc.input.dtype);
        p.rows = std::clamp<int64_t>(env_int("VKML_STACK_ROWS", 4), 1, pmax);
        p.threads = env_int("VKML_STACK_THREADS", 256);
        if (p.threads != 64 && p.threads != 128 && p.threads != 256 && p.threads != 512) p.threads = 256;
        p.threads = std::min<int64_t>(p.threads, std::max<uint32_t>(caps.max_workgroup_invocations, 64));
    }
    const uint64_t budget = std::min<uint64_t>(caps.max_shared_memory ? caps.max_shared_memory : smem_cap, smem_cap);

    std::vector<std::array<int64_t, 2>> candidates;
    int tw = desc.tile[0], th = desc.tile[1];
    if (!tw && !th) {
        if (const char* e = std::getenv("VKML_STACK_TILE"); e && std::sscanf(e, "%dx%d", &tw, &th) != 2) tw = th = 0;
    }
    if (tw > 0 && th > 0) {
        candidates.push_back({tw, th});
    } else {
        if (desc.tile[0] || desc.tile[1]) fail(op_name, "tile", "must be positive or {0, 0}");
        if (p.mma)
            candidates = {{32, 16}, {16, 32}, {32, 8}, {16, 16}, {48, 8}, {16, 8}};
        else
            candidates = {{32, 32}, {32, 24}, {24, 24}, {32, 16}, {24, 16}, {16, 16}, {16, 12}, {16, 8}, {8, 8}};
    }
    std::string tried;
    auto skip = [&](int64_t cw, int64_t ch, const std::string& why) {
        tried += (tried.empty() ? "" : ", ") + std::to_string(cw) + "x" + std::to_string(ch) + " (" + why + ")";
    };
    for (const auto& [cw, ch] : candidates) {
        if (p.mma && cw % 16) {
            skip(cw, ch, "the tensor-core tile's width must be a multiple of 16");
            continue;
        }
        if (p.mma && cw * ch > 16 * mma_subgroups * mma_head_chunks) {
            skip(cw, ch, "more than " + std::to_string(mma_head_chunks) + " chunks of 16 pixels per subgroup");
            continue;
        }
        if (!p.mma && cw * ch > qmax * p.threads) {
            skip(cw, ch, "more pixels than " + std::to_string(qmax) + " per invocation");
            continue;
        }
        const Layout L = p.mma ? mma_layout_for(net, cw, ch) : layout_for(net, cw, ch, f16, p.rows);
        if (L.bytes > budget) {
            skip(cw, ch, std::to_string(L.bytes) + " bytes");
            continue;
        }
        if (!p.layout.tw || L.cost < p.layout.cost) p.layout = L;
    }
    if (!p.layout.tw)
        unsupported(op_name, "no tile fits " + std::to_string(budget) + " bytes of shared memory: " + tried);
    const int64_t groups[3] = {(net.w + p.layout.tw - 1) / p.layout.tw, (net.h + p.layout.th - 1) / p.layout.th, net.n};
    for (size_t i = 0; i < 3; ++i) {
        const int64_t limit = caps.max_workgroup_count[i] ? caps.max_workgroup_count[i] : 65535;
        if (groups[i] > limit)
            unsupported(op_name, "needs " + std::to_string(groups[i]) + " workgroups along axis " + std::to_string(i) +
                                     ", the device allows " + std::to_string(limit));
        p.groups[i] = uint32_t(groups[i]);
    }
    return p;
}

// The vec4 blocks the shader reads: per 3x3 layer [bias: CO4][tap][read channel][CO4], then the
// 1x1 head's [bias: K4][layer][read channel][K4]; padding channels are zero.
std::vector<float> pack_weights(const Net& net, const ConvStackDesc& desc) {
    std::vector<float> out;
    auto put_block = [&](const ConvStackLayer& layer, int64_t co, int64_t co4, int64_t ci, int64_t taps) {
        const size_t at = out.size();
        out.resize(at + size_t(co4 * 4 * (1 + taps * ci)), 0.f);
        float* b = out.data() + at;
        for (int64_t o = 0; o < co; ++o) b[o] = layer.bias.empty() ? 0.f : layer.bias[size_t(o)];
        for (int64_t t = 0; t < taps; ++t)
            for (int64_t i = 0; i < ci; ++i)
                for (int64_t o = 0; o < co; ++o)
                    b[co4 * 4 * (1 + t * ci + i) + o] = layer.weight[size_t((o * ci + i) * taps + t)];
    };
    for (int64_t l = 0; l < net.d; ++l) put_block(desc.layers[size_t(l)], net.co(l), net.co4(l), net.ci(l), 9);
    if (net.head1x1) put_block(desc.head_conv, net.k, c4(net.k), net.d * net.s * net.c, 1);
    return out;
}

// The tensor-core kernel's units (4 words each; fused/conv_stack_mma.comp): per 3x3 layer a 16 x 16
// fp32 bias matrix (identical rows) and its B matrices of 16 x 16 halves, row k = (pixel k / 8 of
// the tap pair, channel k % 8), column = output; the first layer's per (ky, pair), the others' per
// (ky, pair, sign of CReLU); then the 1x1 head's bias matrix and its per (layer, sign) matrices,
// rows 8..15 zero. The fourth tap column, and channels and outputs past the layer's, are zero.
std::vector<uint32_t> pack_mma(const Net& net, const ConvStackDesc& desc, bool relu_once) {
    std::vector<uint32_t> out;
    auto put_bias = [&](const ConvStackLayer& layer, int64_t co) {
        for (int64_t r = 0; r < 16; ++r)
            for (int64_t n = 0; n < 16; ++n) {
                const float v = n < co && !layer.bias.empty() ? layer.bias[size_t(n)] : 0.f;
                uint32_t bits;
                std::memcpy(&bits, &v, 4);
                out.push_back(bits);
            }
    };
    // value(k, n) of one B matrix
    auto put_matrix = [&](auto&& value) {
        for (int64_t k = 0; k < 16; ++k)
            for (int64_t n = 0; n < 16; n += 2)
                out.push_back(uint32_t(gpu::float_to_half(value(k, n))) |
                              uint32_t(gpu::float_to_half(value(k, n + 1))) << 16);
    };
    for (int64_t l = 0; l < net.d; ++l) {
        const ConvStackLayer& layer = desc.layers[size_t(l)];
        const int64_t co = net.co(l), ci = net.ci(l), ch_in = l == 0 ? net.cin : net.c;
        put_bias(layer, co);
        const int64_t signs = l == 0 ? 1 : net.s;
        for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t pr = 0; pr < 2; ++pr)
                for (int64_t sg = 0; sg < signs; ++sg)
                    put_matrix([&](int64_t k, int64_t n) {
                        const int64_t kx = 2 * pr + k / 8, ch = k % 8;
                        if (kx > 2 || ch >= ch_in || n >= co) return 0.f;
                        auto at = [&](int64_t sign) {
                            return layer.weight[size_t(((n * ci + sign * net.c + ch) * 3 + ky) * 3 + kx)];
                        };
                        if (!relu_once || signs == 1) return at(sg);
                        return sg == 0 ? at(0) + at(1) : -at(1); // (W_p + W_n) relu(f) - W_n f
                    });
    }
    if (net.head1x1) {
        const ConvStackLayer& head = desc.head_conv;
        const int64_t hin = net.d * net.s * net.c;
        put_bias(head, net.k);
        for (int64_t l = 0; l < net.d; ++l)
            for (int64_t sg = 0; sg < net.s; ++sg)
                put_matrix([&](int64_t k, int64_t n) {
                    if (k >= net.c || n >= net.k) return 0.f;
                    auto at = [&](int64_t sign) { return head.weight[size_t(n * hin + (l * net.s + sign) * net.c + k)]; };
                    if (!relu_once || net.s == 1) return at(sg);
                    return sg == 0 ? at(0) + at(1) : -at(1);
                });
    }
    return out;
}

} // namespace

bool FusedConvStack::supported(gpu::Device& device, const ConvStackDesc& desc, std::string* why) {
    return detail::plan_succeeds([&] { return make_plan(device, desc); }, why);
}

std::unique_ptr<FusedConvStack> FusedConvStack::create(gpu::Device& device, const ConvStackDesc& desc) {
    const Plan p = make_plan(device, desc);
    const Net& net = p.net;
    const Layout& L = p.layout;
    auto op = std::unique_ptr<FusedConvStack>(new FusedConvStack(device));
    auto u = [](int64_t v) { return uint32_t(v); };
    gpu::ComputePipelineDesc pd;
    pd.shader = p.shader;
    pd.bindings = 3;
    pd.workgroup = {u(p.threads), 1, 1};
    if (p.mma) {
        static const bool relu_once = env_int("VKML_STACK_RELU_ONCE", 1) != 0;
        const std::vector<uint32_t> packed = pack_mma(net, desc, relu_once);
        op->weights_ = gpu::Buffer(device, {.size = packed.size() * sizeof(uint32_t), .name = "FusedConvStack weights"});
        gpu::upload(device, op->weights_.range(), std::as_bytes(std::span<const uint32_t>(packed)));
        pd.specialization = {u(net.cin), u(net.c), u(net.d),  u(net.k),  u(net.head1x1), u(net.s == 2), u(net.mode),
                             u(net.h),   u(net.w), u(L.tw),   u(L.th),   u(net.oc),      u(L.a + L.b),  u(L.a),
                             mma_a_elements, relu_once ? 1u : 0u};
    } else {
        const std::vector<float> packed = pack_weights(net, desc);
        op->weights_ = gpu::Buffer(device, {.size = packed.size() * sizeof(float), .name = "FusedConvStack weights"});
        gpu::upload(device, op->weights_.range(), std::as_bytes(std::span<const float>(packed)));
        pd.specialization = {u(net.cin), u(net.c),  u(net.d),    u(net.k),      u(net.head1x1), u(net.s == 2),
                             u(net.mode), u(net.h), u(net.w),    u(L.tw),       u(L.th),        u(net.oc),
                             u(p.rows),   u(L.a + L.b), u(L.a),  u(L.w_size),   u(L.wl_max)};
    }
    op->tensor_cores_ = p.mma;
    op->pipeline_ = &device.pipeline(pd);
    op->tile_ = {int(L.tw), int(L.th)};
    op->shared_bytes_ = uint32_t(L.bytes);
    op->groups_ = p.groups;
    op->inputs_ = {desc.input};
    op->outputs_ = {{p.out, desc.input.dtype}};
    return op;
}

void FusedConvStack::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs,
                                 std::span<const Tensor> outputs, const gpu::BufferRange&) const {
    const gpu::BufferRange buffers[] = {inputs[0].range(), weights_.range(), outputs[0].range()};
    cmd.dispatch(*pipeline_, buffers, nullptr, 0, groups_);
}

} // namespace vkml::ops
