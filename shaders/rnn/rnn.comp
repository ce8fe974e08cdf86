#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// ONNX RNN, GRU and LSTM, one time step per dispatch of MODE 2 (see ml/ops/rnn.cpp). Every
// invocation owns one (direction d, batch b, hidden unit j) and computes that unit's gates as dot
// products over the input and the previous hidden state, in fp32. The state lives in fp32 in the
// op's scratch: H[2][D][B][H] (ping-pong by step parity), C[2][D][B][H] (LSTM), RH[D][B][H] (GRU:
// r (.) H_prev, written by MODE 1 before the step that reads it).
// MODE 0: initial state; 1: GRU reset gate; 2: one step; 3: Y_h (and Y_c) from the final state.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint MODE = 2;
layout(constant_id = 1) const uint KIND = 0; // 0 RNN, 1 GRU, 2 LSTM
layout(constant_id = 2) const uint HAS_B = 0;
layout(constant_id = 3) const uint HAS_SEQ = 0;
layout(constant_id = 4) const uint HAS_H0 = 0;
layout(constant_id = 5) const uint HAS_C0 = 0;
layout(constant_id = 6) const uint HAS_P = 0;
layout(constant_id = 7) const uint LINEAR_BEFORE_RESET = 0;
layout(constant_id = 8) const uint INPUT_FORGET = 0;
layout(constant_id = 9) const uint HAS_CLIP = 0;
layout(constant_id = 10) const uint LAYOUT = 0; // 1: batch-major X, Y, Y_h, Y_c, initial states

layout(std430, set = 0, binding = 0) readonly buffer BX { sfloat data[]; } x;
layout(std430, set = 0, binding = 1) readonly buffer BW { sfloat data[]; } w;
layout(std430, set = 0, binding = 2) readonly buffer BR { sfloat data[]; } r;
layout(std430, set = 0, binding = 3) readonly buffer BB { sfloat data[]; } bias;
layout(std430, set = 0, binding = 4) readonly buffer BS { int data[]; } seq;
layout(std430, set = 0, binding = 5) readonly buffer BH0 { sfloat data[]; } h0;
layout(std430, set = 0, binding = 6) readonly buffer BC0 { sfloat data[]; } c0;
layout(std430, set = 0, binding = 7) readonly buffer BP { sfloat data[]; } peep;
layout(std430, set = 0, binding = 8) writeonly buffer BY { sfloat data[]; } y;
layout(std430, set = 0, binding = 9) writeonly buffer BYH { sfloat data[]; } yh;
layout(std430, set = 0, binding = 10) writeonly buffer BYC { sfloat data[]; } yc;
layout(std430, set = 0, binding = 11) buffer BState { float data[]; } st;

layout(push_constant) uniform Params {
    uint S, B, I, H, D;
    uint t;            // the step (MODE 1, 2)
    uint reverse_mask; // bit d: direction d runs backwards in time
    float clip;
    uint act[6];       // per direction 3 activation kinds (f, g, h)
    float alpha[6];
    float beta[6];
} p;

float activate(uint k, float v) {
    uint kind = p.act[k];
    float a = p.alpha[k], b = p.beta[k];
    if (kind == 0) return max(v, 0.0);                          // Relu
    if (kind == 1) return tanh(clamp(v, -15.0, 15.0));          // Tanh (tanh of +-15 is +-1 in fp32)
    if (kind == 2) return 1.0 / (1.0 + exp(-v));                // Sigmoid
    if (kind == 3) return a * v + b;                            // Affine
    if (kind == 4) return v >= 0.0 ? v : a * v;                 // LeakyRelu
    if (kind == 5) return v > a ? v : 0.0;                      // ThresholdedRelu
    if (kind == 6) return a * tanh(clamp(b * v, -15.0, 15.0));  // ScaledTanh
    if (kind == 7) return clamp(a * v + b, 0.0, 1.0);           // HardSigmoid
    if (kind == 8) return v >= 0.0 ? v : a * (exp(v) - 1.0);    // Elu
    if (kind == 9) return v / (1.0 + abs(v));                   // Softsign
    return max(v, 0.0) + log(1.0 + exp(-abs(v)));               // Softplus
}

float clipped(float v) {
    return HAS_CLIP != 0 ? clamp(v, -p.clip, p.clip) : v;
}

uint gates() {
    return KIND == 0 ? 1u : KIND == 1 ? 3u : 4u;
}

// Indices of the batch-or-time-major tensors.
uint x_at(uint t, uint b, uint i) {
    return (LAYOUT == 0 ? t * p.B + b : b * p.S + t) * p.I + i;
}
uint y_at(uint t, uint d, uint b, uint j) {
    return (LAYOUT == 0 ? (t * p.D + d) * p.B + b : (b * p.S + t) * p.D + d) * p.H + j;
}
uint state_at(uint d, uint b, uint j) { // Y_h, Y_c, initial_h, initial_c
    return (LAYOUT == 0 ? d * p.B + b : b * p.D + d) * p.H + j;
}
uint unit(uint d, uint b, uint j) {
    return (d * p.B + b) * p.H + j;
}
uint h_slot(uint slot) {
    return slot * p.D * p.B * p.H;
}
uint c_slot(uint slot) {
    return (2 + slot) * p.D * p.B * p.H;
}
uint rh_base() {
    return 4 * p.D * p.B * p.H;
}

