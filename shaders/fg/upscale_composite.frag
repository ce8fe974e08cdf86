#version 450
// The frame-graph bench's composite at output resolution: a weighted (2 taps + 1)^2 filter over
// the upscaled tensor, blended over the bilinearly enlarged scene.
layout(set = 0, binding = 0) uniform sampler2D scene;
layout(std430, set = 0, binding = 1) readonly buffer Features { float data[]; } features;
layout(push_constant) uniform Params { int width; int height; int taps; } p;
layout(location = 0) out vec4 out_color;

void main() {
    ivec2 px = ivec2(gl_FragCoord.xy);
    int n = p.width * p.height;
    vec3 acc = vec3(0.0);
    float total = 0.0;
    for (int dy = -p.taps; dy <= p.taps; ++dy)
        for (int dx = -p.taps; dx <= p.taps; ++dx) {
            ivec2 q = clamp(px + ivec2(dx, dy), ivec2(0), ivec2(p.width - 1, p.height - 1));
            int i = q.y * p.width + q.x;
            float w = 1.0 / (1.0 + float(dx * dx + dy * dy));
            acc += w * vec3(features.data[i], features.data[n + i], features.data[2 * n + i]);
            total += w;
        }
    vec3 s = texture(scene, gl_FragCoord.xy / vec2(p.width, p.height)).rgb;
    out_color = vec4(mix(s, acc / total, 0.7), 1.0);
}
