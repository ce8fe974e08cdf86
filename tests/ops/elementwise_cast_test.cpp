// Cast between every pair of f32, f16, i32, i64 and u8, compared bit-exactly: inputs are uploaded
// and outputs read back in their own encoding (not through floats), so 64-bit values beyond 2^24
// and the saturation edges are checked exactly.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "op_test.hpp"
#include "ref/elementwise_ref.hpp"
#include "vkml/ops/elementwise.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
namespace ref = ref_elementwise;

std::vector<std::byte> pack(const std::vector<double>& values, DType dtype) {
    std::vector<std::byte> out(values.size() * gpu::dtype_size(dtype));
    for (size_t i = 0; i < values.size(); ++i) {
        std::byte* p = out.data() + i * gpu::dtype_size(dtype);
        const double v = values[i];
        switch (dtype) {
        case DType::f32: {
            const float f = float(v);
            std::memcpy(p, &f, 4);
            break;
        }
        case DType::f16: {
            const uint16_t h = gpu::float_to_half(float(v));
            std::memcpy(p, &h, 2);
            break;
        }
        case DType::i32: {
            const auto x = int32_t(v);
            std::memcpy(p, &x, 4);
            break;
        }
        case DType::i64: {
            const auto x = int64_t(v);
            std::memcpy(p, &x, 8);
            break;
        }
        case DType::u8:
            *p = std::byte(uint8_t(v));
            break;
        }
    }
    return out;
}

// Decoded elements as long double, which holds every int64 exactly.
std::vector<long double> unpack(const std::vector<std::byte>& bytes, DType dtype, size_t n) {
    std::vector<long double> out(n);
    for (size_t i = 0; i < n; ++i) {
        const std::byte* p = bytes.data() + i * gpu::dtype_size(dtype);
        switch (dtype) {
        case DType::f32: {
            float f;
            std::memcpy(&f, p, 4);
            out[i] = f;
            break;
        }
        case DType::f16: {
            uint16_t h;
            std::memcpy(&h, p, 2);
            out[i] = gpu::half_to_float(h);
            break;
        }
        case DType::i32: {
            int32_t x;
            std::memcpy(&x, p, 4);
            out[i] = x;
            break;
        }
        case DType::i64: {
            int64_t x;
            std::memcpy(&x, p, 8);
            out[i] = x;
            break;
        }
        case DType::u8:
            out[i] = uint8_t(p[0]);
            break;
        }
    }
    return out;
}

// What the destination should hold, exactly: the reference value, stored in `to`.
long double expected(double ref_value, DType to) {
    switch (to) {
    case DType::f32:
        return float(ref_value);
    case DType::f16:
        return gpu::half_to_float(gpu::float_to_half(float(ref_value)));
    case DType::i64:
        if (ref_value >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
        if (ref_value <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
        return (long double)(int64_t(ref_value));
    default:
        return ref_value;
    }
}

bool is_float(DType d) {
    return d == DType::f32 || d == DType::f16;
}

// Inputs for a cast from `from` to `to`: random values plus each edge the pair has. Values an f16
// destination cannot hold (beyond 65504) are left out: f32 -> f16 overflow is not what Cast tests.
HostTensor inputs_for(DType from, DType to, uint32_t seed) {
    std::vector<double> v;
    const bool to_f16 = to == DType::f16;
    if (is_float(from)) {
        const HostTensor r = random_tensor({37}, from, seed, -300, 300);
        v = r.data;
        for (double e : {0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 255.0, 255.9, 256.0, -1.0, 1000.0, -1000.0})
            v.push_back(e);
        if (!to_f16 && from == DType::f32)
            for (double e : {3e9, -3e9, 2147483520.0, -2147483648.0, 1e12, -1e12, 1.5e19, -1.5e19})
                v.push_back(e);
        if (from == DType::f16 && !is_float(to))
            for (double e : {65504.0, -65504.0}) v.push_back(e);
        if (!is_float(to)) // NaN and infinities: integers saturate (NaN -> 0), bool says 1
            for (double e : {double(NAN), double(INFINITY), -double(INFINITY)}) v.push_back(e);
    } else if (from == DType::u8) {
        v = random_ints({37}, DType::u8, seed, 0, 255).data;
        v.push_back(0);
        v.push_back(255);
    } else {
        const int64_t lim = to_f16 ? 60000 : 100000;
        v = random_ints({37}, DType::i32, seed, -lim, lim).data;
        for (double e : {0.0, -1.0, 1.0, 255.0, 256.0, -256.0, 511.0}) v.push_back(e);
        if (!to_f16) {
            for (double e : {2147483647.0, -2147483648.0}) v.push_back(e);
            if (from == DType::i64) // beyond 32 bits: the high word matters, and i32 keeps the low one
                for (double e : {4294967296.0, 4294967551.0, -4294967296.0, 1099511640121.0, -1099511640121.0,
                                 9007199254740991.0, -9007199254740991.0, 6442450943.0})
                    v.push_back(e);
        }
    }
    HostTensor t({int64_t(v.size())}, from);
    t.data = v;
    return t;
}

struct CastResult {
    std::vector<long double> values;
};

CastResult run_cast(gpu::Device& dev, const ops::Cast& op, const HostTensor& x) {
    gpu::Tensor in(dev, x.shape(), x.desc.dtype, "cast input");
    gpu::Tensor out(dev, op.outputs()[0].shape, op.outputs()[0].dtype, "cast output");
    gpu::upload_raw(dev, in, pack(x.data, x.desc.dtype));
    dev.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        op.record(cmd, std::span<const gpu::Tensor>(&in, 1), std::span<const gpu::Tensor>(&out, 1));
        gpu::barrier::compute_to_compute(cmd);
        op.record(cmd, std::span<const gpu::Tensor>(&in, 1), std::span<const gpu::Tensor>(&out, 1));
        gpu::barrier::compute_to_transfer(cmd);
    });
    return {unpack(gpu::download_raw(dev, out), out.dtype(), size_t(out.elements()))};
}

