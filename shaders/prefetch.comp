#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Reads a buffer (a session's weights) so that it sits in the GPU's last-level cache for the
// dispatches that follow: one 16-byte load per 32-byte sector. In a frame the rendering before a
// network evicts its weights, and every layer's first loads would otherwise wait on memory one
// K step at a time. The sink is written only when a loaded word has an exact value no weight
// is expected to have (harmless when it does): the loads cannot be removed as dead code.
VKML_LOCAL_SIZE;
layout(std430, set = 0, binding = 0) readonly buffer Src { uvec4 data[]; } src;
layout(std430, set = 0, binding = 1) writeonly buffer Sink { uint data[]; } sink;
layout(push_constant) uniform Params { uint sectors; } p; // 32-byte sectors to read

void main() {
    const uint i = vkml_linear_id();
    if (i >= p.sectors) return;
    const uvec4 v = src.data[2u * i];
    if (v.x == 0x7fc00badu && v.y == v.x) sink.data[0] = v.z;
}
