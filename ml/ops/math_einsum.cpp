// Einsum (shaders/math/einsum.comp): the equation parsed into labels, each with a size and, per
// operand, an element stride (the sum of the strides of every dimension carrying the label, which
// walks diagonals; 0 where an ellipsis dimension of size 1 broadcasts). Output labels index the
// output element, summed labels are looped over.
#include <algorithm>
#include <cctype>
#include <map>

#include "util.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/math.hpp"

namespace vkml::ops {

namespace {

constexpr size_t max_labels = 6; // output dimensions and summed labels, each

// One operand's subscripts: labels (letters) and where the ellipsis stands (-1: none).
struct Term {
    std::vector<char> labels;
    int ellipsis = -1; // index into labels before which the ellipsis dims go
};

Term parse_term(const std::string& t, const std::string& eq) {
    Term term;
    for (size_t i = 0; i < t.size(); ++i) {
        const char c = t[i];
        if (c == ' ') continue;
        if (c == '.') {
            if (t.compare(i, 3, "...") != 0 || term.ellipsis >= 0)
                fail("Einsum", "equation", "'" + eq + "' has a malformed ellipsis");
            term.ellipsis = static_cast<int>(term.labels.size());
            i += 2;
            continue;
        }
        if (!std::isalpha(static_cast<unsigned char>(c)))
            fail("Einsum", "equation", "'" + eq + "' has the character '" + std::string(1, c) + "', not a letter");
        term.labels.push_back(c);
    }
    return term;
}

} // namespace

std::unique_ptr<Einsum> Einsum::create(gpu::Device& device, const EinsumDesc& desc) {
    const std::string& eq = desc.equation;
    const size_t n_in = desc.inputs.size();
    if (n_in == 0) fail("Einsum", "inputs", "needs at least one operand");
    if (n_in > 2)
        unsupported("Einsum", "inputs: " + std::to_string(n_in) + " operands; vkml's Einsum takes one or two");
    const DType dtype = desc.inputs[0].dtype;
    for (size_t k = 0; k < n_in; ++k) {
        detail::require_float("Einsum", "inputs[" + std::to_string(k) + "]", desc.inputs[k]);
        if (desc.inputs[k].dtype != dtype) fail("Einsum", "inputs", "operands of different dtypes");
        if (desc.inputs[k].shape.elements() > int64_t(UINT32_MAX))
            fail("Einsum", "inputs", "an operand has more elements than 32-bit indices reach");
    }
    // Split "lhs->rhs" and the lhs at commas.
    const size_t arrow = eq.find("->");
    const std::string lhs = eq.substr(0, arrow);
    std::vector<Term> terms;
    for (size_t start = 0;;) {
        const size_t comma = lhs.find(',', start);
        terms.push_back(parse_term(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start), eq));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (terms.size() != n_in)
        fail("Einsum", "equation",
             "'" + eq + "' names " + std::to_string(terms.size()) + " operands, " + std::to_string(n_in) + " are given");

    // Label sizes and the ellipsis dims (broadcast, right-aligned, across the operands).
    std::map<char, int64_t> size;
    std::map<char, int> seen;
    std::vector<int64_t> ell; // the ellipsis' dims, outermost first
    std::vector<size_t> ell_rank(n_in, 0);
    for (size_t k = 0; k < n_in; ++k) {
        const Shape& s = desc.inputs[k].shape;
        const Term& t = terms[k];
        if (t.ellipsis < 0 ? s.rank() != t.labels.size() : s.rank() < t.labels.size())
            fail("Einsum", "equation",
                 "'" + eq + "': operand " + std::to_string(k) + " has shape " + s.str() + ", which its " +
                     std::to_string(t.labels.size()) + " subscripts do not match");
        ell_rank[k] = s.rank() - t.labels.size();
        for (size_t i = 0; i < t.labels.size(); ++i) {
            const size_t dim = t.ellipsis >= 0 && int(i) >= t.ellipsis ? i + ell_rank[k] : i;
            const int64_t d = s[dim];
            const char c = t.labels[i];
            auto [it, fresh] = size.emplace(c, d);
            if (!fresh && it->second != d)
                fail("Einsum", "equation",
                     "'" + eq + "': label '" + std::string(1, c) + "' has sizes " + std::to_string(it->second) +
                         " and " + std::to_string(d));
            ++seen[c];
        }
        const size_t e = ell_rank[k];
        if (e > ell.size()) ell.insert(ell.begin(), e - ell.size(), 1);
        for (size_t j = 0; j < e; ++j) {
            const int64_t d = s[size_t(t.ellipsis) + j];
            int64_t& have = ell[ell.size() - e + j];
            if (have == 1)
                have = d;
            else if (d != 1 && d != have)
                fail("Einsum", "equation", "'" + eq + "': the ellipsis dimensions do not broadcast");
        }
    }
    // Output labels: given, or the labels seen once in alphabetical order after the ellipsis.
    Term out;
    if (arrow != std::string::npos) {
        out = parse_term(eq.substr(arrow + 2), eq);
        for (size_t i = 0; i < out.labels.size(); ++i) {
            if (!size.count(out.labels[i]))
                fail("Einsum", "equation", "'" + eq + "': output label '" + std::string(1, out.labels[i]) +
                                               "' is in no operand");
            if (std::count(out.labels.begin(), out.labels.end(), out.labels[i]) > 1)
                fail("Einsum", "equation", "'" + eq + "': output label '" + std::string(1, out.labels[i]) + "' repeats");
        }
        if (out.ellipsis < 0 && !ell.empty() &&
            std::any_of(ell.begin(), ell.end(), [](int64_t d) { return d != 1; }))
            unsupported("Einsum", "equation '" + eq + "': the output drops the ellipsis dimensions");
    } else {
        out.ellipsis = 0;
        for (const auto& [c, count] : seen)
            if (count == 1) out.labels.push_back(c); // std::map: sorted (upper case before lower)
    }
    // The label list: ellipsis dims as labels 0..E-1, then letters.
    struct Label {
        int64_t size = 1;
        std::vector<int64_t> stride; // per operand
    };
    const size_t E = out.ellipsis >= 0 ? ell.size() : 0;
    std::map<char, Label> letters;
    std::vector<Label> ell_labels(ell.size());
    for (size_t j = 0; j < ell.size(); ++j) ell_labels[j] = {ell[j], std::vector<int64_t>(n_in, 0)};
    for (const auto& [c, d] : size) letters[c] = {d, std::vector<int64_t>(n_in, 0)};
    for (size_t k = 0; k < n_in; ++k) {
        const Shape& s = desc.inputs[k].shape;
        const auto strides = detail::contiguous_strides(s);
        const Term& t = terms[k];
        for (size_t i = 0; i < t.labels.size(); ++i) {
            const size_t dim = t.ellipsis >= 0 && int(i) >= t.ellipsis ? i + ell_rank[k] : i;
            letters[t.labels[i]].stride[k] += strides[dim];
        }
        for (size_t j = 0; j < ell_rank[k]; ++j) {
            const size_t dim = size_t(t.ellipsis) + j;
            if (s[dim] != 1) ell_labels[ell.size() - ell_rank[k] + j].stride[k] = strides[dim];
        }
    }
    std::vector<const Label*> outs, sums;
    std::vector<int64_t> out_dims;
    for (size_t i = 0; i <= out.labels.size(); ++i) {
        if (out.ellipsis == int(i))
            for (size_t j = 0; j < E; ++j) outs.push_back(&ell_labels[j]);
        if (i < out.labels.size()) outs.push_back(&letters[out.labels[i]]);
    }
    for (const Label* l : outs) out_dims.push_back(l->size);
    for (const auto& [c, l] : letters)
        if (std::find(out.labels.begin(), out.labels.end(), c) == out.labels.end()) sums.push_back(&l);
    if (outs.size() > max_labels)
        unsupported("Einsum", "equation '" + eq + "' has " + std::to_string(outs.size()) +
                                  " output dimensions; vkml supports up to 6");
    if (sums.size() > max_labels)
        unsupported("Einsum", "equation '" + eq + "' sums over " + std::to_string(sums.size()) +
                                  " labels; vkml supports up to 6");
    const Shape out_shape = detail::shape_of("Einsum", "output", out_dims);
    int64_t terms_per_output = 1;
    for (const Label* l : sums) terms_per_output = detail::mul_dims("Einsum", "summed labels", terms_per_output, l->size);
    if (terms_per_output > int64_t(INT32_MAX))
        fail("Einsum", "equation", "sums " + std::to_string(terms_per_output) + " products per output, more than 2^31");

    // Specialization: NIN, NOUT, NSUM, output dims[6], summed dims[6], then per operand (two):
    // strides of the output labels[6] and of the summed labels[6].
    std::vector<uint32_t> spec = {uint32_t(n_in), uint32_t(outs.size()), uint32_t(sums.size())};
    for (size_t i = 0; i < max_labels; ++i) spec.push_back(i < outs.size() ? uint32_t(outs[i]->size) : 1u);
    for (size_t i = 0; i < max_labels; ++i) spec.push_back(i < sums.size() ? uint32_t(sums[i]->size) : 1u);
    for (size_t k = 0; k < 2; ++k) {
        for (size_t i = 0; i < max_labels; ++i)
            spec.push_back(k < n_in && i < outs.size() ? uint32_t(outs[i]->stride[k]) : 0u);
        for (size_t i = 0; i < max_labels; ++i)
            spec.push_back(k < n_in && i < sums.size() ? uint32_t(sums[i]->stride[k]) : 0u);
    }
    auto op = std::unique_ptr<Einsum>(new Einsum(device));
    op->count_ = detail::to_u32("Einsum", "output elements", out_shape.elements());
    op->pipeline_ = &device.pipeline({.shader = detail::shader_for(device, "Einsum", "math_einsum", dtype),
                                      .bindings = 3,
                                      .push_constant_bytes = sizeof(uint32_t),
                                      .workgroup = {64, 1, 1},
                                      .specialization = spec});
    op->inputs_ = desc.inputs;
    op->outputs_ = {{out_shape, dtype}};
    return op;
}

void Einsum::record_impl(gpu::CommandBuffer& cmd, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                         const gpu::BufferRange&) const {
    if (count_ == 0) return;
    // A single operand is bound twice (the shader reads the second only when there are two).
    const gpu::BufferRange buffers[] = {inputs[0].range(), inputs[inputs.size() > 1 ? 1 : 0].range(),
                                        outputs[0].range()};
    detail::dispatch_1d(cmd, *pipeline_, buffers, count_, uint64_t(count_));
}

} // namespace vkml::ops
