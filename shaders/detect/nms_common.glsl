// Shared by the NonMaxSuppression kernels: the sort key of a candidate box.
//
// A key is a uvec2 compared lexicographically, larger first: x is the score's bits mapped so that
// unsigned order is float order, y is the bitwise complement of the box index, so that of two
// equal scores the lower box index sorts first (ONNX Runtime's tie rule). (0, 0) is the sentinel
// for "not a candidate" (padding, a score not above score_threshold, or NaN): no real score maps
// to x == 0, so sentinels sort after every candidate.
#ifndef VKML_DETECT_NMS_COMMON_GLSL
#define VKML_DETECT_NMS_COMMON_GLSL

const uvec2 nms_sentinel = uvec2(0u, 0u);

uvec2 nms_key(float score, uint index) {
    // +0 and -0 compare equal as floats, so they must map to one key (then the index decides).
    uint bits = score == 0.0 ? 0u : floatBitsToUint(score);
    uint ordered = (bits & 0x80000000u) != 0u ? ~bits : (bits | 0x80000000u);
    return uvec2(ordered, ~index);
}

bool nms_key_less(uvec2 a, uvec2 b) {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

#endif
