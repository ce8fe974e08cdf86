#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Letterbox: one invocation per output element of [1, 3, DH, DW]. Inside the content rectangle
// (LEFT, TOP, CW x CH) the source is sampled bilinearly with half-pixel centres and clamped edges
// (OpenCV's INTER_LINEAR, what YOLO tool chains letterbox with); outside it is PAD. Then
// out = (v * scale - mean) / stddev per output channel.
// The source is bound as raw 32-bit words so one kernel reads every input layout: IN_KIND 0 f32
// NCHW, 1 f16 NCHW (two halves per word), 2 packed u8 NHWC with SC channels (four bytes per word).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint IN_KIND = 0;
layout(constant_id = 1) const uint SW = 1; // source width, height, channels
layout(constant_id = 2) const uint SH = 1;
layout(constant_id = 3) const uint SC = 3;
layout(constant_id = 4) const uint DW = 1; // output width, height
layout(constant_id = 5) const uint DH = 1;
layout(constant_id = 6) const uint LEFT = 0;
layout(constant_id = 7) const uint TOP = 0;
layout(constant_id = 8) const uint CW = 1; // content width, height
layout(constant_id = 9) const uint CH = 1;
layout(constant_id = 10) const float PAD = 0.0;
layout(constant_id = 11) const uint BGR = 0;

layout(std430, set = 0, binding = 0) readonly buffer In { uint data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Out { sfloat data[]; } dst;
layout(push_constant) uniform Params { vec4 scale; vec4 mean; vec4 stddev; } p;

#include "detect/letterbox_common.glsl"

float load(uint c, uint y, uint x) {
    if (IN_KIND == 0u) return uintBitsToFloat(src.data[(c * SH + y) * SW + x]);
    if (IN_KIND == 1u) {
        uint i = (c * SH + y) * SW + x;
        vec2 h = unpackHalf2x16(src.data[i >> 1]);
        return (i & 1u) != 0u ? h.y : h.x;
    }
    uint i = (y * SW + x) * SC + c;
    return float((src.data[i >> 2] >> ((i & 3u) * 8u)) & 0xffu) / 255.0;
}

void main() {
    uint i = vkml_linear_id();
    if (i >= 3u * DW * DH) return;
    uint x = i % DW, y = (i / DW) % DH, c = i / (DW * DH);
    uint sc = BGR != 0u ? 2u - c : c; // source channel feeding output channel c
    float v = PAD;
    uvec4 q;
    vec2 f;
    if (letterbox_taps(x, y, q, f)) {
        float top = mix(load(sc, q.y, q.x), load(sc, q.y, q.z), f.x);
        float bottom = mix(load(sc, q.w, q.x), load(sc, q.w, q.z), f.x);
        v = mix(top, bottom, f.y);
    }
    dst.data[i] = sfloat((v * p.scale[c] - p.mean[c]) / p.stddev[c]);
}
