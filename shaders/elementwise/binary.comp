#version 450
#extension GL_GOOGLE_include_directive : require
#if VKML_EW_OUT_BOOL
#extension GL_EXT_shader_8bit_storage : require
#endif
#include "common.glsl"
#include "elementwise/ops.glsl"
// c[i] = act(a[ia] <op> b[ib]) with numpy broadcasting. The C++ side merges dimensions that need no
// index math between them, so RANK (a specialization constant, hence an unrolled loop) is the
// number of dimensions left: 0 means every operand has c's shape and i indexes all three directly.
// dims are c's dimensions outermost first, sa and sb the operands' element strides (0 on broadcast
// dimensions). Built once with float/int results (elementwise_binary) and once with bool results
// (elementwise_compare, VKML_EW_OUT_BOOL), where the variant is the operands' type.
VKML_LOCAL_SIZE;
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint RANK = 0;
layout(constant_id = 2) const uint ACT = 0;
// 4 (RANK 0, float results only): each invocation takes four consecutive elements with one vector
// load per operand and one store; the C++ side picks it when every binding starts on 16 bytes.
layout(constant_id = 3) const uint VEC = 1;

layout(std430, set = 0, binding = 0) readonly buffer A { stype data[]; } a;
layout(std430, set = 0, binding = 1) readonly buffer B { stype data[]; } b;
#if VKML_EW_OUT_BOOL
layout(std430, set = 0, binding = 2) writeonly buffer C { uint8_t data[]; } c;
#else
layout(std430, set = 0, binding = 2) writeonly buffer C { stype data[]; } c;
#if !VKML_I32
layout(std430, set = 0, binding = 0) readonly buffer A4 { stype4 data[]; } a4;
layout(std430, set = 0, binding = 1) readonly buffer B4 { stype4 data[]; } b4;
layout(std430, set = 0, binding = 2) writeonly buffer C4 { stype4 data[]; } c4;
#endif
#endif
// alpha, beta: the fused activation's parameters; scale: Mean's 1/N.
layout(push_constant) uniform Params {
    uint n;
    float alpha;
    float beta;
    float scale;
    uint dims[6];
    uint sa[6];
    uint sb[6];
} p;

#if VKML_EW_OUT_BOOL
uint apply(ctype x, ctype y) {
    switch (OP) {
    case EW_EQUAL: return uint(x == y);
    case EW_LESS: return uint(x < y);
    case EW_LESS_EQUAL: return uint(x <= y);
    case EW_GREATER: return uint(x > y);
    case EW_GREATER_EQUAL: return uint(x >= y);
    case EW_AND: return uint(x != ctype(0) && y != ctype(0));
    case EW_OR: return uint(x != ctype(0) || y != ctype(0));
    case EW_XOR: return uint((x != ctype(0)) != (y != ctype(0)));
    default: return 0u;
    }
}
#elif VKML_I32
int apply(int x, int y) {
    // OpSDiv truncates toward zero, as C, but is undefined behaviour for y = 0 and INT_MIN / -1,
    // even when a ?: discards it (a compiler may select instead of branch): divide by a safe d.
    // y = 0 gives 0 (Div and Mod), y = -1 gives the wrapped -x (Div) and 0 (Mod).
    bool special = y == 0 || y == -1;
    int d = special ? 1 : y;
    switch (OP) {
    case EW_ADD: return x + y;
    case EW_SUB: return x - y;
    case EW_MUL: return x * y;
    case EW_DIV: return special ? (y == 0 ? 0 : -x) : x / d;
    case EW_MOD:
    case EW_FMOD: {
        // Vulkan makes % (OpSMod / OpSRem) of a negative operand poison, so take the remainder
        // from the truncating division (the dividend's sign), then move it to the divisor's sign
        // for fmod = 0.
        if (special) return 0;
        int r = x - (x / d) * d;
        if (OP == EW_MOD && r != 0 && (r < 0) != (y < 0)) r += y;
        return r;
    }
    case EW_MAX: return max(x, y);
    case EW_MIN: return min(x, y);
    case EW_FIRST: return x;
    // Shifts by 32 or more (or a negative count, a huge unsigned one) give 0: GLSL leaves them undefined.
    case EW_SHL: return uint(y) >= 32u ? 0 : int(uint(x) << uint(y));
    case EW_SHR: return uint(y) >= 32u ? 0 : int(uint(x) >> uint(y));
    case EW_POW: {
        // Integer power by squaring, wrapping as integer multiplication does; a negative exponent
        // gives the truncated 1 / x^-y (0 unless x is 1 or -1; 0 for x = 0 too).
        if (y < 0) return x == 1 ? 1 : (x == -1 ? ((y & 1) != 0 ? -1 : 1) : 0);
        int r = 1, base = x;
        for (uint e = uint(y); e != 0u; e >>= 1) {
            if ((e & 1u) != 0u) r *= base;
            base *= base;
        }
        return r;
    }
    default: return 0;
    }
}
#else
#include "activation.glsl"

float ew_nan() { return uintBitsToFloat(0x7fc00000u); }

// C pow: negative bases only with integral exponents (odd ones keep the sign), 0^negative = inf.
float ew_pow(float x, float y) {
    if (y == 0.0) return 1.0;
    float m = x == 0.0 ? (y > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u)) : pow(abs(x), y);
    if (x < 0.0) {
        if (floor(y) != y) return ew_nan();
        if (y - 2.0 * floor(0.5 * y) == 1.0) m = -m;
    }
    return m;
}

