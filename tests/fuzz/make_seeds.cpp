// Writes the fuzzers' seed corpora: make_fuzz_seeds OUT FIXTURES writes OUT/<harness>/<seed>, from
// small models built here (ONNX through Debian's libonnx-dev protobuf classes, Anime4K JSON as
// text), the TF.js fixtures in FIXTURES (tests/fixtures) packed into the TF.js harness's
// multi-file format, .npy files from format_npy, images from stb_image_write and command lines.
// The seeds are committed in tests/fuzz/corpus; the test fuzz.seeds_current regenerates them and
// fails when they differ. After changing this file:
//   build/tests/fuzz/make_fuzz_seeds tests/fuzz/corpus tests/fixtures
#include <onnx/onnx_pb.h>
#include <stb_image_write.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "npy.hpp"
#include "vkml/graph/tensor_data.hpp"

namespace fs = std::filesystem;

namespace {

fs::path out_root;

void write(const std::string& harness, const std::string& name, const std::string& bytes) {
    const fs::path dir = out_root / harness;
    fs::create_directories(dir);
    std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + (dir / name).string());
}

std::string read(const fs::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path.string());
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// --- ONNX ------------------------------------------------------------------------------------

using onnx::TensorProto_DataType_FLOAT;
using onnx::TensorProto_DataType_INT64;

struct Model {
    onnx::ModelProto m;
    onnx::GraphProto* g;
    explicit Model(const std::string& name, int64_t opset = 13) {
        m.set_ir_version(8);
        m.set_producer_name("vkml make_fuzz_seeds");
        auto* o = m.add_opset_import();
        o->set_version(opset);
        g = m.mutable_graph();
        g->set_name(name);
    }
    void io(bool input, const std::string& name, const std::vector<std::string>& dims,
            int type = TensorProto_DataType_FLOAT) {
        auto* v = input ? g->add_input() : g->add_output();
        v->set_name(name);
        auto* t = v->mutable_type()->mutable_tensor_type();
        t->set_elem_type(type);
        for (const std::string& d : dims) {
            auto* dim = t->mutable_shape()->add_dim();
            if (!d.empty() && (std::isdigit(static_cast<unsigned char>(d[0])) != 0))
                dim->set_dim_value(std::stoll(d));
            else
                dim->set_dim_param(d);
        }
    }
    onnx::NodeProto* node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
        auto* n = g->add_node();
        n->set_op_type(op);
        n->set_name(out.at(0));
        for (auto& s : in) n->add_input(s);
        for (auto& s : out) n->add_output(s);
        return n;
    }
    onnx::TensorProto* floats(const std::string& name, std::vector<int64_t> dims,
                              const std::vector<float>& v) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(TensorProto_DataType_FLOAT);
        for (int64_t d : dims) t->add_dims(d);
        t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
        return t;
    }
    onnx::TensorProto* ints(const std::string& name, std::vector<int64_t> dims,
                            const std::vector<int64_t>& v) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(TensorProto_DataType_INT64);
        for (int64_t d : dims) t->add_dims(d);
        for (int64_t x : v) t->add_int64_data(x);
        return t;
    }
    std::string bytes() const {
        std::string s;
        if (!m.SerializeToString(&s)) throw std::runtime_error("cannot serialize " + g->name());
        return s;
    }
};

void attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(v);
}
void attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t x : v) a->add_ints(x);
}
void attr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_STRING);
    a->set_s(v);
}
void attr(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
    a->set_f(v);
}

std::vector<float> ramp(size_t n, float step = 0.01f) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * step - 0.5f;
    return v;
}

