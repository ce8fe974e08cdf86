#version 450
// Detection box outlines: the class colour from boxes.vert, opaque.
layout(location = 0) flat in vec4 color;
layout(location = 0) out vec4 frag;

void main() {
    frag = color;
}
