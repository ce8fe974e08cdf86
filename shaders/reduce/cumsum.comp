#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// CumSum along one axis of an input seen as [outer, n, inner]: one invocation per line walks it
// (backwards when REVERSE), writing the running sum before (EXCLUSIVE) or after adding each
// element. Floats accumulate in fp32, i32 in i32 (wrapping).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint EXCLUSIVE = 0;
layout(constant_id = 1) const uint REVERSE = 0;
layout(std430, set = 0, binding = 0) readonly buffer In { stype data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Out { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint rows;
    uint n;
    uint inner;
} pc;

#if VKML_I32
#define acc_t int
#else
#define acc_t float
#endif

void main() {
    const uint r = vkml_linear_id();
    if (r >= pc.rows) return;
    const uint base = (r / pc.inner) * pc.n * pc.inner + r % pc.inner;
    acc_t s = acc_t(0);
    for (uint k = 0; k < pc.n; ++k) {
        const uint j = REVERSE != 0 ? pc.n - 1 - k : k;
        const uint i = base + j * pc.inner;
        const acc_t v = acc_t(src.data[i]);
        if (EXCLUSIVE != 0) {
            dst.data[i] = stype(s);
            s += v;
        } else {
            s += v;
            dst.data[i] = stype(s);
        }
    }
}
