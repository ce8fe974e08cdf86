// The operator micro-benchmark cases: small sizes that run on lavapipe in CI-sized time, and the
// real sizes of vkml's target networks (super-resolution at 960x540) for a real GPU.
#include "op_bench.hpp"

#include "vkml/ops/conv.hpp"
#include "vkml/ops/elementwise.hpp"
#include "vkml/ops/layout.hpp"
#include "vkml/ops/norm.hpp"
#include "vkml/ops/reduce.hpp"

#include "vkml/error.hpp"
#include <cstdlib>
#include <sstream>

namespace vkml::bench {
namespace {

using gpu::DType;
using gpu::Shape;
using ops::TensorDesc;

// h x w is the input; stride 2 halves the output (pads k / 2).
// acc: the accumulation asked for (F16: f16 sums on tensor cores where the device has them; the
// name says " acc16").
OpBenchCase conv_case(bool large, int64_t c, int64_t m, int64_t k, int64_t h, int64_t w, int64_t group = 1,
                      int64_t stride = 1, ops::Accumulation acc = ops::Accumulation::F32) {
    const int64_t pad = k / 2;
    const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
    OpBenchCase bc;
    bc.large = large;
    bc.name = "Conv " + std::to_string(k) + "x" + std::to_string(k) +
              (stride > 1 ? " s" + std::to_string(stride) : std::string()) + " " + std::to_string(c) + "->" +
              std::to_string(m) + (group > 1 ? " dw" : "") + " @ " + std::to_string(w) + "x" +
              std::to_string(h) + (acc == ops::Accumulation::F16 ? " acc16" : "");
    bc.flops = 2.0 * double(m) * double(c / group) * double(k * k) * double(oh * ow);
    bc.bytes = 4.0 * double(c * h * w + m * oh * ow + m * (c / group) * k * k);
    bc.make = [=](gpu::Device& d, DType t) -> std::unique_ptr<ops::Op> {
        return ops::Conv::create(d, {.input = {{1, c, h, w}, t},
                                     .weight = {{m, c / group, k, k}, t},
                                     .bias = TensorDesc{{m}, t},
                                     .strides = {stride, stride},
                                     .pads = {pad, pad, pad, pad},
                                     .group = group,
                                     .activation = {ops::ActivationKind::Relu},
                                     .accumulation = acc});
    };
    return bc;
}

OpBenchCase unary_case(bool large, Shape shape) {
    OpBenchCase bc;
    bc.large = large;
    bc.name = "Sigmoid " + shape.str();
    bc.bytes = 8.0 * double(shape.elements());
    bc.make = [=](gpu::Device& d, DType t) -> std::unique_ptr<ops::Op> {
        return ops::Unary::create(d, {.kind = ops::UnaryKind::Sigmoid, .input = {shape, t}});
    };
    return bc;
}

OpBenchCase add_case(bool large, Shape shape) {
    OpBenchCase bc;
    bc.large = large;
    bc.name = "Add (residual) " + shape.str();
    bc.bytes = 12.0 * double(shape.elements());
    bc.make = [=](gpu::Device& d, DType t) -> std::unique_ptr<ops::Op> {
        return ops::Binary::create(d, {.kind = ops::BinaryKind::Add, .a = {shape, t}, .b = {shape, t}});
    };
    return bc;
}

OpBenchCase depth_to_space_case(bool large, int64_t c, int64_t h, int64_t w, const char* mode = "CRD") {
    OpBenchCase bc;
    bc.large = large;
    bc.name = "DepthToSpace x2 " + std::string(mode == std::string("CRD") ? "" : "DCR ") + std::to_string(c) +
              "ch @ " + std::to_string(w) + "x" + std::to_string(h);
    bc.bytes = 8.0 * double(c * h * w);
    bc.make = [=](gpu::Device& d, DType t) -> std::unique_ptr<ops::Op> {
        return ops::DepthToSpace::create(d, {.input = {{1, c, h, w}, t}, .blocksize = 2, .mode = mode});
    };
    return bc;
}

OpBenchCase resize_case(bool large, int64_t c, int64_t h, int64_t w, int64_t k = 2,
                        const char* ctm = "half_pixel") {
    OpBenchCase bc;
    bc.large = large;
    bc.name = "Resize linear x" + std::to_string(k) + " " +
              (ctm == std::string("half_pixel") ? std::string() : std::string(ctm) + " ") + std::to_string(c) +
              "ch @ " + std::to_string(w) + "x" + std::to_string(h);
    bc.bytes = 4.0 * double(c * h * w) * double(1 + k * k); // read 1, write k²
    bc.make = [=](gpu::Device& d, DType t) -> std::unique_ptr<ops::Op> {
        return ops::Resize::create(d, {.input = {{1, c, h, w}, t},
                                       .scales = {1.f, 1.f, float(k), float(k)},
                                       .mode = "linear",
                                       .coordinate_transformation_mode = ctm});
    };
    return bc;
}

OpBenchCase instance_norm_case(bool large, int64_t c, int64_t h, int64_t w) {
    OpBenchCase bc;
    bc.large = large;
    bc.name = "InstanceNorm+ReLU " + std::to_string(c) + "ch @ " + std::to_string(w) + "x" + std::to_string(h);
    bc.bytes = 8.0 * double(c * h * w);
    bc.make = [=](gpu::Device& d, DType t) -> std::unique_ptr<ops::Op> {
        return ops::InstanceNormalization::create(d, {.input = {{1, c, h, w}, t},
                                                      .scale = {{c}, t},
                                                      .bias = {{c}, t},
                                                      .activation = {ops::ActivationKind::Relu}});
    };
    return bc;
}

OpBenchCase softmax_case(bool large, int64_t rows, int64_t cols) {
    OpBenchCase bc;
    bc.large = large;
    bc.name = "Softmax " + std::to_string(rows) + "x" + std::to_string(cols);
    bc.bytes = 8.0 * double(rows * cols);
    bc.make = [=](gpu::Device& d, DType t) -> std::unique_ptr<ops::Op> {
        return ops::Softmax::create(d, {.input = {{rows, cols}, t}, .axis = -1});
    };
    return bc;
}

OpBenchCase matmul_case(bool large, int64_t m, int64_t k, int64_t n, ops::Accumulation acc = ops::Accumulation::F32) {
    OpBenchCase bc;
    bc.large = large;
    bc.name = "MatMul " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) +
              (acc == ops::Accumulation::F16 ? " acc16" : "");
    bc.flops = 2.0 * double(m) * double(k) * double(n);
    bc.bytes = 4.0 * double(m * k + k * n + m * n);
    bc.make = [=](gpu::Device& d, DType t) -> std::unique_ptr<ops::Op> {
        return ops::MatMul::create(d, {.a = {{m, k}, t}, .b = {{k, n}, t}, .accumulation = acc});
    };
    return bc;
}

} // namespace

