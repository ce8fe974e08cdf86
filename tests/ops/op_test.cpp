#include "op_test.hpp"

#include <cmath>
#include <random>

namespace vkml::test {

double round_to(double v, gpu::DType dtype) {
    switch (dtype) {
    case gpu::DType::f32:
        return double(float(v));
    case gpu::DType::f16:
        return double(gpu::half_to_float(gpu::float_to_half(float(v))));
    default:
        return std::round(v);
    }
}

HostTensor random_tensor(const gpu::Shape& shape, gpu::DType dtype, uint32_t seed, double lo, double hi,
                         double min_magnitude) {
    HostTensor t(shape, dtype);
    std::mt19937 rng(seed * 2654435761u + 17);
    std::uniform_real_distribution<double> dist(lo, hi);
    for (double& v : t.data) {
        double x;
        do {
            x = round_to(dist(rng), dtype);
        } while (std::fabs(x) < min_magnitude && (lo < -min_magnitude || hi > min_magnitude));
        v = x;
    }
    return t;
}

HostTensor random_ints(const gpu::Shape& shape, gpu::DType dtype, uint32_t seed, int64_t lo, int64_t hi) {
    HostTensor t(shape, dtype);
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + 3);
    std::uniform_int_distribution<int64_t> dist(lo, hi);
    for (double& v : t.data) v = double(dist(rng));
    return t;
}

std::vector<HostTensor> run_op(gpu::Device& device, const ops::Op& op, const std::vector<HostTensor>& inputs,
                               int repeat) {
    std::vector<gpu::Tensor> in, out;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const HostTensor& h = inputs[i];
        in.emplace_back(device, h.shape(), h.desc.dtype,
                        std::string(op.type()) + " input " + std::to_string(i));
        std::vector<float> f(h.data.begin(), h.data.end());
        gpu::upload(device, in.back(), f);
    }
    for (size_t i = 0; i < op.outputs().size(); ++i)
        out.emplace_back(device, op.outputs()[i].shape, op.outputs()[i].dtype,
                         std::string(op.type()) + " output " + std::to_string(i));
    std::unique_ptr<gpu::Buffer> scratch;
    if (op.scratch_bytes())
        scratch = std::make_unique<gpu::Buffer>(
            device, gpu::BufferDesc{.size = op.scratch_bytes(), .name = "scratch"});
    device.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        for (int r = 0; r < repeat; ++r) {
            if (r) gpu::barrier::compute_to_compute(cmd);
            op.record(cmd, in, out, scratch ? scratch->range() : gpu::BufferRange{});
        }
        gpu::barrier::compute_to_transfer(cmd);
    });
    std::vector<HostTensor> result;
    auto download = [&] {
        std::vector<HostTensor> r;
        for (size_t i = 0; i < out.size(); ++i) {
            HostTensor h(out[i].shape(), out[i].dtype());
            const auto f = gpu::download_floats(device, out[i]);
            h.data.assign(f.begin(), f.end());
            r.push_back(std::move(h));
        }
        return r;
    };
    result = download();
    // An op that re-packs an input on every run (Op::prepack), repeated: the same records with that
    // input packed once first must give the very same outputs.
    if (const ops::Op::Prepack pp = op.prepack(); pp.bytes && repeat > 1) {
        gpu::Buffer packed(device, gpu::BufferDesc{.size = pp.bytes, .name = "prepacked"});
        device.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
            gpu::barrier::transfer_to_compute(cmd);
            op.record_prepack(cmd, in.at(pp.input), packed.range());
            for (int r = 0; r < repeat; ++r) {
                gpu::barrier::compute_to_compute(cmd);
                op.record(cmd, in, out, scratch ? scratch->range() : gpu::BufferRange{}, packed.range());
            }
            gpu::barrier::compute_to_transfer(cmd);
        });
        const auto again = download();
        for (size_t i = 0; i < again.size(); ++i)
            if (again[i].data != result[i].data)
                ADD_FAILURE() << op.type() << " output " << i << " differs with input " << pp.input << " prepacked";
    }
    return result;
}

double relative_error(const HostTensor& got, const HostTensor& want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double d = got[i] - want[i];
        num += d * d;
        den += want[i] * want[i];
    }
    if (std::isnan(num)) return INFINITY;
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

void expect_close(const HostTensor& got, const HostTensor& want, double tol, const std::string& what) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    ASSERT_EQ(got.size(), want.size()) << what;
    const double err = relative_error(got, want);
    if (!(err <= tol)) {
        size_t worst = 0;
        for (size_t i = 1; i < want.size(); ++i)
            if (!(std::fabs(got[i] - want[i]) <= std::fabs(got[worst] - want[worst]))) worst = i;
        ADD_FAILURE() << what << ": relative error " << err << " > " << tol << "; worst element " << worst
                      << ": got " << got[worst] << ", want " << want[worst];
    }
}

void expect_equal(const HostTensor& got, const HostTensor& want, const std::string& what) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << what << ": element " << i;
}

std::vector<int64_t> strides_of(const gpu::Shape& shape) {
    std::vector<int64_t> s(shape.rank());
    int64_t acc = 1;
    for (size_t i = shape.rank(); i-- > 0;) {
        s[i] = acc;
        acc *= shape[i];
    }
    return s;
}

std::vector<gpu::DType> float_dtypes(gpu::Device& device) {
    std::vector<gpu::DType> v{gpu::DType::f32};
    if (device.caps().storage16) v.push_back(gpu::DType::f16);
    return v;
}

} // namespace vkml::test