void attr(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& g) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_GRAPH);
    *a->mutable_g() = g;
}
void typed(onnx::ValueInfoProto* v, const std::string& name, int type, std::vector<int64_t> dims, bool sequence = false) {
    v->set_name(name);
    auto* t = sequence ? v->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()
                       : v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

// Control flow and sequences (ml/graph/control.cpp): an If on a folded condition whose
// branches read an outer value, a Loop with a trip count, a condition the body computes from the
// iteration number and a scan output, a Scan, sequence ops around them, and If nested in a Loop.
void onnx_control_flow() {
    // Every value a constant, so the host resolves all of it (expand_on_host): x an initializer,
    // the If's condition computed (Not), so the importer leaves the If to the expansion.
    Model m("control_flow", 16);
    m.floats("x", {2, 3}, ramp(6, 0.25f));
    auto* no = m.g->add_initializer();
    no->set_name("no");
    no->set_data_type(onnx::TensorProto_DataType_BOOL);
    no->add_int32_data(0);
    m.node("Not", {"no"}, {"flag"});
    onnx::GraphProto then_b, else_b;
    then_b.set_name("then");
    auto* tn = then_b.add_node();
    tn->set_op_type("Relu");
    tn->add_input("x");
    tn->add_output("t");
    typed(then_b.add_output(), "t", TensorProto_DataType_FLOAT, {2, 3});
    else_b.set_name("else");
    auto* en = else_b.add_node();
    en->set_op_type("Neg");
    en->add_input("x");
    en->add_output("e");
    typed(else_b.add_output(), "e", TensorProto_DataType_FLOAT, {2, 3});
    auto* branch = m.node("If", {"flag"}, {"chosen"});
    attr(branch, "then_branch", then_b);
    attr(branch, "else_branch", else_b);

    // Loop: y += chosen * i for i < 3 (M = 10), scan output y.
    onnx::GraphProto body;
    body.set_name("body");
    typed(body.add_input(), "i", TensorProto_DataType_INT64, {});
    typed(body.add_input(), "c", onnx::TensorProto_DataType_BOOL, {});
    typed(body.add_input(), "y_in", TensorProto_DataType_FLOAT, {2, 3});
    auto add = [&](onnx::GraphProto& gp, const std::string& op, std::vector<std::string> in, std::string out) {
        auto* n = gp.add_node();
        n->set_op_type(op);
        n->set_name(gp.name() + "_" + out);
        for (auto& s : in) n->add_input(s);
        n->add_output(out);
        return n;
    };
    attr(add(body, "Cast", {"i"}, "fi"), "to", int64_t{1});
    add(body, "Mul", {"chosen", "fi"}, "step");
    add(body, "Add", {"y_in", "step"}, "y_out");
    auto* three = body.add_initializer();
    three->set_name("three");
    three->set_data_type(TensorProto_DataType_INT64);
    three->add_int64_data(2);
    add(body, "Less", {"i", "three"}, "c_out");
    add(body, "Identity", {"y_out"}, "scan");
    typed(body.add_output(), "c_out", onnx::TensorProto_DataType_BOOL, {});
    typed(body.add_output(), "y_out", TensorProto_DataType_FLOAT, {2, 3});
    typed(body.add_output(), "scan", TensorProto_DataType_FLOAT, {2, 3});
    m.ints("ten", {}, {10});
    auto* yes = m.g->add_initializer();
    yes->set_name("yes");
    yes->set_data_type(onnx::TensorProto_DataType_BOOL);
    yes->add_int32_data(1);
    auto* loop = m.node("Loop", {"ten", "yes", "x"}, {"y", "ys"});
    attr(loop, "body", body);

    // Scan: running sum over the rows of x.
    onnx::GraphProto sb;
    sb.set_name("scan_body");
    typed(sb.add_input(), "acc", TensorProto_DataType_FLOAT, {3});
    typed(sb.add_input(), "row", TensorProto_DataType_FLOAT, {3});
    add(sb, "Add", {"acc", "row"}, "acc_out");
    add(sb, "Identity", {"acc_out"}, "row_out");
    typed(sb.add_output(), "acc_out", TensorProto_DataType_FLOAT, {3});
    typed(sb.add_output(), "row_out", TensorProto_DataType_FLOAT, {3});
    m.floats("zeros", {3}, {0, 0, 0});
    auto* scan = m.node("Scan", {"zeros", "x"}, {"total", "rows"});
    attr(scan, "num_scan_inputs", int64_t{1});
    attr(scan, "body", sb);

    // Sequences: split, insert, at, concat.
    attr(m.node("SplitToSequence", {"ys"}, {"parts"}), "keepdims", int64_t{0});
    m.ints("zero", {}, {0});
    m.node("SequenceInsert", {"parts", "y", "zero"}, {"parts2"});
    m.node("SequenceAt", {"parts2", "zero"}, {"first"});
    attr(m.node("ConcatFromSequence", {"parts2"}, {"all"}), "axis", int64_t{0});
    m.io(false, "first", {});
    m.io(false, "all", {});
    m.io(false, "total", {"3"});
    m.io(false, "rows", {"2", "3"});
    write("onnx", "control_flow.onnx", m.bytes());
}

// Ifs nested 20 deep: beyond the importer's limit of 16, an error, not deep recursion.
void onnx_deep_nesting() {
    Model m("deep", 13);
    m.io(true, "flag", {}, onnx::TensorProto_DataType_BOOL);
    onnx::GraphProto inner;
    inner.set_name("leaf");
    auto* id = inner.add_node();
    id->set_op_type("Identity");
    id->add_input("flag");
    id->add_output("leaf_out");
    typed(inner.add_output(), "leaf_out", onnx::TensorProto_DataType_BOOL, {});
    const onnx::GraphProto leaf = inner; // else branches stay this small: the file grows linearly
    for (int level = 0; level < 20; ++level) {
        onnx::GraphProto outer;
        outer.set_name("level" + std::to_string(level));
        auto* n = outer.add_node();
        n->set_op_type("If");
        n->add_input("flag");
        n->add_output("out" + std::to_string(level));
        attr(n, "then_branch", inner);
        attr(n, "else_branch", leaf);
        typed(outer.add_output(), "out" + std::to_string(level), onnx::TensorProto_DataType_BOOL, {});
        inner = outer;
    }
    auto* top = m.node("If", {"flag"}, {"z"});
    attr(top, "then_branch", inner);
    attr(top, "else_branch", leaf);
    m.io(false, "z", {}, onnx::TensorProto_DataType_BOOL);
    write("onnx", "deep_nesting.onnx", m.bytes());
}

// Shape arithmetic as exporters write it: Shape, Gather, Unsqueeze, Concat into a Reshape.
void onnx_shape_chain() {
    Model m("shape_chain");
    m.io(true, "x", {"N", "3", "H", "W"});
    m.node("Shape", {"x"}, {"shape"});
    m.ints("zero", {}, {0});
    m.node("Gather", {"shape", "zero"}, {"batch"});
    m.ints("axes0", {1}, {0});
    m.node("Unsqueeze", {"batch", "axes0"}, {"batch1"});
    m.ints("minus1", {1}, {-1});
    auto* cat = m.node("Concat", {"batch1", "minus1"}, {"target"});
    attr(cat, "axis", int64_t{0});
    m.node("Reshape", {"x", "target"}, {"y"});
    m.io(false, "y", {"N", "M"});
    write("onnx", "shape_chain.onnx", m.bytes());
}

// Constant subgraphs the host folds: ConstantOfShape, Range, Tile, Expand, Slice, Transpose, Cast,
// Where, ReduceSum, Concat, arithmetic.
void onnx_folding() {
    Model m("folding");
    m.ints("dims", {2}, {2, 3});
    auto* cos = m.node("ConstantOfShape", {"dims"}, {"ones"});
    auto* a = cos->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    a->mutable_t()->set_data_type(TensorProto_DataType_FLOAT);
    a->mutable_t()->add_dims(1);
    a->mutable_t()->add_float_data(1.5f);
    m.ints("start", {}, {0});
    m.ints("limit", {}, {6});
    m.ints("delta", {}, {1});
    m.node("Range", {"start", "limit", "delta"}, {"range"});
    m.node("Reshape", {"range", "dims"}, {"range23"});
    auto* cast = m.node("Cast", {"range23"}, {"rangef"});
    attr(cast, "to", int64_t{1});
    m.node("Mul", {"ones", "rangef"}, {"prod"});
    m.ints("reps", {2}, {2, 1});
    m.node("Tile", {"prod", "reps"}, {"tiled"});
    m.ints("big", {3}, {4, 2, 3});
    m.node("Expand", {"prod", "big"}, {"expanded"});
    auto* tr = m.node("Transpose", {"expanded"}, {"transposed"});
    attr(tr, "perm", std::vector<int64_t>{2, 0, 1});
    m.ints("s_starts", {1}, {1});
    m.ints("s_ends", {1}, {3});
    m.ints("s_axes", {1}, {2});
    m.node("Slice", {"transposed", "s_starts", "s_ends", "s_axes"}, {"sliced"});
    m.node("Greater", {"prod", "rangef"}, {"mask"});
    m.node("Where", {"mask", "prod", "rangef"}, {"picked"});
    m.ints("r_axes", {1}, {1});
    auto* rs = m.node("ReduceSum", {"picked", "r_axes"}, {"summed"});
    attr(rs, "keepdims", int64_t{0});
    m.node("Sub", {"summed", "summed"}, {"zeros"});
    m.io(true, "x", {"2"});
    m.node("Add", {"x", "zeros"}, {"y"});
    m.io(false, "y", {"2"});
    m.io(false, "sliced", {"3", "4", "1"});
    m.io(false, "tiled", {"4", "3"});
    write("onnx", "folding.onnx", m.bytes());
}

// Pad, Resize by scales and Tile on a computed tensor (shapes from constants).
void onnx_resize_pad() {
    Model m("resize_pad", 13);
    m.io(true, "x", {"1", "3", "H", "W"});
    m.ints("pads", {8}, {0, 0, 1, 2, 0, 0, 1, 2});
    auto* pad = m.node("Pad", {"x", "pads"}, {"padded"});
    attr(pad, "mode", std::string("reflect"));
    m.floats("scales", {4}, {1, 1, 2, 2});
    auto* rz = m.node("Resize", {"padded", "", "scales"}, {"resized"});
    attr(rz, "mode", std::string("linear"));
    m.ints("reps", {4}, {1, 1, 1, 2});
    m.node("Tile", {"resized", "reps"}, {"y"});
    m.io(false, "y", {"1", "3", "?", "?"});
    write("onnx", "resize_pad.onnx", m.bytes());
}

// Conv + BatchNormalization + Add + Clip: the fusions.
void onnx_fusions() {
    Model m("fusions");
    m.io(true, "x", {"1", "4", "8", "8"});
    m.floats("w", {4, 4, 3, 3}, ramp(144));
    m.floats("b", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
    auto* conv = m.node("Conv", {"x", "w", "b"}, {"conv"});
    attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
    attr(conv, "kernel_shape", std::vector<int64_t>{3, 3});
    m.floats("scale", {4}, {1, 2, 3, 4});
    m.floats("beta", {4}, {0, 0.5f, 0, -0.5f});
    m.floats("mean", {4}, {0.1f, 0, -0.1f, 0});
    m.floats("var", {4}, {1, 1, 2, 2});
    auto* bn = m.node("BatchNormalization", {"conv", "scale", "beta", "mean", "var"}, {"bn"});
    attr(bn, "epsilon", 1e-5f);
    m.node("Add", {"bn", "x"}, {"sum"});
    m.floats("lo", {}, {0});
    m.floats("hi", {}, {6});
    m.node("Clip", {"sum", "lo", "hi"}, {"y"});
    m.io(false, "y", {"1", "4", "8", "8"});
    write("onnx", "fusions.onnx", m.bytes());
}

// An initializer in external.bin (the harness provides 256 bytes 0, 1, ..., 255).
void onnx_external() {
    Model m("external");
    auto* t = m.g->add_initializer();
    t->set_name("w");
    t->set_data_type(TensorProto_DataType_FLOAT);
    t->add_dims(2);
    t->add_dims(4);
    t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    for (auto [k, v] : {std::pair{"location", "external.bin"}, {"offset", "64"}, {"length", "32"}}) {
        auto* e = t->add_external_data();
        e->set_key(k);
        e->set_value(v);
    }
    m.io(true, "x", {"2", "4"});
    m.node("Add", {"x", "w"}, {"y"});
    m.io(false, "y", {"2", "4"});
    write("onnx", "external.onnx", m.bytes());
}

// --- TF.js: model.json and its shards in the harness's multi-file format -----------------------

void tfjs_from_fixture(const fs::path& fixtures, const std::string& dir,
                       const std::vector<std::string>& shards) {
    std::string input = read(fixtures / dir / "model.json");
    for (const std::string& s : shards) input += "\n#vkml-file " + s + "\n" + read(fixtures / dir / s);
    write("tfjs", dir + ".seed", input);
}

// --- Anime4K: websr's JSON, tiny (the real files are 13-114 KB) ---------------------------------

std::string numbers(size_t n, float step) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%.3f", i ? ", " : "",
                      std::sin(static_cast<float>(i) * step) * 0.5f);
        s += buf;
    }
    return s + "]";
}

