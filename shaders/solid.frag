#version 450
// One colour from the push constants (the core's raster-pipeline tests).
layout(push_constant) uniform Params { vec4 color; } p;
layout(location = 0) out vec4 color;

void main() {
    color = p.color;
}