std::vector<OpBenchCase> op_bench_cases() {
    return {
        // small: lavapipe
        conv_case(false, 16, 16, 3, 32, 32),
        conv_case(false, 16, 16, 1, 32, 32),
        conv_case(false, 16, 16, 3, 32, 32, 16),
        matmul_case(false, 128, 128, 128),
        unary_case(false, {1, 16, 64, 64}),
        add_case(false, {1, 16, 64, 64}),
        depth_to_space_case(false, 12, 32, 32),
        resize_case(false, 3, 64, 64),
        instance_norm_case(false, 16, 64, 64),
        softmax_case(false, 64, 1000),
        // large: the layers of esrgan-slim / Anime4K at 960x540 and a style-transfer block
        conv_case(true, 64, 64, 3, 540, 960),
        conv_case(true, 32, 32, 3, 540, 960),
        conv_case(true, 64, 64, 1, 540, 960),
        conv_case(true, 64, 64, 3, 540, 960, 64),
        conv_case(true, 3, 64, 3, 540, 960),
        conv_case(true, 64, 4, 3, 540, 960),   // esrgan-slim's dense-block growth layers
        conv_case(true, 64, 64, 5, 540, 960),  // esrgan's UPN1
        conv_case(true, 12, 3, 3, 1080, 1920), // esrgan's last layer, after the upsampling
        // the style network's downsampling layers (stride 2: outputs 960x540 and 480x270)
        conv_case(true, 32, 64, 3, 1080, 1920, 1, 2),
        conv_case(true, 64, 128, 3, 540, 960, 1, 2),
        // a detector's small grids (NanoDet at 416x416): few pixels, long K
        conv_case(true, 128, 128, 3, 52, 52, 1, 2),
        conv_case(true, 128, 128, 3, 26, 26),
        conv_case(true, 256, 128, 3, 13, 13),
        conv_case(true, 512, 128, 1, 13, 13),
        matmul_case(true, 2048, 2048, 2048),
        // f16 accumulation (ops::Accumulation::F16) on the same shapes
        conv_case(true, 64, 64, 3, 540, 960, 1, 1, ops::Accumulation::F16),
        conv_case(true, 64, 64, 1, 540, 960, 1, 1, ops::Accumulation::F16),
        matmul_case(true, 2048, 2048, 2048, ops::Accumulation::F16),
        matmul_case(true, 64, 64, 518400),
        unary_case(true, {1, 64, 540, 960}),
        add_case(true, {1, 64, 540, 960}),
        depth_to_space_case(true, 12, 540, 960),
        depth_to_space_case(true, 12, 540, 960, "DCR"),
        resize_case(true, 3, 540, 960),
        resize_case(true, 3, 540, 960, 2, "align_corners"),
        resize_case(true, 3, 270, 480, 4),
        instance_norm_case(true, 64, 270, 480),
        softmax_case(true, 4096, 1000),
        softmax_case(true, 128, 32768), // rows longer than the registers hold: read twice
    };
}