std::string conv_layer(const std::string& name, const std::string& inputs, size_t weights,
                       const std::string& output = "") {
    return "\"" + name + "\": {\"type\": \"conv\", \"inputs\": " + inputs +
           ", \"weights\": " + numbers(weights, 0.37f) + ", \"bias\": " + numbers(4, 0.9f) +
           (output.empty() ? "" : ", \"output\": \"" + output + "\"") + "}";
}

void anime4k_seeds() {
    // 2x: conv on the image, a 3x3 conv on its CReLU, a 1x1 conv, pixel shuffle of the luma.
    write(
        "anime4k", "upscale.json",
        "{\"name\": \"tiny-2x\", \"layers\": {\n  " + conv_layer("conv2d_tf", "[\"input_image\"]", 144) +
            ",\n  " + conv_layer("conv2d_1_tf", "[\"conv2d_tf\"]", 2 * 16 * 9) + ",\n  " +
            conv_layer("conv2d_last_tf", "[\"conv2d_1_tf\"]", 2 * 16) +
            ",\n  \"depth_to_space\": {\"type\": \"pixel_shuffle\", \"inputs\": [\"conv2d_last_tf\"]}\n}}\n");
    // Restore: two first layers (width 2, the L networks' layout) and a residual "MAIN" output.
    write("anime4k", "restore.json",
          "{\"name\": \"tiny-restore\", \"layers\": {\n  " + conv_layer("a", "[\"input_image\"]", 144) +
              ",\n  " + conv_layer("b", "[\"input_image\"]", 144) + ",\n  " +
              conv_layer("c", "[\"a\", \"b\"]", 4 * 16 * 9, "MAIN") + "\n}}\n");
}