// C fmod, exact: |x| = mx * 2^(ex-24) and |y| = my * 2^(ey-24) with 24-bit integer mantissas, so
// |x| mod |y| = 2^(ey-24) * ((mx * 2^(ex-ey)) mod my), which integer arithmetic gets exactly, 8 bits
// of the exponent difference at a time (r < 2^24, so r << 8 fits 32 bits). x - y * trunc(x / y) in
// fp32 is not enough: fmod(1, 0.1f) would come out as 0 instead of 0.099999986.
float ew_fmod(float x, float y) {
    float ax = abs(x), ay = abs(y);
    if (isnan(x) || isnan(y) || isinf(x) || ay == 0.0) return ew_nan();
    if (ax < ay) return x; // also fmod(x, inf) = x
    int ex, ey;
    uint mx = uint(ldexp(frexp(ax, ex), 24));
    uint my = uint(ldexp(frexp(ay, ey), 24));
    uint r = mx % my;
    for (int e = ex - ey; e > 0; e -= 8) r = (r << min(e, 8)) % my;
    float m = ldexp(float(r), ey - 24);
    return x < 0.0 ? -m : m;
}

float apply(float x, float y) {
    switch (OP) {
    case EW_ADD: return x + y;
    case EW_SUB: return x - y;
    case EW_MUL: return x * y;
    case EW_DIV: return x / y;
    case EW_POW: return ew_pow(x, y);
    case EW_MOD: {
        float r = ew_fmod(x, y);
        return r != 0.0 && (r < 0.0) != (y < 0.0) ? r + y : r;
    }
    case EW_FMOD: return ew_fmod(x, y);
    case EW_PRELU: return x < 0.0 ? x * y : x;
    case EW_MAX: return max(x, y);
    case EW_MIN: return min(x, y);
    case EW_ADD_SCALE: return (x + y) * p.scale;
    case EW_FIRST: return x;
    default: return 0.0;
    }
}

#if VKML_FP16_ARITH
// Half-precision forms of the ops the C++ side runs in f16a: correctly rounded (add, sub, mul:
// the same bound as fp32 math rounded to f16 on store) or exact (max, min, copy). Division only for
// divisors where half-precision OpFDiv is bounded (2.5 ULP: |y| in [2^-14, 2^14], or 0), others in
// fp32. Pow, Mod and Mean's scaled add widen to the fp32 apply() (never selected with f16a).
afloat apply_half(afloat x, afloat y) {
    switch (OP) {
    case EW_ADD: return x + y;
    case EW_SUB: return x - y;
    case EW_MUL: return x * y;
    case EW_DIV: {
        afloat a = abs(y);
        bool bounded = a == afloat(0) || (a >= afloat(0.00006103515625) && a <= afloat(16384));
        return bounded ? x / y : afloat(float(x) / float(y));
    }
    case EW_PRELU: return x < afloat(0) ? x * y : x;
    case EW_MAX: return max(x, y);
    case EW_MIN: return min(x, y);
    case EW_FIRST: return x;
    default: return afloat(apply(float(x), float(y)));
    }
}
#endif
#endif

#if !(VKML_EW_OUT_BOOL || VKML_I32)
float value(ctype x, ctype y) {
#if VKML_FP16_ARITH
    // The op's result as the f16 it would be stored as; the fused activation runs on it in fp32,
    // as an unfused activation on the stored tensor would.
    float v = float(apply_half(x, y));
#else
    float v = apply(float(x), float(y));
#endif
    if (ACT != VKML_ACT_NONE) v = vkml_activate(ACT, v, p.alpha, p.beta);
    return v;
}
#endif

void main() {
#if !(VKML_EW_OUT_BOOL || VKML_I32)
    if (VEC == 4) {
        const uint q = vkml_linear_id(), i0 = q * 4;
        if (i0 >= p.n) return;
        if (i0 + 4 <= p.n) {
            const ctype4 x = ctype4(a4.data[q]), y = ctype4(b4.data[q]);
            c4.data[q] = stype4(vec4(value(x.x, y.x), value(x.y, y.y), value(x.z, y.z), value(x.w, y.w)));
        } else {
            for (uint i = i0; i < p.n; ++i) c.data[i] = stype(value(ctype(a.data[i]), ctype(b.data[i])));
        }
        return;
    }
#endif
    uint i = vkml_linear_id();
    if (i >= p.n) return;
    uint ia = i, ib = i;
    if (RANK > 0) {
        // Peel c's multi-index from the innermost dimension out; the outermost needs no division.
        uint rem = i;
        ia = 0;
        ib = 0;
        for (uint d = RANK - 1; d > 0; --d) {
            uint q = rem / p.dims[d];
            uint r = rem - q * p.dims[d];
            ia += r * p.sa[d];
            ib += r * p.sb[d];
            rem = q;
        }
        ia += rem * p.sa[0];
        ib += rem * p.sb[0];
    }
#if VKML_EW_OUT_BOOL
    c.data[i] = uint8_t(apply(ctype(a.data[ia]), ctype(b.data[ib])));
#elif VKML_I32
    c.data[i] = apply(a.data[ia], b.data[ib]);
#else
    c.data[i] = stype(value(ctype(a.data[ia]), ctype(b.data[ib])));
#endif
}
