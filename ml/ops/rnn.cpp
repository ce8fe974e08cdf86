// RNN, GRU and LSTM (shaders/rnn/rnn.comp).
#include "vkml/ops/rnn.hpp"

#include <cmath>

#include "util.hpp"
#include "vkml/gpu/pipeline.hpp"

namespace vkml::ops {

namespace {

struct ActivationFn {
    const char* name;
    uint32_t code;
    int params; // how many of activation_alpha / activation_beta it takes (0, 1: alpha, 2: both)
    float alpha, beta;
};

constexpr ActivationFn functions[] = {
    {"Relu", 0, 0, 0.f, 0.f},       {"Tanh", 1, 0, 0.f, 0.f},          {"Sigmoid", 2, 0, 0.f, 0.f},
    {"Affine", 3, 2, 1.f, 0.f},     {"LeakyRelu", 4, 1, 0.01f, 0.f},   {"ThresholdedRelu", 5, 1, 1.f, 0.f},
    {"ScaledTanh", 6, 2, 1.f, 1.f}, {"HardSigmoid", 7, 2, 0.2f, 0.5f}, {"Elu", 8, 1, 1.f, 0.f},
    {"Softsign", 9, 0, 0.f, 0.f},   {"Softplus", 10, 0, 0.f, 0.f},
};

bool lower_equal(const std::string& a, const char* b) {
    size_t k = 0;
    for (; k < a.size() && b[k]; ++k)
        if (std::tolower(static_cast<unsigned char>(a[k])) != std::tolower(static_cast<unsigned char>(b[k])))
            return false;
    return k == a.size() && !b[k];
}

} // namespace

const char* rnn_name(RnnKind kind) {
    switch (kind) {
    case RnnKind::RNN:
        return "RNN";
    case RnnKind::GRU:
        return "GRU";
    case RnnKind::LSTM:
        return "LSTM";
    }
    return "RNN";
}

std::unique_ptr<Rnn> Rnn::create(gpu::Device& device, const RnnDesc& desc) {
    const char* op = rnn_name(desc.kind);
    const uint32_t gates = desc.kind == RnnKind::RNN ? 1 : desc.kind == RnnKind::GRU ? 3 : 4;
    const uint32_t per_dir = desc.kind == RnnKind::RNN ? 1 : desc.kind == RnnKind::GRU ? 2 : 3;
    detail::require_float(op, "X", desc.x);
    const DType dt = desc.x.dtype;
    if (desc.x.shape.rank() != 3) fail(op, "X", "expected rank 3, got " + desc.x.shape.str());
    if (desc.layout != 0 && desc.layout != 1) fail(op, "layout", "must be 0 or 1");
    const int64_t S = desc.layout == 0 ? desc.x.shape[0] : desc.x.shape[1];
    const int64_t B = desc.layout == 0 ? desc.x.shape[1] : desc.x.shape[0];
    const int64_t I = desc.x.shape[2];
    int64_t D = 1;
    uint32_t reverse_mask = 0;
    if (desc.direction == "bidirectional") {
        D = 2;
        reverse_mask = 2;
    } else if (desc.direction == "reverse") {
        reverse_mask = 1;
    } else if (desc.direction != "forward") {
        fail(op, "direction", "must be forward, reverse or bidirectional, is \"" + desc.direction + "\"");
    }
    if (desc.w.shape.rank() != 3 || desc.w.shape[0] != D || desc.w.shape[1] % gates != 0 || desc.w.shape[2] != I)
        fail(op, "W",
             "expected [" + std::to_string(D) + ", " + std::to_string(gates) + " * hidden_size, " +
                 std::to_string(I) + "], got " + desc.w.shape.str());
    const int64_t H = desc.w.shape[1] / gates;
    if (desc.hidden_size != 0 && desc.hidden_size != H)
        fail(op, "hidden_size", std::to_string(desc.hidden_size) + " disagrees with W " + desc.w.shape.str());
    auto expect = [&](const char* field, const TensorDesc& t, std::vector<int64_t> dims) {
        if (t.dtype != dt) fail(op, field, std::string("must have X's dtype ") + gpu::dtype_name(dt));
        const Shape want = detail::shape_of(op, field, dims);
        if (t.shape != want) fail(op, field, "expected " + want.str() + ", got " + t.shape.str());
    };
    expect("W", desc.w, {D, gates * H, I});
    expect("R", desc.r, {D, gates * H, H});
    if (desc.b) expect("B", *desc.b, {D, 2 * gates * H});
    const std::vector<int64_t> state_dims = desc.layout == 0 ? std::vector<int64_t>{D, B, H}
                                                              : std::vector<int64_t>{B, D, H};
    if (desc.initial_h) expect("initial_h", *desc.initial_h, state_dims);
    if (desc.kind != RnnKind::LSTM && (desc.initial_c || desc.p))
        fail(op, desc.p ? "P" : "initial_c", "only LSTM has it");
    if (desc.initial_c) expect("initial_c", *desc.initial_c, state_dims);
    if (desc.p) expect("P", *desc.p, {D, 3 * H});
    if (desc.sequence_lens) {
        if (desc.sequence_lens->dtype != DType::i32)
            fail(op, "sequence_lens", std::string("must be i32, is ") + gpu::dtype_name(desc.sequence_lens->dtype));
        if (desc.sequence_lens->shape != Shape{B})
            fail(op, "sequence_lens", "expected [" + std::to_string(B) + "], got " + desc.sequence_lens->shape.str());
    }
    if (desc.input_forget && desc.kind != RnnKind::LSTM) fail(op, "input_forget", "only LSTM has it");
    if (desc.linear_before_reset && desc.kind != RnnKind::GRU) fail(op, "linear_before_reset", "only GRU has it");
    if (desc.clip && !(*desc.clip > 0.f)) fail(op, "clip", "must be positive");
    // Everything a kernel indexes must fit 32 bits.
    const int64_t units = detail::mul_dims(op, "X", detail::mul_dims(op, "X", D, B), H);
    detail::to_u32(op, "state", detail::mul_dims(op, "state", units, 5));
    detail::to_u32(op, "W", desc.w.shape.elements());
    detail::to_u32(op, "R", desc.r.shape.elements());
    detail::to_u32(op, "Y", detail::mul_dims(op, "Y", units, S));

    auto o = std::unique_ptr<Rnn>(new Rnn(device));
    o->kind_ = desc.kind;
    Push& p = o->push_;
    p = {uint32_t(S), uint32_t(B), uint32_t(I), uint32_t(H), uint32_t(D), 0, reverse_mask,
         desc.clip.value_or(0.f), {}, {}, {}};
    // Activations: per direction f (, g (, h)); the defaults are ONNX's.
    std::vector<std::string> names = desc.activations;
    if (names.empty()) {
        const std::vector<std::string> defaults = desc.kind == RnnKind::RNN   ? std::vector<std::string>{"Tanh"}
                                                  : desc.kind == RnnKind::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                              : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
        for (int64_t d = 0; d < D; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
    }
    if (names.size() != size_t(D) * per_dir)
        fail(op, "activations",
             "has " + std::to_string(names.size()) + " names, expected " + std::to_string(D * per_dir) + " (" +
                 std::to_string(per_dir) + " per direction)");
    size_t next_alpha = 0, next_beta = 0;
    for (size_t k = 0; k < names.size(); ++k) {
        const ActivationFn* f = nullptr;
        for (const ActivationFn& c : functions)
            if (lower_equal(names[k], c.name)) f = &c;
        if (!f) unsupported(op, "activation \"" + names[k] + "\" is not an ONNX RNN activation vkml knows");
        const size_t slot = (k / per_dir) * 3 + k % per_dir;
        p.act[slot] = f->code;
        p.alpha[slot] = f->alpha;
        p.beta[slot] = f->beta;
        if (f->params >= 1 && next_alpha < desc.activation_alpha.size()) p.alpha[slot] = desc.activation_alpha[next_alpha++];
        if (f->params >= 2 && next_beta < desc.activation_beta.size()) p.beta[slot] = desc.activation_beta[next_beta++];
    }

    o->inputs_ = {desc.x, desc.w, desc.r};
    auto add = [&](const std::optional<TensorDesc>& t, int& at) {
        if (!t) return;
        at = int(o->inputs_.size());
        o->inputs_.push_back(*t);
    };
    add(desc.b, o->b_);
    add(desc.sequence_lens, o->seq_);
    add(desc.initial_h, o->h0_);
    add(desc.initial_c, o->c0_);
    add(desc.p, o->p_);
    const std::vector<int64_t> y_dims = desc.layout == 0 ? std::vector<int64_t>{S, D, B, H}
                                                          : std::vector<int64_t>{B, S, D, H};
    o->outputs_ = {{detail::shape_of(op, "Y", y_dims), dt}, {detail::shape_of(op, "Y_h", state_dims), dt}};
    if (desc.kind == RnnKind::LSTM) o->outputs_.push_back({detail::shape_of(op, "Y_c", state_dims), dt});
    o->scratch_bytes_ = uint64_t(units) * 5 * sizeof(float);

    const gpu::ShaderId shader = detail::shader_for(device, op, "rnn", dt);
    auto pipeline = [&](uint32_t mode) {
        return &device.pipeline({.shader = shader,
                                 .bindings = 12,
                                 .push_constant_bytes = sizeof(Push),
                                 .workgroup = {64, 1, 1},
                                 .specialization = {mode, uint32_t(desc.kind), desc.b ? 1u : 0u,
                                                    desc.sequence_lens ? 1u : 0u, desc.initial_h ? 1u : 0u,
                                                    desc.initial_c ? 1u : 0u, desc.p ? 1u : 0u,
                                                    desc.linear_before_reset ? 1u : 0u, desc.input_forget ? 1u : 0u,
                                                    desc.clip ? 1u : 0u, uint32_t(desc.layout)}});
    };
    o->init_ = pipeline(0);
    if (desc.kind == RnnKind::GRU && !desc.linear_before_reset) o->reset_ = pipeline(1);
    o->step_ = pipeline(2);
    o->final_ = pipeline(3);
    return o;
}

void Rnn::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                      const gpu::BufferRange& scratch) const {
    const uint64_t units = uint64_t(push_.D) * push_.B * push_.H;
    if (units == 0) return;
    const gpu::BufferRange x = inputs[0].range();
    auto opt = [&](int at) { return at >= 0 ? inputs[size_t(at)].range() : x; };
    const gpu::BufferRange yh = outputs[1].range();
    const gpu::BufferRange bufs[] = {x,
                                     inputs[1].range(),
                                     inputs[2].range(),
                                     opt(b_),
                                     opt(seq_),
                                     opt(h0_),
                                     opt(c0_),
                                     opt(p_),
                                     outputs[0].elements() ? outputs[0].range() : yh,
                                     yh,
                                     outputs.size() > 2 ? outputs[2].range() : yh,
                                     {scratch.buffer, scratch.offset, scratch_bytes_}};
    Push p = push_;
    detail::dispatch_1d(cmd, *init_, bufs, p, units);
    for (uint32_t t = 0; t < push_.S; ++t) {
        p.t = t;
        gpu::barrier::compute_to_compute(cmd);
        if (reset_) {
            detail::dispatch_1d(cmd, *reset_, bufs, p, units);
            gpu::barrier::compute_to_compute(cmd);
        }
        detail::dispatch_1d(cmd, *step_, bufs, p, units);
    }
    gpu::barrier::compute_to_compute(cmd);
    detail::dispatch_1d(cmd, *final_, bufs, p, units);
}

} // namespace vkml::ops