// --- .npy ------------------------------------------------------------------------------------

void npy_seeds() {
    using vkml::graph::TensorData;
    const std::vector<float> f{1.5f, -2.f, 0.f, 3.25f, 1e-3f, 65504.f};
    write("npy", "f4_2x3.npy", vkml::tool::format_npy(TensorData::from_floats({2, 3}, f)));
    const std::vector<uint16_t> h{0x3c00, 0xc000, 0x7c00};
    write("npy", "f2_3.npy", vkml::tool::format_npy(TensorData::from_halves({3}, h)));
    const std::vector<int64_t> i{-1, 0, int64_t{1} << 40};
    write("npy", "i8_3x1.npy", vkml::tool::format_npy(TensorData::from_int64s({3, 1}, i)));
    write("npy", "b1_4.npy",
          vkml::tool::format_npy(TensorData(vkml::graph::DType::boolean, {2, 2},
                                            {std::byte{1}, std::byte{0}, std::byte{0}, std::byte{1}})));
    // Format 2.0 with a 4-byte header length, f8 and u2 data (converted on reading).
    auto v2 = [](const std::string& descr, const std::string& shape, const std::string& data) {
        std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
        header.append((64 - (12 + header.size() + 1) % 64) % 64, ' ');
        header += '\n';
        std::string out = "\x93NUMPY";
        out += '\x02';
        out += '\x00';
        for (int k = 0; k < 4; ++k) out += static_cast<char>((header.size() >> (8 * k)) & 0xff);
        return out + header + data;
    };
    const double d[2] = {0.25, -1e10};
    write("npy", "v2_f8.npy", v2("<f8", "(2,)", std::string(reinterpret_cast<const char*>(d), sizeof d)));
    const uint16_t u[3] = {1, 65535, 7};
    write("npy", "v2_u2.npy", v2("<u2", "(1, 3)", std::string(reinterpret_cast<const char*>(u), sizeof u)));
}