// Gate g of unit (d, b, j): X_t . W_g[j] + Wb_g[j] (input part) and H_prev . R_g[j] + Rb_g[j].
float input_part(uint g, uint d, uint b, uint j, uint time) {
    uint row = (d * gates() + g) * p.H + j;
    float s = HAS_B != 0 ? float(bias.data[d * 2 * gates() * p.H + g * p.H + j]) : 0.0;
    for (uint i = 0; i < p.I; ++i) s += float(x.data[x_at(time, b, i)]) * float(w.data[row * p.I + i]);
    return s;
}
float recurrent_part(uint g, uint d, uint b, uint j, uint prev_base) {
    uint row = (d * gates() + g) * p.H + j;
    float s = HAS_B != 0 ? float(bias.data[d * 2 * gates() * p.H + gates() * p.H + g * p.H + j]) : 0.0;
    for (uint k = 0; k < p.H; ++k) s += st.data[prev_base + unit(d, b, k)] * float(r.data[row * p.H + k]);
    return s;
}

void main() {
    uint id = vkml_linear_id();
    if (id >= p.D * p.B * p.H) return;
    uint j = id % p.H, b = (id / p.H) % p.B, d = id / (p.H * p.B);
    uint u = unit(d, b, j);
    if (MODE == 0) {
        st.data[h_slot(0) + u] = HAS_H0 != 0 ? float(h0.data[state_at(d, b, j)]) : 0.0;
        if (KIND == 2) st.data[c_slot(0) + u] = HAS_C0 != 0 ? float(c0.data[state_at(d, b, j)]) : 0.0;
        return;
    }
    if (MODE == 3) {
        uint last = p.S % 2;
        yh.data[state_at(d, b, j)] = sfloat(st.data[h_slot(last) + u]);
        if (KIND == 2) yc.data[state_at(d, b, j)] = sfloat(st.data[c_slot(last) + u]);
        return;
    }
    uint len = HAS_SEQ != 0 ? uint(clamp(seq.data[b], 0, int(p.S))) : p.S;
    uint prev = p.t % 2, next = 1 - prev;
    bool reverse = ((p.reverse_mask >> d) & 1u) != 0;
    if (p.t >= len) { // past this sequence's end: the state holds, the output is zero
        if (MODE == 1) return;
        st.data[h_slot(next) + u] = st.data[h_slot(prev) + u];
        if (KIND == 2) st.data[c_slot(next) + u] = st.data[c_slot(prev) + u];
        y.data[y_at(p.t, d, b, j)] = sfloat(0.0);
        return;
    }
    uint time = reverse ? len - 1 - p.t : p.t;
    uint fa = 3 * d; // this direction's activations: f, g, h
    float hp = st.data[h_slot(prev) + u];
    if (MODE == 1) { // GRU: r (.) H_prev for the candidate's recurrent product
        float rg = activate(fa, clipped(input_part(1, d, b, j, time) + recurrent_part(1, d, b, j, h_slot(prev))));
        st.data[rh_base() + u] = rg * hp;
        return;
    }
    float hn;
    if (KIND == 0) {
        hn = activate(fa, clipped(input_part(0, d, b, j, time) + recurrent_part(0, d, b, j, h_slot(prev))));
    } else if (KIND == 1) { // gates z, r, h
        float z = activate(fa, clipped(input_part(0, d, b, j, time) + recurrent_part(0, d, b, j, h_slot(prev))));
        float cand;
        if (LINEAR_BEFORE_RESET != 0) {
            float rg = activate(fa, clipped(input_part(1, d, b, j, time) + recurrent_part(1, d, b, j, h_slot(prev))));
            cand = input_part(2, d, b, j, time) + rg * recurrent_part(2, d, b, j, h_slot(prev));
        } else {
            cand = input_part(2, d, b, j, time) + recurrent_part(2, d, b, j, rh_base());
        }
        float hh = activate(fa + 1, clipped(cand));
        hn = (1.0 - z) * hh + z * hp;
    } else { // gates i, o, f, c; peepholes i, o, f
        float cp = st.data[c_slot(prev) + u];
        float pi = HAS_P != 0 ? float(peep.data[d * 3 * p.H + j]) : 0.0;
        float po = HAS_P != 0 ? float(peep.data[d * 3 * p.H + p.H + j]) : 0.0;
        float pf = HAS_P != 0 ? float(peep.data[d * 3 * p.H + 2 * p.H + j]) : 0.0;
        uint hb = h_slot(prev);
        float ig = activate(fa, clipped(input_part(0, d, b, j, time) + recurrent_part(0, d, b, j, hb) + pi * cp));
        float fg = INPUT_FORGET != 0
                       ? 1.0 - ig
                       : activate(fa, clipped(input_part(2, d, b, j, time) + recurrent_part(2, d, b, j, hb) + pf * cp));
        float cg = activate(fa + 1, clipped(input_part(3, d, b, j, time) + recurrent_part(3, d, b, j, hb)));
        float cn = fg * cp + ig * cg;
        float og = activate(fa, clipped(input_part(1, d, b, j, time) + recurrent_part(1, d, b, j, hb) + po * cn));
        hn = og * activate(fa + 2, cn);
        st.data[c_slot(next) + u] = cn;
    }
    st.data[h_slot(next) + u] = hn;
    y.data[y_at(time, d, b, j)] = sfloat(hn);
}
