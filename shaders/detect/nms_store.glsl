// Shared by nms_scatter.comp and nms_compact.comp: one index of a selected_indices row. The
// including kernel declares INDEX64 and the output buffer `dst` (uint words) first.
#ifndef VKML_DETECT_NMS_STORE_GLSL
#define VKML_DETECT_NMS_STORE_GLSL

// Column `col` of row `row`: a 32-bit index, or an i64 as two little-endian words (the high word
// all ones for the -1 of an unused row).
void store(uint row, uint col, uint value, bool negative) {
    uint e = row * 3u + col;
    if (INDEX64 != 0) {
        dst.data[2u * e] = value;
        dst.data[2u * e + 1u] = negative ? 0xffffffffu : 0u;
    } else {
        dst.data[e] = value;
    }
}

#endif
