#version 450
// Two overlapping triangles at different depths, the nearer one drawn first: only a working depth
// attachment keeps it in front. `shift` moves them from frame to frame.
layout(push_constant) uniform Params { float shift; } p;
layout(location = 0) out vec3 color;

const vec3 positions[6] = vec3[](vec3(-0.6, 0.8, 0.3), vec3(0.9, 0.7, 0.3), vec3(0.2, -0.9, 0.3),
                                 vec3(-0.9, -0.8, 0.6), vec3(0.7, -0.5, 0.6), vec3(-0.3, 0.9, 0.6));
const vec3 colors[6] = vec3[](vec3(1.0, 0.2, 0.1), vec3(0.9, 0.8, 0.1), vec3(0.8, 0.1, 0.6),
                              vec3(0.1, 0.3, 1.0), vec3(0.2, 0.9, 0.4), vec3(0.0, 0.7, 0.9));

void main() {
    vec3 pos = positions[gl_VertexIndex];
    pos.x += p.shift * (gl_VertexIndex < 3 ? 1.0 : -1.0);
    gl_Position = vec4(pos, 1.0);
    color = colors[gl_VertexIndex];
}