// Casts x from `from` to `to` on the GPU and compares every element with the reference.
void check_cast(gpu::Device& dev, DType from, DType to, bool to_bool, const HostTensor& x, const std::string& what) {
    const auto op = ops::Cast::create(dev, {.input = x.desc, .to = to, .to_bool = to_bool});
    ASSERT_EQ(op->outputs()[0], (ops::TensorDesc{x.shape(), to}));
    // The source as the GPU sees it (rounded to f32 or f16, NaN kept).
    HostTensor stored = x;
    for (double& v : stored.data)
        if (is_float(from) && !std::isnan(v)) v = round_to(v, from);
    const HostTensor want = ref::cast(stored, to, to_bool);
    const CastResult got = run_cast(dev, *op, x);
    for (size_t i = 0; i < x.size(); ++i) {
        const long double w = expected(want[i], to);
        const long double g = got.values[i];
        // i64 beyond 32 bits converts to a float with two roundings: allow 1 ulp there.
        const bool loose = from == DType::i64 && is_float(to) && std::fabs(x[i]) >= 2147483648.0;
        const long double slack = loose ? std::fabs(w) * 1.2e-7L : 0.0L;
        if (!(std::fabs(g - w) <= slack))
            ADD_FAILURE() << what << ": element " << i << " (" << x[i] << "): got " << double(g) << ", want "
                          << double(w);
    }
}

using ElementwiseCast = GpuTest;

TEST_F(ElementwiseCast, EveryPair) {
    std::vector<DType> dtypes = {DType::f32, DType::i32, DType::i64, DType::u8};
    if (dev().caps().storage16) dtypes.push_back(DType::f16);
    uint32_t seed = 1;
    for (DType from : dtypes) {
        for (DType to : dtypes) {
            for (bool to_bool : {false, true}) {
                if (to_bool && to != DType::u8) continue;
                const std::string what = std::string("Cast ") + gpu::dtype_name(from) + " -> " +
                                         (to_bool ? "bool" : gpu::dtype_name(to));
                SCOPED_TRACE(what);
                check_cast(dev(), from, to, to_bool, inputs_for(from, to, seed++), what);
            }
        }
    }
}

TEST_F(ElementwiseCast, FloatToFloatInWholeVectors) {
    // Float to float with a multiple of 4 elements takes 4 an invocation: the same values padded
    // to 52 and a longer random run (odd counts above stay on one element an invocation).
    std::vector<DType> dtypes = {DType::f32};
    if (dev().caps().storage16) dtypes.push_back(DType::f16);
    uint32_t seed = 100;
    for (DType from : dtypes) {
        for (DType to : dtypes) {
            const std::string what = std::string("Cast ") + gpu::dtype_name(from) + " -> " + gpu::dtype_name(to);
            SCOPED_TRACE(what);
            const HostTensor base = inputs_for(from, to, seed++);
            std::vector<double> v = base.data;
            while (v.size() % 4 != 0) v.push_back(-1.25 * double(v.size()));
            HostTensor x({int64_t(v.size())}, from);
            x.data = v;
            check_cast(dev(), from, to, false, x, what + " (52)");
            check_cast(dev(), from, to, false, random_tensor({3, 4, 84}, from, seed++, -60000, 60000), what + " (1008)");
        }
    }
}

} // namespace
} // namespace vkml::test
