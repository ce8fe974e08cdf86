#version 450
// Detection box outlines straight from the detector's GPU output (passes::Detector::add_pass's
// `output` buffer: count as i32 at byte 0, rows of 6 floats x0 y0 x1 y1 score class from byte 16),
// bound as vertex buffers so no descriptors are needed: the rows per instance, the count through a
// stride-0 per-instance binding. One instance per possible detection, 24 vertices each: four
// rectangles (top, bottom, left, right) of `thickness` pixels, the same pixel rectangles as the
// CPU's draw_rect. Instances at or beyond the count collapse to a point and draw nothing.
layout(location = 0) in vec4 box;         // source pixels (= the render's pixels)
layout(location = 1) in vec2 score_class; // score, class id
layout(location = 2) in int count;

layout(push_constant) uniform Push {
    vec2 size;       // render width, height in pixels
    float thickness; // outline width in pixels
} pc;

layout(location = 0) flat out vec4 color;

// The class colour of tools/vkml/detect_app.cpp's class_color(): hues spaced by the golden angle,
// channels 40 + 215 * v, so boxes drawn here match those drawn on images by `vkml detect`.
vec3 class_color(int id) {
    float h = mod(float(id) * 137.508 + 20.0, 360.0) / 60.0;
    float x = 1.0 - abs(mod(h, 2.0) - 1.0);
    vec3 c;
    int i = int(h);
    if (i == 0) c = vec3(1, x, 0);
    else if (i == 1) c = vec3(x, 1, 0);
    else if (i == 2) c = vec3(0, 1, x);
    else if (i == 3) c = vec3(0, x, 1);
    else if (i == 4) c = vec3(x, 0, 1);
    else c = vec3(1, 0, x);
    return floor(40.0 + c * 215.0 + 0.5) / 255.0;
}

void main() {
    const int side = gl_VertexIndex / 6, corner = gl_VertexIndex % 6;
    color = vec4(class_color(int(round(score_class.y))), 1.0);
    if (gl_InstanceIndex >= count) {
        gl_Position = vec4(-2.0, -2.0, 0.0, 1.0);
        return;
    }
    const ivec2 S = ivec2(pc.size);
    const int t = int(pc.thickness);
    // As the CPU path: truncate, clamp into the image, at least one pixel wide and tall.
    const int x0 = clamp(int(min(box.x, box.z)), 0, S.x - 1), y0 = clamp(int(min(box.y, box.w)), 0, S.y - 1);
    const int x1 = clamp(int(max(box.x, box.z)), x0 + 1, S.x), y1 = clamp(int(max(box.y, box.w)), y0 + 1, S.y);
    ivec4 r; // x, y, w, h
    if (side == 0) r = ivec4(x0, y0, x1 - x0, t);
    else if (side == 1) r = ivec4(x0, max(y0, y1 - t), x1 - x0, t);
    else if (side == 2) r = ivec4(x0, y0, t, y1 - y0);
    else r = ivec4(max(x0, x1 - t), y0, t, y1 - y0);
    const vec2 lo = vec2(r.xy), hi = vec2(min(r.xy + r.zw, S));
    // Two triangles: (lo.x, lo.y) (hi.x, lo.y) (lo.x, hi.y), (hi.x, lo.y) (hi.x, hi.y) (lo.x, hi.y).
    const int k = corner < 3 ? corner : corner - 2;
    const vec2 p = vec2(k == 1 || k == 3 ? hi.x : lo.x, k >= 2 ? hi.y : lo.y);
    gl_Position = vec4(p / pc.size * 2.0 - 1.0, 0.0, 1.0);
}
