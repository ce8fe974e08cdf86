#version 450
// The samples' scene: one mesh instance per draw, placed by push constants.
layout(location = 0) in vec3 in_pos;
layout(location = 1) in vec3 in_normal;
layout(location = 2) in vec2 in_uv;

layout(push_constant) uniform Draw {
    mat4 mvp;
    vec4 model[3]; // rows of the 3x4 model matrix
    vec4 params;   // material, MSAA samples, uv scale, seed
} d;

layout(location = 0) out vec3 world_normal;
layout(location = 1) out vec2 uv;
layout(location = 2) flat out vec3 material; // material, MSAA samples, seed
layout(location = 3) out vec3 world_pos;

void main() {
    const vec4 p = vec4(in_pos, 1.0);
    world_pos = vec3(dot(d.model[0], p), dot(d.model[1], p), dot(d.model[2], p));
    world_normal = vec3(dot(d.model[0].xyz, in_normal), dot(d.model[1].xyz, in_normal), dot(d.model[2].xyz, in_normal));
    uv = in_uv * d.params.z;
    material = vec3(d.params.x, d.params.y, d.params.w);
    gl_Position = d.mvp * p;
}
