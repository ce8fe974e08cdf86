#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
// out[i] = cond[ic] != 0 ? x[ix] : y[iy] with three-way numpy broadcasting; RANK, dims and strides
// as in binary.comp (RANK 0: all three inputs have the output's shape). The variant is x's and y's
// type; the condition is bool (u8).
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint RANK = 0;

layout(std430, set = 0, binding = 0) readonly buffer Cond { uint8_t data[]; } cond;
layout(std430, set = 0, binding = 1) readonly buffer X { stype data[]; } x;
layout(std430, set = 0, binding = 2) readonly buffer Y { stype data[]; } y;
layout(std430, set = 0, binding = 3) writeonly buffer Out { stype data[]; } dst;
layout(push_constant) uniform Params {
    uint n;
    uint dims[6];
    uint sc[6];
    uint sx[6];
    uint sy[6];
} p;

void main() {
    uint i = vkml_linear_id();
    if (i >= p.n) return;
    uint ic = i, ix = i, iy = i;
    if (RANK > 0) {
        uint rem = i;
        ic = 0;
        ix = 0;
        iy = 0;
        for (uint d = RANK - 1; d > 0; --d) {
            uint q = rem / p.dims[d];
            uint r = rem - q * p.dims[d];
            ic += r * p.sc[d];
            ix += r * p.sx[d];
            iy += r * p.sy[d];
            rem = q;
        }
        ic += rem * p.sc[0];
        ix += rem * p.sx[0];
        iy += rem * p.sy[0];
    }
    // Only the chosen side is read: a select would read both.
    dst.data[i] = uint(cond.data[ic]) != 0u ? x.data[ix] : y.data[iy];
}
