// Einsum and Det against double-precision references written here (an Einsum that enumerates every
// assignment of every label; a Det by cofactor expansion), on random inputs at odd sizes, in f32 and
// f16 storage.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "op_test.hpp"
#include "vkml/ops/math.hpp"

namespace vkml::test {
namespace {

using gpu::DType;
using gpu::Shape;

std::vector<DType> float_dtypes_here(gpu::Device& d) {
    std::vector<DType> v = {DType::f32};
    if (d.caps().storage16) v.push_back(DType::f16);
    return v;
}

// Letters only: "bij,bjk->bik", "ii->i", "ij" (implicit output: letters seen once, sorted).
HostTensor einsum_ref(const std::string& eq, const std::vector<HostTensor>& in) {
    const size_t arrow = eq.find("->");
    std::vector<std::string> terms;
    std::string lhs = eq.substr(0, arrow), cur;
    for (char c : lhs + ",") {
        if (c == ',') {
            terms.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    std::map<char, int64_t> size;
    std::map<char, int> count;
    for (size_t k = 0; k < terms.size(); ++k)
        for (size_t i = 0; i < terms[k].size(); ++i) {
            size[terms[k][i]] = in[k].shape()[i];
            ++count[terms[k][i]];
        }
    std::string out;
    if (arrow != std::string::npos) {
        out = eq.substr(arrow + 2);
    } else {
        for (const auto& [c, n] : count)
            if (n == 1) out += c;
    }
    std::vector<int64_t> out_dims;
    for (char c : out) out_dims.push_back(size[c]);
    HostTensor r(Shape(std::span<const int64_t>(out_dims)), in[0].desc.dtype);
    std::vector<char> labels;
    for (const auto& [c, s] : size) labels.push_back(c);
    std::map<char, int64_t> at;
    int64_t total = 1;
    for (char c : labels) total *= size[c];
    for (int64_t t = 0; t < total; ++t) {
        int64_t rest = t;
        for (size_t j = labels.size(); j-- > 0;) {
            at[labels[j]] = rest % size[labels[j]];
            rest /= size[labels[j]];
        }
        double prod = 1;
        for (size_t k = 0; k < terms.size(); ++k) {
            int64_t idx = 0;
            for (size_t i = 0; i < terms[k].size(); ++i) idx = idx * in[k].shape()[i] + at[terms[k][i]];
            prod *= in[k][size_t(idx)];
        }
        int64_t o = 0;
        for (size_t i = 0; i < out.size(); ++i) o = o * out_dims[i] + at[out[i]];
        r[size_t(o)] += prod;
    }
    return r;
}

using MathEinsum = GpuTest;

TEST_F(MathEinsum, MatchesReference) {
    struct Case {
        std::string eq;
        std::vector<Shape> shapes;
    };
    const std::vector<Case> cases = {
        {"bij,bjk->bik", {{3, 5, 7}, {3, 7, 9}}},
        {"ij,jk", {{5, 11}, {11, 3}}},
        {"ii->i", {{7, 7}}},
        {"bii->bi", {{3, 5, 5}}},
        {"ij->ji", {{5, 13}}},
        {"ij->", {{7, 9}}},
        {"i,i", {{17}, {17}}},
        {"ijk,k->ij", {{3, 5, 7}, {7}}},
        {"i,j->ij", {{5}, {3}}},
        {"abc->cab", {{3, 1, 5}}},
    };
    for (DType dt : float_dtypes_here(dev())) {
        uint32_t seed = 11;
        for (const Case& c : cases) {
            std::vector<HostTensor> in;
            std::vector<TensorDesc> descs;
            for (const Shape& s : c.shapes) {
                in.push_back(random_tensor(s, dt, seed++));
                descs.push_back(in.back().desc);
            }
            auto op = ops::Einsum::create(dev(), {c.eq, descs});
            const HostTensor want = einsum_ref(c.eq, in);
            expect_close(run_op(dev(), *op, in)[0], want, tolerance(dt, 1e-5, 3e-3),
                         c.eq + " " + gpu::dtype_name(dt));
        }
    }
}

// Ellipses, broadcast between the operands: the same sums as the letters they stand for, with the
// size-1 dimension expanded on the host.
TEST_F(MathEinsum, EllipsisBroadcasts) {
    for (DType dt : float_dtypes_here(dev())) {
        const HostTensor a = random_tensor({2, 1, 3, 5}, dt, 3), b = random_tensor({4, 5, 7}, dt, 4);
        auto op = ops::Einsum::create(dev(), {"...ij,...jk->...ik", {a.desc, b.desc}});
        ASSERT_EQ(op->outputs()[0].shape, (Shape{2, 4, 3, 7}));
        HostTensor wide({2, 4, 3, 5}, dt);
        for (size_t p = 0; p < 2; ++p)
            for (size_t q = 0; q < 4; ++q)
                for (size_t e = 0; e < 15; ++e) wide[(p * 4 + q) * 15 + e] = a[p * 15 + e];
        expect_close(run_op(dev(), *op, {a, b})[0], einsum_ref("pqij,qjk->pqik", {wide, b}), tolerance(dt, 1e-5, 3e-3),
                     std::string("ellipsis ") + gpu::dtype_name(dt));
        // Implicit output: the ellipsis dimensions first.
        const HostTensor c = random_tensor({3, 5, 2}, dt, 5);
        auto t = ops::Einsum::create(dev(), {"...ij", {c.desc}});
        ASSERT_EQ(t->outputs()[0].shape, (Shape{3, 5, 2}));
        expect_close(run_op(dev(), *t, {c})[0], c, 1e-6, "implicit ellipsis");
    }
}

TEST_F(MathEinsum, BadEquationsAreErrors) {
    const TensorDesc m{{3, 4}, DType::f32}, v{{5}, DType::f32};
    for (const char* eq : {"ij,jk->ik", "ij->k", "ij->ii", "i1->i", "ij..->i", "ijk->i"})
        EXPECT_THROW(ops::Einsum::create(dev(), {eq, {m, v}}), Error) << eq;
    EXPECT_THROW(ops::Einsum::create(dev(), {"ij,jk->ik", {m, m}}), Error) << "j has sizes 4 and 3";
    EXPECT_THROW(ops::Einsum::create(dev(), {"i,i,i", {v, v, v}}), Error) << "three operands";
    EXPECT_THROW(ops::Einsum::create(dev(), {"ij", {{{3, 4}, DType::i32}}}), Error) << "integers";
}

double det_ref(std::vector<double> a, size_t n) {
    if (n == 1) return a[0];
    double d = 0;
    for (size_t c = 0; c < n; ++c) {
        std::vector<double> minor;
        for (size_t r = 1; r < n; ++r)
            for (size_t k = 0; k < n; ++k)
                if (k != c) minor.push_back(a[r * n + k]);
        d += (c % 2 ? -1.0 : 1.0) * a[c] * det_ref(minor, n - 1);
    }
    return d;
}

using MathDet = GpuTest;

TEST_F(MathDet, MatchesReference) {
    for (DType dt : float_dtypes_here(dev()))
        for (const Shape& s : {Shape{3, 3}, Shape{7, 5, 5}, Shape{2, 3, 1, 1}, Shape{5, 6, 6}}) {
            HostTensor x = random_tensor(s, dt, 9);
            const size_t n = size_t(s[s.rank() - 1]);
            auto op = ops::Det::create(dev(), {x.desc});
            std::vector<int64_t> od(s.dims().begin(), s.dims().end() - 2);
            HostTensor want(Shape(std::span<const int64_t>(od)), dt);
            for (size_t m = 0; m < want.size(); ++m)
                want[m] = det_ref(std::vector<double>(x.data.begin() + long(m * n * n), x.data.begin() + long((m + 1) * n * n)), n);
            expect_close(run_op(dev(), *op, {x})[0], want, tolerance(dt, 1e-5, 3e-3), "Det " + s.str() + " " + gpu::dtype_name(dt));
        }
    EXPECT_THROW(ops::Det::create(dev(), {{{3, 4}, DType::f32}}), Error);
    EXPECT_THROW(ops::Det::create(dev(), {{{4}, DType::f32}}), Error);
}

using MathDft = GpuTest;

// The direct sum in double, per ONNX: zero-padded or truncated to L, onesided keeps L / 2 + 1.
TEST_F(MathDft, MatchesReference) {
    const double pi = 3.14159265358979323846;
    struct Case {
        Shape shape;
        int64_t axis, length;
        bool inverse, onesided;
    };
    const std::vector<Case> cases = {{{3, 13, 1}, 1, 0, false, false}, {{2, 11, 2}, 1, 0, true, false},
                                     {{5, 3, 9, 2}, 2, 0, false, true}, {{2, 7, 3, 1}, 1, 10, false, false},
                                     {{2, 9, 2}, -2, 5, true, true}};
    for (DType dt : float_dtypes_here(dev()))
        for (const Case& c : cases) {
            const HostTensor x = random_tensor(c.shape, dt, 21);
            auto op = ops::Dft::create(dev(), {x.desc, c.axis, c.length, c.inverse, c.onesided});
            const size_t r = c.shape.rank(), ax = size_t(c.axis < 0 ? c.axis + int64_t(r) : c.axis);
            const int64_t n = c.shape[ax], L = c.length ? c.length : n, nout = c.onesided ? L / 2 + 1 : L;
            const int64_t ch = c.shape[r - 1];
            int64_t outer = 1, inner = 1;
            for (size_t a = 0; a < ax; ++a) outer *= c.shape[a];
            for (size_t a = ax + 1; a + 1 < r; ++a) inner *= c.shape[a];
            std::vector<int64_t> od(c.shape.dims().begin(), c.shape.dims().end());
            od[ax] = nout;
            od.back() = 2;
            HostTensor want(Shape(std::span<const int64_t>(od)), dt);
            for (int64_t o = 0; o < outer; ++o)
                for (int64_t k = 0; k < nout; ++k)
                    for (int64_t i = 0; i < inner; ++i) {
                        double re = 0, im = 0;
                        for (int64_t j = 0; j < std::min(n, L); ++j) {
                            const size_t at = size_t(((o * n + j) * inner + i) * ch);
                            const double xr = x[at], xi = ch == 2 ? x[at + 1] : 0.0;
                            const double a = (c.inverse ? 2 : -2) * pi * double(j * k % L) / double(L);
                            re += xr * std::cos(a) - xi * std::sin(a);
                            im += xr * std::sin(a) + xi * std::cos(a);
                        }
                        const size_t at = size_t(((o * nout + k) * inner + i) * 2);
                        want[at] = c.inverse ? re / double(L) : re;
                        want[at + 1] = c.inverse ? im / double(L) : im;
                    }
            expect_close(run_op(dev(), *op, {x})[0], want, tolerance(dt, 1e-5, 3e-3),
                         "DFT " + c.shape.str() + " " + gpu::dtype_name(dt));
        }
    EXPECT_THROW(ops::Dft::create(dev(), {{{3, 4, 3}, DType::f32}}), Error) << "last dimension 3";
    EXPECT_THROW(ops::Dft::create(dev(), {{{3, 4, 2}, DType::f32}, 2}), Error) << "axis is the last";
    EXPECT_THROW(ops::Dft::create(dev(), {{{3, 4, 2}, DType::f32}, 1, -3}), Error) << "negative length";
}

} // namespace
} // namespace vkml::test