namespace {

// The entries of a list "a,b,c;d,e,f;..." in environment variable `name`, each of `min_fields` to
// `max_fields` sizes from 1 to 65536; a malformed entry is an error naming it and `form`.
std::vector<std::vector<int64_t>> env_size_lists(const char* name, const char* form, size_t min_fields,
                                                 size_t max_fields) {
    std::vector<std::vector<int64_t>> out;
    const char* env = std::getenv(name);
    if (!env) return out;
    std::stringstream all(env);
    std::string item;
    while (std::getline(all, item, ';')) {
        if (item.empty()) continue;
        const auto bad = [&](const char* what) {
            return Error(ErrorCode::InvalidArgument,
                         std::string(name) + ": '" + item + "' is not " + form + what);
        };
        std::vector<int64_t> v;
        std::stringstream one(item);
        std::string field;
        while (std::getline(one, field, ',')) {
            char* end = nullptr;
            const long long x = std::strtoll(field.c_str(), &end, 10);
            if (field.empty() || *end != '\0' || x < 1 || x > 65536) throw bad(" of positive sizes");
            v.push_back(x);
        }
        if (v.size() < min_fields || v.size() > max_fields) throw bad("");
        out.push_back(std::move(v));
    }
    return out;
}

} // namespace

// More large cases, for tuning a network's own layers on a device. A malformed entry is an error
// naming it.
//   VKML_BENCH_CONV="C,M,K,H,W[,STRIDE];...": Conv (group 1, pads K / 2)
//   VKML_BENCH_MATMUL="M,K,N;...": MatMul [M, K] x [K, N], fp32 accumulation
std::vector<OpBenchCase> op_bench_extra_cases() {
    std::vector<OpBenchCase> out;
    for (const auto& v : env_size_lists("VKML_BENCH_CONV", "C,M,K,H,W[,STRIDE]", 5, 6))
        out.push_back(conv_case(true, v[0], v[1], v[2], v[3], v[4], 1, v.size() == 6 ? v[5] : 1));
    for (const auto& v : env_size_lists("VKML_BENCH_MATMUL", "M,K,N", 3, 3))
        out.push_back(matmul_case(true, v[0], v[1], v[2]));
    return out;
}

} // namespace vkml::bench
