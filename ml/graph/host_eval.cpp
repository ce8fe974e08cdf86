// The host evaluator behind constant folding: the ONNX ops that shape computations are made of
// (Shape, Gather, Concat, Unsqueeze, Slice, arithmetic, Cast, Range, ...), computed in double for
// floats and int64 for integers. Not fast, and not meant to be: the tensors are small (shape
// vectors, scalars, the odd weight Transpose), and exactness matters more (int64 sentinels such
// as INT64_MAX in Slice ends must survive a Concat unchanged).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "vkml/gpu/half.hpp"
#include "passes.hpp"
#include "vkml/ops/layout.hpp"

#include "lower.hpp"
#include "op_types.hpp"

namespace vkml::graph {

namespace {

// A double as an int64, saturating (NaN: 0): a C cast of an out-of-range double is undefined.
int64_t to_int(double v) {
    if (std::isnan(v)) return 0;
    if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
    if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
}

// Integer arithmetic wraps around in two's complement, as ONNX Runtime's and numpy's int64 do; a
// signed overflow in C++ is undefined, so it is computed unsigned.
int64_t wrap_add(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t wrap_div(int64_t a, int64_t b) {
    if (b == 0) return 0; // truncation, as the ONNX reference's astype
    if (b == -1) return wrap_sub(0, a);
    return a / b;
}

// A host tensor: floats as doubles, integers and bools as int64.
struct Array {
    DType dtype = DType::f32;
    std::vector<int64_t> dims;
    std::vector<double> f;
    std::vector<int64_t> i;

    bool floating() const { return is_float(dtype); }
    size_t size() const { return floating() ? f.size() : i.size(); }
    double get_f(size_t k) const { return floating() ? f[k] : static_cast<double>(i[k]); }
    int64_t get_i(size_t k) const { return floating() ? to_int(f[k]) : i[k]; }
};

std::string dims_text(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t k = 0; k < dims.size(); ++k) s += (k ? "," : "") + std::to_string(dims[k]);
    return s + "]";
}

// The element count of `dims`: a negative dimension or a product past 64 bits is an error.
int64_t product(const std::vector<int64_t>& dims) {
    for (int64_t d : dims)
        if (d < 0)
            throw Error(ErrorCode::InvalidArgument, "shape " + dims_text(dims) + " has a negative dimension");
    for (int64_t d : dims)
        if (d == 0) return 0;
    int64_t n = 1;
    for (int64_t d : dims)
        if (__builtin_mul_overflow(n, d, &n))
            throw Error(ErrorCode::InvalidArgument,
                        "shape " + dims_text(dims) + " has more elements than 64 bits count");
    return n;
}

// The cap of the host_evaluate call in progress on this thread (its max_elements).
thread_local int64_t max_elements_now = host_max_elements;

// product(), and no more than the cap: every tensor and index list the evaluator allocates is
// sized through here, so a model cannot make it allocate what its shapes ask for.
int64_t count(const std::vector<int64_t>& dims) {
    const int64_t n = product(dims);
    if (n > max_elements_now)
        throw Error(ErrorCode::Unsupported,
                    "shape " + dims_text(dims) + " has " + std::to_string(n) + " elements, more than the " +
                        std::to_string(max_elements_now) + " vkml computes on the host");
    return n;
}

// How many of from, from + step, from + 2 step, ... lie before `to` (step > 0: below it, step < 0:
// above it), computed without overflow for any int64 values (step != 0).
uint64_t steps_between(int64_t from, int64_t to, int64_t step) {
    if (step > 0 ? to <= from : to >= from) return 0;
    const uint64_t distance = step > 0 ? static_cast<uint64_t>(to) - static_cast<uint64_t>(from)
                                       : static_cast<uint64_t>(from) - static_cast<uint64_t>(to);
    const uint64_t magnitude = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
    return (distance - 1) / magnitude + 1;
}

int64_t checked_add(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
        throw Error(ErrorCode::InvalidArgument, "a dimension sum overflows 64 bits");
    return r;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
    std::vector<int64_t> s(dims.size(), 1);
    for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
    return s;
}

Array load(const TensorData& t) {
    Array a;
    a.dtype = t.dtype();
    a.dims = t.dims();
    if (a.floating()) {
        a.f = t.to_doubles();
    } else {
        a.i = t.to_int64s();
    }
    return a;
}

Array make(DType dtype, std::vector<int64_t> dims) {
    Array a;
    a.dtype = dtype;
    a.dims = std::move(dims);
    if (a.floating())
        a.f.assign(static_cast<size_t>(count(a.dims)), 0.0);
    else
        a.i.assign(static_cast<size_t>(count(a.dims)), 0);
    return a;
}

TensorData store(const Array& a) {
    const size_t n = a.size();
    switch (a.dtype) {
    case DType::f32: {
        std::vector<float> v(n);
        for (size_t k = 0; k < n; ++k) v[k] = static_cast<float>(a.f[k]);
        return TensorData::from_floats(a.dims, v);
    }
    case DType::f16: {
        std::vector<uint16_t> v(n);
        for (size_t k = 0; k < n; ++k) v[k] = gpu::float_to_half(static_cast<float>(a.f[k]));
        return TensorData::from_halves(a.dims, v);
    }
    case DType::i32: {
        std::vector<int32_t> v(n);
        for (size_t k = 0; k < n; ++k) v[k] = static_cast<int32_t>(a.i[k]); // wraps, as a cast does
        return TensorData::from_int32s(a.dims, v);
    }
    case DType::i64:
        return TensorData::from_int64s(a.dims, a.i);
    case DType::u8:
    case DType::boolean: {
        std::vector<std::byte> b(n);
        for (size_t k = 0; k < n; ++k)
            b[k] = static_cast<std::byte>(a.dtype == DType::boolean ? (a.i[k] != 0) : (a.i[k] & 0xff));
        return TensorData(a.dtype, a.dims, std::move(b));
    }
    case DType::undefined:
        break;
    default:
        return a.floating() ? TensorData::from_doubles(a.dtype, a.dims, a.f) : TensorData::from_ints(a.dtype, a.dims, a.i);
    }
    throw Error(ErrorCode::Unsupported, "host evaluation: undefined dtype");
}

// Converts to `to` (C semantics: float -> integer truncates, anything -> bool is != 0).
Array convert(const Array& a, DType to) {
    Array r = make(to, a.dims);
    for (size_t k = 0; k < a.size(); ++k) {
        if (to == DType::boolean)
            r.i[k] = a.get_f(k) != 0.0 ? 1 : 0;
        else if (r.floating())
            r.f[k] = a.get_f(k);
        else if (a.floating()) {
            const double v = a.f[k];
            r.i[k] = std::isnan(v) ? 0 : static_cast<int64_t>(std::trunc(std::clamp(v, -9.2e18, 9.2e18)));
        } else
            r.i[k] = a.i[k];
    }
    for (int64_t& v : r.i) v = wrap_int(to, v);
    return r;
}

size_t axis_of(int64_t axis, size_t rank, const Graph& g, const Node& n, bool inclusive = false) {
    const int64_t r = static_cast<int64_t>(rank) + (inclusive ? 1 : 0);
    if (axis < -r || axis >= r)
        g.fail(n, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

std::vector<int64_t> broadcast(const std::vector<std::vector<int64_t>>& shapes, const Graph& g,
                               const Node& n) {
    size_t rank = 0;
    for (const auto& s : shapes) rank = std::max(rank, s.size());
    std::vector<int64_t> out(rank, 1);
    for (const auto& s : shapes)
        for (size_t k = 0; k < s.size(); ++k) {
            int64_t& o = out[rank - s.size() + k];
            const int64_t d = s[k];
            if (o == 1)
                o = d;
            else if (d != 1 && d != o)
                g.fail(n, "input shapes do not broadcast");
        }
    return out;
}

// Flat index into `in` (of dims `in_dims`) for each flat index of `out_dims`, numpy broadcasting.
std::vector<size_t> broadcast_index(const std::vector<int64_t>& in_dims,
                                    const std::vector<int64_t>& out_dims) {
    const size_t rank = out_dims.size(), lead = rank - in_dims.size();
    const auto in_strides = strides_of(in_dims);
    std::vector<int64_t> bs(rank, 0);
    for (size_t k = lead; k < rank; ++k) bs[k] = in_dims[k - lead] == 1 ? 0 : in_strides[k - lead];
    const int64_t n = count(out_dims);
    std::vector<size_t> idx(static_cast<size_t>(n));
    std::vector<int64_t> pos(rank, 0);
    int64_t flat = 0;
    for (int64_t e = 0; e < n; ++e) {
        idx[static_cast<size_t>(e)] = static_cast<size_t>(flat);
        for (size_t k = rank; k-- > 0;) {
            ++pos[k];
            flat += bs[k];
            if (pos[k] < out_dims[k]) break;
            flat -= bs[k] * pos[k];
            pos[k] = 0;
        }
    }
    return idx;
}

double py_mod(double a, double b) {
    const double r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
int64_t py_mod(int64_t a, int64_t b) {
    if (b == 0 || b == -1) return 0; // INT64_MIN % -1 is undefined in C++
    const int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

Array unary(const std::string& op, const Array& x) {
    Array r = x;
    if (op == "Not") {
        for (int64_t& v : r.i) v = v ? 0 : 1;
        return r;
    }
    if (!x.floating()) {
        for (int64_t& v : r.i) {
            if (op == "Neg")
                v = wrap_sub(0, v);
            else if (op == "Abs")
                v = v < 0 ? wrap_sub(0, v) : v;
            else if (op == "Sign")
                v = (v > 0) - (v < 0);
            else if (op == "Relu")
                v = std::max<int64_t>(v, 0);
        }
        static const std::set<std::string, std::less<>> int_ok = {"Neg",      "Abs",   "Sign", "Relu",
                                                                  "Identity", "Floor", "Ceil", "Round"};
        if (!int_ok.count(op)) throw Error(ErrorCode::Unsupported, op + " of an integer tensor");
        return r;
    }
    for (double& v : r.f) {
        if (op == "Neg")
            v = -v;
        else if (op == "Abs")
            v = std::fabs(v);
        else if (op == "Floor")
            v = std::floor(v);
        else if (op == "Ceil")
            v = std::ceil(v);
        else if (op == "Round")
            v = std::nearbyint(v); // the default rounding mode: halves to even
        else if (op == "Sqrt")
            v = std::sqrt(v);
        else if (op == "Reciprocal")
            v = 1.0 / v;
        else if (op == "Exp")
            v = std::exp(v);
        else if (op == "Log")
            v = std::log(v);
        else if (op == "Sign")
            v = (v > 0) - (v < 0);
        else if (op == "Relu")
            v = std::max(v, 0.0);
        else if (op == "Sin")
            v = std::sin(v);
        else if (op == "Cos")
            v = std::cos(v);
        else if (op == "Tanh")
            v = std::tanh(v);
        else if (op == "Sigmoid")
            v = 1.0 / (1.0 + std::exp(-v));
        else if (op == "Erf")
            v = std::erf(v);
    }
    return r;
}

Array binary(const std::string& op, const Array& a, const Array& b, const Node& n, const Graph& g) {
    const auto dims = broadcast({a.dims, b.dims}, g, n);
    const bool compare = op == "Equal" || op == "Less" || op == "LessOrEqual" || op == "Greater" ||
                         op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor";
    Array r = make(compare ? DType::boolean : a.dtype, dims);
    const auto ia = broadcast_index(a.dims, dims), ib = broadcast_index(b.dims, dims);
    const bool fl = a.floating() || b.floating();
    const int64_t fmod = n.get_int("fmod", 0);
    for (size_t k = 0; k < ia.size(); ++k) {
        if (fl) {
            const double x = a.get_f(ia[k]), y = b.get_f(ib[k]);
            double v = 0;
            if (op == "Add")
                v = x + y;
            else if (op == "Sub")
                v = x - y;
            else if (op == "Mul")
                v = x * y;
            else if (op == "Div")
                v = x / y;
            else if (op == "Pow")
                v = std::pow(x, y);
            else if (op == "Mod")
                v = fmod ? std::fmod(x, y) : py_mod(x, y);
            else if (op == "Equal")
                v = x == y;
            else if (op == "Less")
                v = x < y;
            else if (op == "LessOrEqual")
                v = x <= y;
            else if (op == "Greater")
                v = x > y;
            else if (op == "GreaterOrEqual")
                v = x >= y;
            if (r.floating())
                r.f[k] = v;
            else
                r.i[k] = compare ? static_cast<int64_t>(v) : to_int(std::trunc(v));
        } else {
            const int64_t x = a.i[ia[k]], y = b.i[ib[k]];
            int64_t v = 0;
            if (op == "Add")
                v = wrap_add(x, y);
            else if (op == "Sub")
                v = wrap_sub(x, y);
            else if (op == "Mul")
                v = wrap_mul(x, y);
            else if (op == "Div")
                v = wrap_div(x, y);
            else if (op == "Pow")
                v = to_int(std::pow(static_cast<double>(x), static_cast<double>(y)));
            else if (op == "Mod")
                v = fmod ? (y == 0 || y == -1 ? 0 : x % y) : py_mod(x, y);
            else if (op == "Equal")
                v = x == y;
            else if (op == "Less")
                v = x < y;
            else if (op == "LessOrEqual")
                v = x <= y;
            else if (op == "Greater")
                v = x > y;
            else if (op == "GreaterOrEqual")
                v = x >= y;
            else if (op == "And")
                v = x && y;
            else if (op == "Or")
                v = x || y;
            else if (op == "Xor")
                v = (x != 0) != (y != 0);
            r.i[k] = v;
        }
    }
    return r;
}

// Axes from the attribute (older opsets) or the optional input `index` (newer ones).
std::vector<int64_t> axes_of(const Node& n, const std::vector<const Array*>& in, size_t index) {
    if (index < in.size() && in[index]) return in[index]->i;
    return n.get_ints("axes");
}

Array reduce(const std::string& op, const Array& x, std::vector<int64_t> axes, const Node& n,
             const Graph& g) {
    const int64_t keepdims = n.get_int("keepdims", 1);
    const size_t rank = x.dims.size();
    std::vector<bool> reduced(rank, false);
    if (axes.empty() && n.get_int("noop_with_empty_axes", 0)) return x;
    if (axes.empty()) std::fill(reduced.begin(), reduced.end(), true);
    for (int64_t a : axes) reduced[axis_of(a, rank, g, n)] = true;
    std::vector<int64_t> kept_dims, out_dims;
    for (size_t k = 0; k < rank; ++k) {
        kept_dims.push_back(reduced[k] ? 1 : x.dims[k]);
        if (!reduced[k]) out_dims.push_back(x.dims[k]);
    }
    std::vector<double> fa(static_cast<size_t>(count(kept_dims)), op == "ReduceProd"  ? 1.0
                                                                  : op == "ReduceMax" ? -INFINITY
                                                                  : op == "ReduceMin" ? INFINITY
                                                                                      : 0.0);
    const auto idx = broadcast_index(kept_dims, x.dims); // maps each input element to its output
    for (size_t k = 0; k < idx.size(); ++k) {
        const double v = x.get_f(k);
        double& o = fa[idx[k]];
        if (op == "ReduceSum" || op == "ReduceMean")
            o += v;
        else if (op == "ReduceProd")
            o *= v;
        else if (op == "ReduceMax")
            o = std::max(o, v);
        else if (op == "ReduceMin")
            o = std::min(o, v);
    }
    const double per = static_cast<double>(x.size()) / static_cast<double>(std::max<size_t>(fa.size(), 1));
    Array r = make(x.dtype, keepdims ? kept_dims : out_dims);
    for (size_t k = 0; k < fa.size(); ++k) {
        const double v = op == "ReduceMean" ? fa[k] / per : fa[k];
        if (r.floating())
            r.f[k] = v;
        else
            r.i[k] = to_int(v);
    }
    return r;
}

// Copies `x` through an index map (each output element's flat input index).
Array gather_flat(const Array& x, std::vector<int64_t> dims, const std::vector<size_t>& src) {
    Array r = make(x.dtype, std::move(dims));
    for (size_t k = 0; k < src.size(); ++k) {
        if (r.floating())
            r.f[k] = x.f[src[k]];
        else
            r.i[k] = x.i[src[k]];
    }
    return r;
}

gpu::Shape gpu_shape(const std::vector<int64_t>& dims) {
    if (dims.size() > gpu::max_rank)
        throw Error(ErrorCode::Unsupported,
                    "rank " + std::to_string(dims.size()) + " exceeds vkml's maximum of 6");
    return gpu::Shape(std::span<const int64_t>(dims));
}
std::vector<int64_t> dims_of(const gpu::Shape& s) {
    return {s.dims().begin(), s.dims().end()};
}

} // namespace

namespace {

// TfIdfVectorizer over int32/int64 X [C] or [N, C]: per row, the n-grams of the pool counted as
// ONNX's reference counts them (a trie walk from every start, once per skip distance 1 ...
// max_skip_count + 1, 1-grams only at distance 1), then TF (counts), IDF (weight where the count
// is non-zero) or TFIDF (count x weight), weights indexed by the output position.
Array tfidf(const Graph& g, const Node& n, const Array& x) {
    if (x.floating()) g.fail(n, "takes int32 or int64 X (strings are not supported)", ErrorCode::Unsupported);
    if (x.dims.size() != 1 && x.dims.size() != 2) g.fail(n, "takes X of rank 1 or 2, not " + dims_text(x.dims));
    if (n.has("pool_strings")) g.fail(n, "pool_strings: strings are not supported", ErrorCode::Unsupported);
    const int64_t min_n = n.get_int("min_gram_length", 0), max_n = n.get_int("max_gram_length", 0);
    const int64_t max_skip = n.get_int("max_skip_count", 0);
    const std::string mode = n.get_string("mode", "");
    if (min_n < 1 || max_n < min_n) g.fail(n, "needs 1 <= min_gram_length <= max_gram_length");
    if (max_skip < 0) g.fail(n, "max_skip_count must not be negative");
    if (mode != "TF" && mode != "IDF" && mode != "TFIDF") g.fail(n, "mode must be TF, IDF or TFIDF, is '" + mode + "'");
    const std::vector<int64_t> pool = n.get_ints("pool_int64s"), starts = n.get_ints("ngram_counts"),
                               out_index = n.get_ints("ngram_indexes");
    const std::vector<float> weights = n.get_floats("weights");
    // The pool's n-grams in order (1-grams from starts[0], 2-grams from starts[1], ...).
    std::map<std::vector<int64_t>, size_t> id; // n-gram -> its ordinal in the pool
    std::set<std::vector<int64_t>> prefixes;   // every prefix of a pool n-gram (the trie's nodes)
    for (size_t k = 0; k < starts.size(); ++k) {
        const int64_t len = static_cast<int64_t>(k) + 1;
        const int64_t begin = starts[k], end = k + 1 < starts.size() ? starts[k + 1] : static_cast<int64_t>(pool.size());
        if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % len != 0)
            g.fail(n, "ngram_counts must be non-decreasing starts in pool_int64s of whole " + std::to_string(len) + "-grams");
        for (int64_t p = begin; p < end; p += len) {
            std::vector<int64_t> gram(pool.begin() + p, pool.begin() + p + len);
            for (size_t l = 1; l <= gram.size(); ++l) prefixes.emplace(gram.begin(), gram.begin() + static_cast<std::ptrdiff_t>(l));
            id.emplace(std::move(gram), id.size());
        }
    }
    if (out_index.size() != id.size())
        g.fail(n, "ngram_indexes has " + std::to_string(out_index.size()) + " entries for " + std::to_string(id.size()) +
                      " n-grams in the pool");
    int64_t width = 0;
    for (int64_t o : out_index) {
        if (o < 0) g.fail(n, "ngram_indexes must not be negative");
        width = std::max(width, checked_add(o, 1));
    }
    if (!weights.empty() && static_cast<int64_t>(weights.size()) < width)
        g.fail(n, "weights has fewer entries than the output has positions");
    const int64_t rows = x.dims.size() == 2 ? x.dims[0] : 1, cols = x.dims.back();
    Array r = make(DType::f32, x.dims.size() == 2 ? std::vector<int64_t>{rows, width} : std::vector<int64_t>{width});
    const int64_t distances = std::min(max_skip, std::max<int64_t>(cols, 1)) + 1; // longer skips reach past the row
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t* v = x.i.data() + row * cols;
        double* out = r.f.data() + row * width;
        int64_t first = min_n; // the shortest n-gram counted at this distance
        for (int64_t d = 1; d <= distances && first <= max_n; ++d) {
            for (int64_t s = 0; s < cols && s + d * (first - 1) < cols; ++s) {
                std::vector<int64_t> gram;
                for (int64_t item = s; item < cols && static_cast<int64_t>(gram.size()) < max_n; item += d) {
                    gram.push_back(v[item]);
                    if (!prefixes.count(gram)) break;
                    const auto hit = id.find(gram);
                    if (static_cast<int64_t>(gram.size()) >= first && hit != id.end()) out[out_index[hit->second]] += 1;
                }
            }
            if (first == 1) ++first; // 1-grams do not depend on the distance: counted once
        }
        for (int64_t o = 0; o < width; ++o) {
            const double w = weights.empty() ? 1.0 : weights[static_cast<size_t>(o)];
            if (mode == "IDF")
                out[o] = out[o] > 0 ? w : 0.0;
            else if (mode == "TFIDF")
                out[o] *= w;
        }
    }
    return r;
}

} // namespace

bool host_evaluable(const Node& node) {
    const detail::OpType* t = detail::find_op_type(node.domain, node.op_type);
    return t && t->host != detail::HostEval::no;
}

std::vector<TensorData> host_evaluate(const Graph& g, const Node& n,
                                      const std::vector<const TensorData*>& inputs,
                                      const std::vector<std::vector<int64_t>>& shapes, int64_t max_elements) {
    const std::string& op = n.op_type;
    struct Cap { // max_elements for this call, the previous cap back afterwards
        int64_t saved = max_elements_now;
        explicit Cap(int64_t m) { max_elements_now = m; }
        ~Cap() { max_elements_now = saved; }
    } cap(max_elements);
    if ((op == "Shape" || op == "Size") && (inputs.empty() || shapes.empty()))
        g.fail(n, op + " needs an input, the node has none");
    if (op == "Shape") {
        const auto& s = shapes.at(0);
        const int64_t r = static_cast<int64_t>(s.size());
        int64_t start = n.get_int("start", 0), end = n.get_int("end", r);
        if (start < 0) start += r;
        if (end < 0) end += r;
        start = std::clamp<int64_t>(start, 0, r);
        end = std::clamp<int64_t>(end, start, r);
        const std::vector<int64_t> v(s.begin() + start, s.begin() + end);
        return {TensorData::from_int64s({static_cast<int64_t>(v.size())}, v)};
    }
    if (op == "EyeLike") {
        if (inputs.empty() || shapes.empty() || shapes[0].size() != 2) g.fail(n, "needs a 2-D input");
        const int64_t rows = shapes[0][0], cols = shapes[0][1], k = n.get_int("k", 0);
        DType dt = inputs[0] ? inputs[0]->dtype() : DType::f32;
        if (n.has("dtype")) dt = detail::onnx_type(n.get_int("dtype", 1), g, n);
        else if (!inputs[0] && g.value(n.inputs[0]).dtype != DType::undefined) dt = g.value(n.inputs[0]).dtype;
        Array e = make(dt, {rows, cols});
        for (int64_t i = 0; i < rows; ++i)
            if (i + k >= 0 && i + k < cols) {
                const size_t at = static_cast<size_t>(i * cols + i + k);
                if (e.floating())
                    e.f[at] = 1;
                else
                    e.i[at] = 1;
            }
        return {store(e)};
    }
    if (op == "Size") {
        int64_t v = 0;
        try {
            v = product(shapes.at(0));
        } catch (const Error& e) {
            g.fail(n, e.what());
        }
        return {TensorData::from_int64s({}, std::span<const int64_t>(&v, 1))};
    }
    std::vector<Array> arrays(inputs.size());
    std::vector<const Array*> in(inputs.size(), nullptr);
    for (size_t k = 0; k < inputs.size(); ++k)
        if (inputs[k]) {
            arrays[k] = load(*inputs[k]);
            in[k] = &arrays[k];
        }
    auto input = [&](size_t k) -> const Array& {
        if (k >= in.size() || !in[k]) g.fail(n, "input " + std::to_string(k) + " is missing");
        return *in[k];
    };
    auto ints = [&](size_t k) {
        const Array& a = input(k);
        if (a.floating()) g.fail(n, "input " + std::to_string(k) + " must be an integer tensor");
        return a.i;
    };
    using detail::HostEval;
    const detail::OpType* type = detail::find_op_type(n.domain, op);
    const HostEval how = type ? type->host : HostEval::no;
    Array r;
    std::vector<Array> more; // outputs 1, 2, ... of ops with several
    try {
        if (how == HostEval::no) {
            g.fail(n, "cannot be evaluated on the host", ErrorCode::Unsupported);
        } else if (how == HostEval::copy) {
            r = input(0);
        } else if (how == HostEval::unary) {
            r = unary(op, input(0));
        } else if (how == HostEval::binary) {
            const Array& a = input(0);
            r = binary(op, a, input(1), n, g);
            if (op == "Pow" && !a.floating()) r.dtype = a.dtype;
        } else if (how == HostEval::variadic) {
            r = input(0);
            std::vector<int64_t> dims = r.dims;
            for (size_t k = 1; k < in.size(); ++k) {
                const Array& b = input(k);
                const auto out = broadcast({r.dims, b.dims}, g, n);
                const auto ia = broadcast_index(r.dims, out), ib = broadcast_index(b.dims, out);
                Array next = make(r.dtype, out);
                for (size_t e = 0; e < ia.size(); ++e) {
                    const double x = r.get_f(ia[e]), y = b.get_f(ib[e]);
                    const double v = op == "Max" ? std::max(x, y) : op == "Min" ? std::min(x, y) : x + y;
                    if (next.floating())
                        next.f[e] = v;
                    else
                        next.i[e] = op == "Max"   ? std::max(r.get_i(ia[e]), b.get_i(ib[e]))
                                    : op == "Min" ? std::min(r.get_i(ia[e]), b.get_i(ib[e]))
                                                  : wrap_add(r.get_i(ia[e]), b.get_i(ib[e]));
                }
                r = std::move(next);
            }
            if (op == "Mean") {
                const double k = static_cast<double>(in.size());
                for (double& v : r.f) v /= k;
                for (int64_t& v : r.i) v = to_int(static_cast<double>(v) / k);
            }
        } else if (op == "Cast") {
            r = convert(input(0), detail::onnx_type(n.get_int("to", 1), g, n));
        } else if (op == "CastLike") {
            r = convert(input(0), input(1).dtype);
        } else if (op == "Reshape") {
            r = input(0);
            r.dims = dims_of(ops::reshape_shape(gpu_shape(r.dims), ints(1), n.get_int("allowzero", 0) != 0));
        } else if (op == "Flatten") {
            r = input(0);
            r.dims = dims_of(ops::flatten_shape(gpu_shape(r.dims), n.get_int("axis", 1)));
        } else if (op == "Squeeze") {
            r = input(0);
            r.dims = dims_of(ops::squeeze_shape(gpu_shape(r.dims), axes_of(n, in, 1)));
        } else if (op == "Unsqueeze") {
            r = input(0);
            r.dims = dims_of(ops::unsqueeze_shape(gpu_shape(r.dims), axes_of(n, in, 1)));
        } else if (op == "Concat") {
            const Array& first = input(0);
            const size_t axis = axis_of(n.get_int("axis", 0), first.dims.size(), g, n);
            std::vector<int64_t> dims = first.dims;
            dims[axis] = 0;
            for (size_t k = 0; k < in.size(); ++k) {
                const Array& a = input(k);
                if (a.dims.size() != dims.size()) g.fail(n, "inputs of different ranks");
                for (size_t d = 0; d < dims.size(); ++d)
                    if (d != axis && a.dims[d] != dims[d])
                        g.fail(n, "input " + std::to_string(k) + " is " + dims_text(a.dims) +
                                      ", which does not fit " + dims_text(first.dims) + " beside axis " +
                                      std::to_string(axis));
                dims[axis] = checked_add(dims[axis], a.dims[axis]);
            }
            r = make(first.dtype, dims);
            const int64_t outer = product({dims.begin(), dims.begin() + static_cast<long>(axis)});
            size_t pos = 0;
            for (int64_t o = 0; o < outer; ++o)
                for (size_t k = 0; k < in.size(); ++k) {
                    const Array& a = input(k);
                    const int64_t chunk = outer ? static_cast<int64_t>(a.size()) / outer : 0;
                    for (int64_t e = 0; e < chunk; ++e, ++pos) {
                        const size_t s = static_cast<size_t>(o * chunk + e);
                        if (r.floating())
                            r.f[pos] = a.get_f(s);
                        else
                            r.i[pos] = a.get_i(s);
                    }
                }
        } else if (op == "Gather") {
            const Array& x = input(0);
            const auto idx = ints(1);
            const auto& idx_dims = input(1).dims;
            const size_t axis = axis_of(n.get_int("axis", 0), x.dims.size(), g, n);
            std::vector<int64_t> dims(x.dims.begin(), x.dims.begin() + static_cast<long>(axis));
            dims.insert(dims.end(), idx_dims.begin(), idx_dims.end());
            dims.insert(dims.end(), x.dims.begin() + static_cast<long>(axis) + 1, x.dims.end());
            (void)count(dims); // before the index list below grows to that size
            const int64_t outer = product({x.dims.begin(), x.dims.begin() + static_cast<long>(axis)});
            const int64_t inner = product({x.dims.begin() + static_cast<long>(axis) + 1, x.dims.end()});
            const int64_t len = x.dims[axis];
            std::vector<size_t> src;
            for (int64_t o = 0; o < outer; ++o)
                for (int64_t j : idx) {
                    if (j < -len || j >= len) g.fail(n, "index " + std::to_string(j) + " is out of range");
                    if (j < 0) j += len;
                    for (int64_t e = 0; e < inner; ++e)
                        src.push_back(static_cast<size_t>((o * len + j) * inner + e));
                }
            r = gather_flat(x, dims, src);
        } else if (op == "Slice") {
            const Array& x = input(0);
            const size_t rank = x.dims.size();
            std::vector<int64_t> starts, ends, axes, steps;
            if (in.size() > 1) {
                starts = ints(1);
                ends = ints(2);
                if (in.size() > 3 && in[3]) axes = ints(3);
                if (in.size() > 4 && in[4]) steps = ints(4);
            } else {
                starts = n.get_ints("starts");
                ends = n.get_ints("ends");
                axes = n.get_ints("axes");
            }
            if (axes.empty())
                for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
            if (steps.empty()) steps.assign(starts.size(), 1);
            if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
                g.fail(n, "starts, ends, axes and steps differ in length");
            std::vector<int64_t> begin(rank, 0), step(rank, 1), dims = x.dims;
            for (size_t k = 0; k < starts.size(); ++k) {
                const size_t a = axis_of(axes[k], rank, g, n);
                const int64_t len = x.dims[a], s = steps[k];
                if (s == 0) g.fail(n, "a step is 0");
                int64_t b = starts[k], e = ends[k];
                if (b < 0) b += len;
                if (e < 0) e += len;
                if (s > 0) {
                    b = std::clamp<int64_t>(b, 0, len);
                    e = std::clamp<int64_t>(e, 0, len);
                    dims[a] = static_cast<int64_t>(steps_between(b, e, s));
                } else {
                    b = std::clamp<int64_t>(b, 0, len - 1);
                    e = std::clamp<int64_t>(e, -1, len - 1);
                    dims[a] = static_cast<int64_t>(steps_between(b, e, s));
                }
                begin[a] = b;
                step[a] = s;
            }
            const auto xs = strides_of(x.dims);
            std::vector<size_t> src(static_cast<size_t>(count(dims)));
            std::vector<int64_t> pos(rank, 0);
            for (size_t e = 0; e < src.size(); ++e) {
                int64_t flat = 0;
                for (size_t k = 0; k < rank; ++k) flat += (begin[k] + pos[k] * step[k]) * xs[k];
                src[e] = static_cast<size_t>(flat);
                for (size_t k = rank; k-- > 0;)
                    if (++pos[k] < dims[k])
                        break;
                    else
                        pos[k] = 0;
            }
            r = gather_flat(x, dims, src);
        } else if (op == "Transpose") {
            const Array& x = input(0);
            const size_t rank = x.dims.size();
            std::vector<int64_t> perm = n.get_ints("perm");
            if (perm.empty())
                for (size_t k = 0; k < rank; ++k) perm.push_back(static_cast<int64_t>(rank - 1 - k));
            if (perm.size() != rank) g.fail(n, "perm does not match the input's rank");
            std::vector<int64_t> dims(rank);
            std::vector<char> seen(rank, 0);
            for (size_t k = 0; k < rank; ++k) {
                const size_t axis = axis_of(perm[k], rank, g, n);
                if (seen[axis]) g.fail(n, "perm names axis " + std::to_string(axis) + " twice");
                seen[axis] = 1;
                perm[k] = static_cast<int64_t>(axis);
                dims[k] = x.dims[axis];
            }
            const auto xs = strides_of(x.dims);
            std::vector<size_t> src(static_cast<size_t>(count(dims)));
            std::vector<int64_t> pos(rank, 0);
            for (size_t e = 0; e < src.size(); ++e) {
                int64_t flat = 0;
                for (size_t k = 0; k < rank; ++k) flat += pos[k] * xs[static_cast<size_t>(perm[k])];
                src[e] = static_cast<size_t>(flat);
                for (size_t k = rank; k-- > 0;)
                    if (++pos[k] < dims[k])
                        break;
                    else
                        pos[k] = 0;
            }
            r = gather_flat(x, dims, src);
        } else if (op == "Expand") {
            const Array& x = input(0);
            const auto dims = broadcast({x.dims, ints(1)}, g, n);
            r = gather_flat(x, dims, broadcast_index(x.dims, dims));
        } else if (op == "Tile") {
            const Array& x = input(0);
            const auto reps = ints(1);
            if (reps.size() != x.dims.size()) g.fail(n, "repeats do not match the input's rank");
            std::vector<int64_t> dims = x.dims;
            for (size_t k = 0; k < dims.size(); ++k) {
                if (reps[k] < 0) g.fail(n, "repeats " + dims_text(reps) + " has a negative value");
                if (__builtin_mul_overflow(dims[k], reps[k], &dims[k]))
                    g.fail(n,
                           "repeats " + dims_text(reps) + " of " + dims_text(x.dims) + " overflow 64 bits");
            }
            const auto xs = strides_of(x.dims);
            std::vector<size_t> src(static_cast<size_t>(count(dims)));
            std::vector<int64_t> pos(dims.size(), 0);
            for (size_t e = 0; e < src.size(); ++e) {
                int64_t flat = 0;
                for (size_t k = 0; k < dims.size(); ++k) flat += (pos[k] % x.dims[k]) * xs[k];
                src[e] = static_cast<size_t>(flat);
                for (size_t k = dims.size(); k-- > 0;)
                    if (++pos[k] < dims[k])
                        break;
                    else
                        pos[k] = 0;
            }
            r = gather_flat(x, dims, src);
        } else if (op == "Where") {
            const Array &c = input(0), &x = input(1), &y = input(2);
            const auto dims = broadcast({c.dims, x.dims, y.dims}, g, n);
            const auto ic = broadcast_index(c.dims, dims), ix = broadcast_index(x.dims, dims),
                       iy = broadcast_index(y.dims, dims);
            r = make(x.dtype, dims);
            for (size_t e = 0; e < ic.size(); ++e) {
                const bool take_x = c.get_f(ic[e]) != 0;
                if (r.floating())
                    r.f[e] = take_x ? x.get_f(ix[e]) : y.get_f(iy[e]);
                else
                    r.i[e] = take_x ? x.get_i(ix[e]) : y.get_i(iy[e]);
            }
        } else if (op == "Range") {
            const Array &s = input(0), &l = input(1), &d = input(2);
            if (s.size() != 1 || l.size() != 1 || d.size() != 1)
                g.fail(n, "start, limit and delta must be scalars");
            if (s.floating()) {
                const double start = s.get_f(0), limit = l.get_f(0), delta = d.get_f(0);
                if (delta == 0) g.fail(n, "delta is 0");
                const double k = std::max(std::ceil((limit - start) / delta), 0.0);
                if (!(k <= static_cast<double>(max_elements_now)))
                    g.fail(n,
                           "from " + std::to_string(start) + " to " + std::to_string(limit) + " by " +
                               std::to_string(delta) + " is more than " + std::to_string(max_elements_now) +
                               " elements",
                           ErrorCode::Unsupported);
                r = make(s.dtype, {static_cast<int64_t>(k)});
                for (size_t e = 0; e < r.f.size(); ++e) r.f[e] = start + static_cast<double>(e) * delta;
            } else {
                const int64_t start = s.get_i(0), limit = l.get_i(0), delta = d.get_i(0);
                if (delta == 0) g.fail(n, "delta is 0");
                const uint64_t k = steps_between(start, limit, delta);
                if (k > static_cast<uint64_t>(max_elements_now))
                    g.fail(n,
                           "from " + std::to_string(start) + " to " + std::to_string(limit) + " by " +
                               std::to_string(delta) + " is more than " + std::to_string(max_elements_now) +
                               " elements",
                           ErrorCode::Unsupported);
                r = make(s.dtype, {static_cast<int64_t>(k)});
                for (size_t e = 0; e < r.i.size(); ++e)
                    r.i[e] = wrap_add(start, wrap_mul(static_cast<int64_t>(e), delta));
            }
        } else if (op == "NonZero") {
            // [rank, count]: the coordinates of the nonzero elements in row-major order.
            const Array& x = input(0);
            std::vector<size_t> hits;
            for (size_t e = 0; e < x.size(); ++e)
                if (x.floating() ? x.f[e] != 0 : x.i[e] != 0) hits.push_back(e);
            const auto strides = strides_of(x.dims);
            r = make(DType::i64, {static_cast<int64_t>(x.dims.size()), static_cast<int64_t>(hits.size())});
            for (size_t h = 0; h < hits.size(); ++h)
                for (size_t a = 0; a < x.dims.size(); ++a)
                    r.i[a * hits.size() + h] = (static_cast<int64_t>(hits[h]) / strides[a]) % x.dims[a];
        } else if (op == "Compress" || op == "Unique") {
            // Both view the input as [outer, len, inner] slices along `axis` (flattened: [1, N, 1]).
            const Array& x = input(0);
            const bool has_axis = n.has("axis");
            size_t ax = 0;
            std::vector<int64_t> dims = x.dims;
            if (has_axis) {
                ax = axis_of(n.get_int("axis", 0), x.dims.size(), g, n);
            } else {
                dims = {static_cast<int64_t>(x.size())};
            }
            int64_t outer = 1, inner = 1;
            for (size_t a = 0; a < ax; ++a) outer *= dims[a];
            for (size_t a = ax + 1; a < dims.size(); ++a) inner *= dims[a];
            const int64_t len = dims.empty() ? 1 : dims[ax];
            auto at = [&](int64_t o, int64_t k, int64_t i) { return static_cast<size_t>((o * len + k) * inner + i); };
            auto gather = [&](const std::vector<int64_t>& picks) {
                std::vector<int64_t> od = dims;
                od[ax] = static_cast<int64_t>(picks.size());
                Array y = make(x.dtype, od);
                size_t e = 0;
                for (int64_t o = 0; o < outer; ++o)
                    for (int64_t k : picks)
                        for (int64_t i = 0; i < inner; ++i, ++e) {
                            if (y.floating())
                                y.f[e] = x.f[at(o, k, i)];
                            else
                                y.i[e] = x.i[at(o, k, i)];
                        }
                return y;
            };
            if (op == "Compress") {
                const Array& c = input(1);
                if (c.dims.size() != 1) g.fail(n, "condition must be 1-D");
                if (c.size() > static_cast<size_t>(len))
                    g.fail(n, "condition has " + std::to_string(c.size()) + " elements, the axis " + std::to_string(len));
                std::vector<int64_t> picks;
                for (size_t k = 0; k < c.size(); ++k)
                    if (c.get_f(k) != 0) picks.push_back(static_cast<int64_t>(k));
                r = gather(picks);
            } else {
                // Slices compared element by element (lexicographically), as numpy's unique does.
                auto less = [&](int64_t p, int64_t q) {
                    for (int64_t o = 0; o < outer; ++o)
                        for (int64_t i = 0; i < inner; ++i) {
                            const double a = x.get_f(at(o, p, i)), b = x.get_f(at(o, q, i));
                            if (x.floating() ? a != b : x.i[at(o, p, i)] != x.i[at(o, q, i)])
                                return x.floating() ? a < b : x.i[at(o, p, i)] < x.i[at(o, q, i)];
                        }
                    return false;
                };
                std::vector<int64_t> order(static_cast<size_t>(len));
                std::iota(order.begin(), order.end(), 0);
                std::stable_sort(order.begin(), order.end(), less); // equal slices keep their order
                // firsts: the first occurrence of each distinct slice, in sorted order.
                std::vector<int64_t> firsts, group(static_cast<size_t>(len)), counts;
                for (size_t p = 0; p < order.size(); ++p) {
                    if (p == 0 || less(order[p - 1], order[p])) {
                        firsts.push_back(order[p]);
                        counts.push_back(0);
                    }
                    group[static_cast<size_t>(order[p])] = static_cast<int64_t>(firsts.size() - 1);
                    ++counts.back();
                }
                // sorted = 0: the distinct slices in the order they first appear.
                std::vector<size_t> rank(firsts.size());
                std::iota(rank.begin(), rank.end(), 0);
                if (n.get_int("sorted", 1) == 0)
                    std::sort(rank.begin(), rank.end(), [&](size_t a, size_t b) { return firsts[a] < firsts[b]; });
                std::vector<size_t> position(firsts.size());
                for (size_t p = 0; p < rank.size(); ++p) position[rank[p]] = p;
                std::vector<int64_t> picks;
                Array idx = make(DType::i64, {static_cast<int64_t>(firsts.size())}),
                      inv = make(DType::i64, {len}), cnt = make(DType::i64, {static_cast<int64_t>(firsts.size())});
                for (size_t p = 0; p < rank.size(); ++p) {
                    picks.push_back(firsts[rank[p]]);
                    idx.i[p] = firsts[rank[p]];
                    cnt.i[p] = counts[rank[p]];
                }
                for (size_t k = 0; k < static_cast<size_t>(len); ++k)
                    inv.i[k] = static_cast<int64_t>(position[static_cast<size_t>(group[k])]);
                r = gather(picks);
                more = {idx, inv, cnt};
            }
        } else if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow") {
            // ONNX's windows over N = size (periodic) or size - 1 (symmetric) steps.
            const auto size = ints(0);
            if (size.size() != 1 || size[0] < 0) g.fail(n, "size must be one non-negative value");
            const DType dt = detail::onnx_type(n.get_int("output_datatype", 1), g, n);
            r = make(dt, {size[0]});
            const double steps = static_cast<double>(n.get_int("periodic", 1) ? size[0] : size[0] - 1);
            const double pi = 3.14159265358979323846;
            for (int64_t e = 0; e < size[0]; ++e) {
                const double a = 2 * pi * static_cast<double>(e) / steps;
                const double v = op == "HannWindow"      ? 0.5 - 0.5 * std::cos(a)
                                 : op == "HammingWindow" ? 25.0 / 46.0 - 21.0 / 46.0 * std::cos(a)
                                                         : 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
                if (r.floating())
                    r.f[static_cast<size_t>(e)] = v;
                else
                    r.i[static_cast<size_t>(e)] = to_int(v);
            }
        } else if (op == "TfIdfVectorizer") {
            r = tfidf(g, n, input(0));
        } else if (op == "MelWeightMatrix") {
            // [dft_length / 2 + 1, num_mel_bins] triangles of peak 1 on the mel scale,
            // mel(f) = 2595 log10(1 + f / 700): num_mel_bins + 2 points spaced evenly in mel from
            // lower_edge_hertz (the step is the range over num_mel_bins + 2), each mapped to the
            // spectrogram bin floor((dft_length + 1) f / sample_rate); mel bin i rises from point i
            // to point i + 1 and falls to point i + 2.
            auto one = [&](size_t k, const char* what) {
                const Array& a = input(k);
                if (a.size() != 1) g.fail(n, std::string(what) + " must hold one value");
                return a.get_f(0);
            };
            auto one_int = [&](size_t k, const char* what) {
                const auto v = ints(k);
                if (v.size() != 1) g.fail(n, std::string(what) + " must hold one value");
                return v[0];
            };
            const int64_t mels = one_int(0, "num_mel_bins"), dft = one_int(1, "dft_length"),
                          rate = one_int(2, "sample_rate");
            const double lo = one(3, "lower_edge_hertz"), hi = one(4, "upper_edge_hertz");
            if (mels < 1 || dft < 1 || rate < 1)
                g.fail(n, "num_mel_bins, dft_length and sample_rate must be positive");
            if (!(lo >= 0 && lo <= hi && std::isfinite(hi)))
                g.fail(n, "needs 0 <= lower_edge_hertz <= upper_edge_hertz");
            const int64_t bins = dft / 2 + 1;
            const DType dt = detail::onnx_type(n.get_int("output_datatype", 1), g, n);
            r = make(dt, {bins, mels});
            auto mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
            const double step = (mel(hi) - mel(lo)) / static_cast<double>(mels + 2);
            std::vector<int64_t> point(static_cast<size_t>(mels + 2));
            for (size_t k = 0; k < point.size(); ++k) {
                const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(k) * step + mel(lo)) / 2595.0) - 1.0);
                point[k] = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
            }
            std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
            auto set = [&](int64_t bin, int64_t m, double v) {
                if (bin < 0 || bin >= bins)
                    g.fail(n, "upper_edge_hertz maps past the last spectrogram bin (dft_length / 2)");
                w[static_cast<size_t>(bin * mels + m)] = v;
            };
            for (int64_t m = 0; m < mels; ++m) {
                const int64_t left = point[static_cast<size_t>(m)], centre = point[static_cast<size_t>(m + 1)],
                              right = point[static_cast<size_t>(m + 2)];
                if (centre == left)
                    set(centre, m, 1.0);
                else
                    for (int64_t j = left; j <= centre; ++j)
                        set(j, m, static_cast<double>(j - left) / static_cast<double>(centre - left));
                for (int64_t j = centre; j < right; ++j)
                    set(j, m, static_cast<double>(right - j) / static_cast<double>(right - centre));
            }
            for (size_t k = 0; k < w.size(); ++k) {
                if (r.floating())
                    r.f[k] = w[k];
                else
                    r.i[k] = to_int(w[k]);
            }
        } else if (op == "ConstantOfShape") {
            const auto dims = ints(0);
            Array v;
            if (n.has("value"))
                v = load(n.get_tensor("value"));
            else
                v = make(DType::f32, {1});
            if (v.size() != 1) g.fail(n, "value must hold one element");
            r = make(v.dtype, dims);
            if (r.floating())
                std::fill(r.f.begin(), r.f.end(), v.f[0]);
            else
                std::fill(r.i.begin(), r.i.end(), v.i[0]);
        } else if (op == "ScatterND") {
            // data with the slices named by indices [..., k] replaced by updates, or combined with
            // them in order (reduction add, mul, max, min).
            const std::string red = n.get_string("reduction", "none");
            if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
                g.fail(n, "reduction '" + red + "' is not none, add, mul, max or min");
            r = input(0);
            const auto idx = ints(1);
            const auto& idims = input(1).dims;
            const Array& upd = input(2);
            if (idims.empty()) g.fail(n, "indices must have rank >= 1");
            const size_t k = static_cast<size_t>(idims.back());
            if (k > r.dims.size()) g.fail(n, "index tuples are longer than the data's rank");
            const auto strides = strides_of(r.dims);
            int64_t slice = 1;
            for (size_t a = k; a < r.dims.size(); ++a) slice *= r.dims[a];
            const size_t tuples = k ? idx.size() / k : 0;
            if (upd.size() != tuples * static_cast<size_t>(slice))
                g.fail(n, "updates do not match the indices");
            for (size_t t = 0; t < tuples; ++t) {
                int64_t base = 0;
                for (size_t a = 0; a < k; ++a) {
                    int64_t i = idx[t * k + a];
                    if (i < 0) i += r.dims[a];
                    if (i < 0 || i >= r.dims[a])
                        g.fail(n, "index " + std::to_string(idx[t * k + a]) + " is out of range");
                    base += i * strides[a];
                }
                for (int64_t e = 0; e < slice; ++e) {
                    const size_t dst = static_cast<size_t>(base + e),
                                 src = t * static_cast<size_t>(slice) + static_cast<size_t>(e);
                    if (r.floating()) {
                        const double a = r.f[dst], b = upd.get_f(src);
                        r.f[dst] = red == "add"   ? a + b
                                   : red == "mul" ? a * b
                                   : red == "max" ? std::max(a, b)
                                   : red == "min" ? std::min(a, b)
                                                  : b;
                    } else {
                        const int64_t a = r.i[dst], b = upd.get_i(src);
                        r.i[dst] = red == "add"   ? wrap_add(a, b)
                                   : red == "mul" ? wrap_mul(a, b)
                                   : red == "max" ? std::max(a, b)
                                   : red == "min" ? std::min(a, b)
                                                  : b;
                    }
                }
            }
        } else if (how == HostEval::reduce) {
            r = reduce(op, input(0), axes_of(n, in, 1), n, g);
        } else {
            g.fail(n, "cannot be evaluated on the host", ErrorCode::Unsupported);
        }
    } catch (const Error& e) {
        const std::string what = e.what();
        if (what.find(n.describe()) != std::string::npos) throw;
        g.fail(n, "host evaluation: " + what, e.code());
    }
    std::vector<TensorData> out;
    out.push_back(store(r));
    for (const Array& m : more) out.push_back(store(m));
    if (op == "Dropout" && n.outputs.size() > 1 && n.outputs[1] != no_value) {
        Array mask = make(DType::boolean, r.dims);
        std::fill(mask.i.begin(), mask.i.end(), 1);
        out.push_back(store(mask));
    }
    return out;
}

} // namespace vkml::graph
