// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against ref_loss, f32 and f16 storage, at
// odd sizes (a sum over more targets than the reducing workgroup has invocations), with and
// without weights and ignore_index, i32 and i64 targets.
#include <gtest/gtest.h>

#include <string>

#include "op_test.hpp"
#include "ref/loss_ref.hpp"
#include "vkml/ops/loss.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;
namespace ref = ref_loss;

class LossTest : public GpuTest {};

// Relative L2 error: f32 1e-5 (fp32 sums of up to ~700 terms, exp/log in the log-softmax); f16: the
// inputs' and log-probabilities' rounding (2^-11 each), 2e-3.
TEST_F(LossTest, MatchesReference) {
    uint32_t seed = 1;
    for (DType dtype : float_dtypes(dev()))
        for (bool softmax : {false, true})
            for (const Shape& shape : {Shape{3, 5}, Shape{5, 7, 3, 47}, Shape{2, 3, 13}})
                for (const char* reduction : {"none", "sum", "mean"})
                    for (int variant = 0; variant < 3; ++variant) {
                        // 0: plain, i64 targets; 1: weights and ignore_index, i32 targets; 2:
                        // weights, a negative ignore_index, i64 targets, one out of range.
                        const int64_t c = shape[1];
                        std::vector<int64_t> tdims = {shape[0]};
                        for (size_t k = 2; k < shape.rank(); ++k) tdims.push_back(shape[k]);
                        const Shape tshape{std::span<const int64_t>(tdims)};
                        const DType tdt = variant == 1 ? DType::i32 : DType::i64;
                        const HostTensor x = random_tensor(shape, dtype, seed++, -3.0, 3.0);
                        HostTensor t = random_ints(tshape, tdt, seed++, variant == 2 ? -1 : 0, c - 1);
                        if (variant == 2) t[0] = double(c + 4);
                        t[t.size() - 1] = double(c - 1); // at least one target counts (a mean over none is NaN)
                        const HostTensor w = random_tensor({c}, dtype, seed++, 0.2, 2.0);
                        ops::LossDesc d{.softmax = softmax, .input = x.desc, .target = t.desc,
                                        .reduction = reduction};
                        std::optional<int64_t> ignore;
                        if (variant >= 1) {
                            d.weight = w.desc;
                            ignore = variant == 1 ? 1 : -1;
                            d.ignore_index = ignore;
                        }
                        d.log_prob = softmax && variant == 1;
                        const auto op = ops::Loss::create(dev(), d);
                        std::vector<HostTensor> in = {x, t};
                        if (variant >= 1) in.push_back(w);
                        const auto out = run_op(dev(), *op, in, 2);
                        const HostTensor lp = softmax ? ref::log_softmax_axis1(x) : x;
                        const std::string what = std::string(op->type()) + " " + gpu::dtype_name(dtype) +
                                                 shape.str() + " " + reduction + " variant " +
                                                 std::to_string(variant);
                        const double tol = tolerance(dtype, 1e-5, 2e-3);
                        expect_close(out[0], ref::nll(lp, t, variant >= 1 ? &w : nullptr, reduction, ignore), tol,
                                     what);
                        if (d.log_prob) {
                            ASSERT_EQ(out.size(), 2u);
                            expect_close(out[1], lp, tol, what + " log_prob");
                        }
                    }
}

TEST_F(LossTest, BadDescriptorsNameTheField) {
    const TensorDesc x{{2, 4, 3}, DType::f32};
    expect_error([&] { (void)ops::Loss::create(dev(), {.input = x, .target = {{2, 4}, DType::i64}}); },
                 {"NegativeLogLikelihoodLoss", "target", "does not match"});
    expect_error([&] { (void)ops::Loss::create(dev(), {.input = x, .target = {{2, 3}, DType::f32}}); },
                 {"target", "i32 or i64"});
    expect_error(
        [&] {
            (void)ops::Loss::create(dev(), {.softmax = true, .input = x, .target = {{2, 3}, DType::i64},
                                            .weight = TensorDesc{{3}, DType::f32}});
        },
        {"SoftmaxCrossEntropyLoss", "weight", "[4]"});
    expect_error(
        [&] {
            (void)ops::Loss::create(dev(), {.input = x, .target = {{2, 3}, DType::i64}, .reduction = "max"});
        },
        {"reduction", "none, sum or mean"});
}

} // namespace
} // namespace vkml::test
