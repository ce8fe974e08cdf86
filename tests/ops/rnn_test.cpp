// RNN, GRU and LSTM against ref_rnn, f32 and f16 storage, at odd sizes: every direction and
// layout, sequence lengths shorter than the input, initial states, peepholes, clip, non-default
// activations with parameters, GRU's linear_before_reset and LSTM's input_forget.
#include <gtest/gtest.h>

#include <string>

#include "op_test.hpp"
#include "ref/rnn_ref.hpp"
#include "vkml/ops/rnn.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
using ops::RnnKind;
namespace ref = ref_rnn;

class RnnTest : public GpuTest {};

struct Options {
    std::string direction = "forward";
    int64_t layout = 0;
    bool bias = false, seq = false, initial = false, peep = false;
    std::optional<float> clip;
    std::vector<std::string> activations; // per direction; repeated for bidirectional
    std::vector<float> alpha, beta;
    int64_t special = 0; // GRU: linear_before_reset; LSTM: input_forget
};

void run_case(gpu::Device& dev, RnnKind kind, DType dt, const Options& o, uint32_t& seed) {
    const int64_t S = 5, B = 3, I = 7, H = 5;
    const int64_t D = o.direction == "bidirectional" ? 2 : 1;
    const int64_t G = kind == RnnKind::LSTM ? 4 : kind == RnnKind::GRU ? 3 : 1;
    ops::RnnDesc d;
    d.kind = kind;
    d.direction = o.direction;
    d.layout = o.layout;
    d.clip = o.clip;
    d.activation_alpha = o.alpha;
    d.activation_beta = o.beta;
    for (int64_t k = 0; k < D; ++k) d.activations.insert(d.activations.end(), o.activations.begin(), o.activations.end());
    if (kind == RnnKind::GRU) d.linear_before_reset = o.special;
    if (kind == RnnKind::LSTM) d.input_forget = o.special;
    ref::Inputs in;
    in.x = random_tensor(o.layout ? Shape{B, S, I} : Shape{S, B, I}, dt, seed++, -1.5, 1.5);
    in.w = random_tensor({D, G * H, I}, dt, seed++, -0.6, 0.6);
    in.r = random_tensor({D, G * H, H}, dt, seed++, -0.6, 0.6);
    const HostTensor b = random_tensor({D, 2 * G * H}, dt, seed++, -0.5, 0.5);
    HostTensor seq({B}, DType::i32);
    seq.data = {5, 2, 4};
    const Shape state = o.layout ? Shape{B, D, H} : Shape{D, B, H};
    const HostTensor h0 = random_tensor(state, dt, seed++, -1.0, 1.0);
    const HostTensor c0 = random_tensor(state, dt, seed++, -1.0, 1.0);
    const HostTensor p = random_tensor({D, 3 * H}, dt, seed++, -0.5, 0.5);
    d.x = in.x.desc;
    d.w = in.w.desc;
    d.r = in.r.desc;
    std::vector<HostTensor> inputs = {in.x, in.w, in.r};
    if (o.bias) d.b = b.desc, in.b = &b, inputs.push_back(b);
    if (o.seq) d.sequence_lens = seq.desc, in.seq = &seq, inputs.push_back(seq);
    if (o.initial) d.initial_h = h0.desc, in.h0 = &h0, inputs.push_back(h0);
    if (o.initial && kind == RnnKind::LSTM) d.initial_c = c0.desc, in.c0 = &c0, inputs.push_back(c0);
    if (o.peep) d.p = p.desc, in.p = &p, inputs.push_back(p);
    const auto op = ops::Rnn::create(dev, d);
    const auto got = run_op(dev, *op, inputs, 2);
    const auto want = ref::rnn(d, in);
    ASSERT_EQ(got.size(), want.size());
    std::string what = std::string(ops::rnn_name(kind)) + " " + gpu::dtype_name(dt) + " " + o.direction + " layout " +
                       std::to_string(o.layout) + (o.bias ? " B" : "") + (o.seq ? " seq" : "") +
                       (o.initial ? " initial" : "") + (o.peep ? " P" : "") + (o.clip ? " clip" : "");
    for (const auto& a : o.activations) what += " " + a;
    if (o.special) what += kind == RnnKind::GRU ? " linear_before_reset" : " input_forget";
    // fp32 dot products of 12 terms over 5 steps and fp32 exp / tanh: 1e-5; f16: the outputs'
    // rounding (2^-11 relative), 2e-3.
    const double tol = tolerance(dt, 1e-5, 2e-3);
    const char* names[] = {"Y", "Y_h", "Y_c"};
    for (size_t k = 0; k < got.size(); ++k) expect_close(got[k], want[k], tol, what + " " + names[k]);
}

TEST_F(RnnTest, MatchesReference) {
    uint32_t seed = 1;
    for (DType dt : float_dtypes(dev()))
        for (RnnKind kind : {RnnKind::RNN, RnnKind::GRU, RnnKind::LSTM}) {
            const bool lstm = kind == RnnKind::LSTM;
            std::vector<Options> cases = {
                {},
                {.direction = "reverse", .bias = true},
                {.direction = "bidirectional", .bias = true, .seq = true, .initial = true, .peep = lstm},
                {.direction = "reverse", .layout = 1, .seq = true, .initial = true, .clip = 0.8f},
                {.direction = "bidirectional", .layout = 1, .bias = true, .seq = true, .peep = lstm, .special = 1},
            };
            Options acts{.bias = true};
            if (kind == RnnKind::RNN) acts.activations = {"LeakyRelu"}, acts.alpha = {0.2f};
            if (kind == RnnKind::GRU) acts.activations = {"HardSigmoid", "ScaledTanh"}, acts.alpha = {0.3f, 0.9f},
                                      acts.beta = {0.45f, 1.2f};
            if (kind == RnnKind::LSTM) acts.activations = {"Sigmoid", "Softsign", "Elu"}, acts.alpha = {0.7f};
            cases.push_back(acts);
            for (const Options& o : cases) run_case(dev(), kind, dt, o, seed);
        }
}

TEST_F(RnnTest, BadDescriptorsNameTheField) {
    const TensorDesc x{{5, 3, 7}, DType::f32};
    ops::RnnDesc d{.kind = RnnKind::GRU, .x = x, .w = {{1, 15, 7}, DType::f32}, .r = {{1, 15, 4}, DType::f32}};
    expect_error([&] { (void)ops::Rnn::create(dev(), d); }, {"GRU", "R", "[1, 15, 5]"});
    d.r = {{1, 15, 5}, DType::f32};
    d.direction = "sideways";
    expect_error([&] { (void)ops::Rnn::create(dev(), d); }, {"GRU", "direction"});
    d.direction = "forward";
    d.activations = {"Sigmoid"};
    expect_error([&] { (void)ops::Rnn::create(dev(), d); }, {"GRU", "activations", "2 per direction"});
    d.activations = {"Sigmoid", "Cube"};
    expect_error([&] { (void)ops::Rnn::create(dev(), d); }, {"GRU", "Cube"});
    d.activations = {};
    d.p = TensorDesc{{1, 15}, DType::f32};
    expect_error([&] { (void)ops::Rnn::create(dev(), d); }, {"GRU", "P", "only LSTM"});
}

} // namespace
} // namespace vkml::test