// --- images ------------------------------------------------------------------------------------

void image_seeds() {
    const int w = 5, h = 3;
    std::vector<uint8_t> rgb(w * h * 3), rgba(w * h * 4), grey(w * h);
    for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 17);
    for (size_t i = 0; i < rgba.size(); ++i) rgba[i] = static_cast<uint8_t>(i * 29);
    for (size_t i = 0; i < grey.size(); ++i) grey[i] = static_cast<uint8_t>(i * 13);
    auto sink = [](void* ctx, void* data, int size) {
        static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), static_cast<size_t>(size));
    };
    std::string png3, png4, png1, jpg, bmp, tga;
    stbi_write_png_to_func(sink, &png3, w, h, 3, rgb.data(), w * 3);
    stbi_write_png_to_func(sink, &png4, w, h, 4, rgba.data(), w * 4);
    stbi_write_png_to_func(sink, &png1, w, h, 1, grey.data(), w);
    stbi_write_jpg_to_func(sink, &jpg, w, h, 3, rgb.data(), 90);
    stbi_write_bmp_to_func(sink, &bmp, w, h, 3, rgb.data());
    stbi_write_tga_to_func(sink, &tga, w, h, 4, rgba.data());
    write("image", "rgb.png", png3);
    write("image", "rgba.png", png4);
    write("image", "grey.png", png1);
    write("image", "rgb.jpg", jpg);
    write("image", "rgb.bmp", bmp);
    write("image", "rgba.tga", tga);
    write("image", "grey.pgm", "P5\n4 2\n255\n" + std::string("\x00\x40\x80\xff\x10\x20\x30\x40", 8));
}

