// Reads index j of the `idx` buffer (i32, i64 as (low, high) word pairs with VKML_INDEX64, or f32
// truncated toward zero with VKML_INDEX_FLOAT) and
// normalizes it against `len`: negative counts from the end; -1 when it is outside [0, len) or an
// i64 that does not fit 32 bits. Include after declaring `idx`.
int read_index(uint j, uint len) {
#if VKML_INDEX64
    int k = idx.data[2 * j];
    bool fits = idx.data[2 * j + 1] == (k >> 31);
#elif VKML_INDEX_FLOAT
    float f = intBitsToFloat(idx.data[j]);
    bool fits = abs(f) < 2147483520.0;
    int k = fits ? int(f) : 0;
#else
    int k = idx.data[j];
    bool fits = true;
#endif
    if (k < 0) k += int(len);
    return fits && k >= 0 && k < int(len) ? k : -1;
}