// --- command lines (one argument per line) ------------------------------------------------------

void cli_seeds() {
    write("cli", "run.txt",
          "model.onnx\n--input\nx=in.npy\n--output-dir\nout\n--fp32\n--precision\nSoftmax=f32\n--free-dim\n"
          "height=64\n--mean\n0.485,0.456,0.406\n--std\n0.229,0.224,0.225\n--scale\n255\n--layout\nNHWC\n"
          "--resize\n224x224\n--no-fuse\n--profile\n--describe");
    write("cli", "detect.txt",
          "dog.jpg\nfolder\n-o\nout\n--model\nnanodet\n--format\nyolov8\n--score\n0.35\n--iou\n0.5\n"
          "--max-dets\n100\n--size\n640x640\n--json\n-\n--frames\n2\n--repeat\n3\n--fp32\n-q");
    write("cli", "help.txt", "--help");
    write("upscale", "video.txt",
          "in.mkv\n-o\nout.mkv\n-m\nanime4k-m\n--scale\n2\n--codec\nlibx265\n--crf\n20\n--preset\nslow\n"
          "--pix-fmt\nyuv420p10le\n-e\ntune=grain\n-j\n0:2:0\n--frames\n5\n--tolerate-errors\n-q\n--no-"
          "partial");
    write(
        "upscale", "image.txt",
        "photo.png\n--output\nbig.png\n--model\nesrgan-slim\n-s\n4\n--input-range\n255\n--fp32\n--tile\n128\n"
        "--threads\n1:1:1\n--benchmark");
    write("upscale", "help.txt", "--help");
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: make_fuzz_seeds OUT_DIR FIXTURES_DIR\n";
        return 2;
    }
    out_root = argv[1];
    const fs::path fixtures = argv[2];
    try {
        onnx_shape_chain();
        onnx_folding();
        onnx_resize_pad();
        onnx_fusions();
        onnx_external();
        onnx_control_flow();
        onnx_deep_nesting();
        for (const char* f : {"conv_relu.onnx", "typed_fields.onnx", "unsorted.onnx"})
            write("onnx", f, read(fixtures / f));
        tfjs_from_fixture(fixtures, "tfjs_small", {"group1-shard1of2.bin", "group1-shard2of2.bin"});
        tfjs_from_fixture(fixtures, "tfjs_sequential", {"weights.bin"});
        tfjs_from_fixture(fixtures, "tfjs_graph", {"weights.bin"});
        anime4k_seeds();
        npy_seeds();
        image_seeds();
        cli_seeds();
    } catch (const std::exception& e) {
        std::cerr << "make_fuzz_seeds: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
