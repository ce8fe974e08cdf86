// The ONNX importer: fixtures made by tests/fixtures/make_fixtures.cpp, Debian's ONNX backend
// node tests, and truncated or corrupted copies that must fail with an error naming the file.
#include "vkml/import/onnx.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "import/test_paths.hpp"
#include "graph/passes.hpp"

using namespace vkml;
using namespace vkml::graph;
using vkml::test::fixture;

namespace {

// Runs `f`, which must throw vkml::Error; returns the message after checking it names `file`.
template <class F>
std::string expect_error(F f, const std::string& file, ErrorCode code) {
    try {
        f();
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(file), std::string::npos) << "message does not name the file: " << m;
        EXPECT_EQ(e.code(), code) << m;
        return m;
    }
    ADD_FAILURE() << "no error for " << file;
    return {};
}

std::string load_error(const std::string& name, ErrorCode code = ErrorCode::InvalidArgument) {
    return expect_error([&] { (void)import::load_onnx(fixture(name)); }, name, code);
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

} // namespace

TEST(OnnxImport, ConvReluFixture) {
    const Graph g = import::load_onnx(fixture("conv_relu.onnx"));
    EXPECT_EQ(g.format, "onnx");
    EXPECT_EQ(g.name, "conv_relu");
    EXPECT_EQ(g.opset_version(), 13);
    EXPECT_EQ(g.metadata.at("producer"), "vkml make_fixtures");
    ASSERT_EQ(g.inputs().size(), 1u);
    const Value& x = g.value(g.inputs()[0]);
    EXPECT_EQ(x.dtype, DType::f32);
    EXPECT_EQ(to_string(*x.shape), "[N,3,H,W]");
    EXPECT_EQ(g.free_dimensions(), (std::vector<std::string>{"H", "N", "W"}));
    // Constant nodes became constants; four nodes remain.
    EXPECT_EQ(op_histogram(g),
              (std::map<std::string, int>{{"Conv", 1}, {"LeakyRelu", 1}, {"Mul", 1}, {"ReduceMean", 1}}));
    EXPECT_TRUE(g.value(g.id("two")).is_constant());
    EXPECT_EQ(g.value(g.id("two")).data->floats()[0], 2.f);
    EXPECT_EQ(g.value(g.id("axes")).data->to_int64s(), (std::vector<int64_t>{2, 3}));
    const Node& conv = g.nodes()[0];
    EXPECT_EQ(conv.name, "conv1");
    EXPECT_EQ(conv.get_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
    EXPECT_EQ(conv.get_string("auto_pad", ""), "NOTSET");
    EXPECT_FLOAT_EQ(g.nodes()[1].get_float("alpha", 0), 0.125f);
    EXPECT_EQ(g.nodes()[2].name, "Mul_3"); // unnamed in the file: named by op and position
    const TensorData& w = *g.value(g.id("w")).data;
    EXPECT_EQ(w.dims(), (std::vector<int64_t>{4, 3, 3, 3}));
    EXPECT_FLOAT_EQ(w.floats()[10], 0.1f);
    EXPECT_EQ(g.value(g.id("b")).data->floats()[3], -1.f);
    // value_info reached the intermediate value.
    EXPECT_EQ(to_string(*g.value(g.id("conv_out")).shape), "[N,4,H,W]");
    EXPECT_EQ(g.outputs().size(), 2u);

    Graph h = g;
    apply_free_dimension_overrides(h, {{"N", 1}, {"H", 8}, {"W", 10}});
    EXPECT_EQ(to_string(*h.value(h.id("y")).shape), "[1,4,8,10]");
}

TEST(OnnxImport, TypedFieldsAndRawData) {
    const Graph g = import::load_onnx(fixture("typed_fields.onnx"));
    auto data = [&](const char* n) -> const TensorData& { return *g.value(g.id(n)).data; };
    EXPECT_EQ(data("f32_typed").to_floats(), (std::vector<float>{1.5f, -2.f, 0.f, 3.25f}));
    EXPECT_EQ(data("f16_typed").dtype(), DType::f16);
    EXPECT_EQ(data("f16_typed").to_floats(), (std::vector<float>{1.f, -2.f, 0.5f}));
    EXPECT_EQ(data("i32_typed").to_int64s(), (std::vector<int64_t>{-7, 2147483647}));
    EXPECT_EQ(data("i64_typed").to_int64s(), (std::vector<int64_t>{-1, int64_t{1} << 40}));
    EXPECT_EQ(data("u8_typed").to_int64s(), (std::vector<int64_t>{0, 128, 255}));
    EXPECT_EQ(data("bool_typed").dtype(), DType::boolean);
    EXPECT_EQ(data("bool_typed").to_int64s(), (std::vector<int64_t>{1, 0, 1}));
    EXPECT_EQ(data("f32_raw").to_floats(), (std::vector<float>{4.f, 5.f, 6.f}));
    EXPECT_EQ(data("f16_raw").to_floats(), (std::vector<float>{2.f, -1.f}));
    EXPECT_EQ(data("i64_raw").to_int64s(), (std::vector<int64_t>{42, -42}));
    EXPECT_EQ(data("empty").elements(), 0);
    EXPECT_EQ(data("empty").dims(), (std::vector<int64_t>{0, 3}));
    EXPECT_EQ(data("scalar").dims(), std::vector<int64_t>{});
    EXPECT_EQ(data("scalar").to_int64s(), std::vector<int64_t>{9});
    // An initializer listed among the inputs (IR version < 4 style) stays a constant.
    EXPECT_TRUE(g.inputs().empty());
    EXPECT_EQ(g.outputs().size(), 11u);
}

// Opsets below 7 are read for the operators unchanged since opset 1 (Relu, Sigmoid, Neg here);
// the newest accepted is 21.
TEST(OnnxImport, OldOpsetOfUnchangedOps) {
    const Graph g = import::load_onnx(fixture("old_opset_6.onnx"));
    EXPECT_EQ(g.opset_version(""), 6);
    EXPECT_EQ(g.nodes().size(), 3u);
    EXPECT_TRUE(import::onnx_old_opset_op("Relu"));
    EXPECT_FALSE(import::onnx_old_opset_op("Reshape")); // its shape was an attribute before opset 5
    EXPECT_EQ(import::onnx_max_opset, 21);
}

// An If with a constant condition is inlined: the branch taken (with its initializer), its output
// passed on by an Identity; the other branch leaves no trace.
TEST(OnnxImport, IfWithConstantConditionFolds) {
    const Graph g = import::load_onnx(fixture("if_constant.onnx"));
    std::vector<std::string> ops;
    for (const auto& n : g.nodes()) ops.push_back(n.op_type);
    std::sort(ops.begin(), ops.end());
    EXPECT_EQ(ops, (std::vector<std::string>{"Identity", "Mul", "Relu"}));
    EXPECT_TRUE(g.value(g.id("half")).is_constant());
    EXPECT_EQ(g.value(g.outputs()[0]).name, "y");
}

TEST(OnnxImport, ExternalData) {
    for (const char* name : {"external.onnx", "external_no_length.onnx"}) {
        const Graph g = import::load_onnx(fixture(name));
        EXPECT_EQ(g.value(g.id("w1")).data->to_floats(), (std::vector<float>{1, 2, 3, 4, 5, 6})) << name;
        EXPECT_EQ(g.value(g.id("w2")).data->to_int64s(), (std::vector<int64_t>{10, 20, 30, 40})) << name;
    }
    // The directory can be given explicitly, for models loaded from memory.
    const auto bytes = test::read_bytes(fixture("external.onnx"));
    EXPECT_NO_THROW((void)import::load_onnx_bytes(bytes, "in-memory", {fixture("")}));
    expect_error([&] { (void)import::load_onnx_bytes(bytes, "in-memory", {"/nonexistent"}); }, "in-memory",
                 ErrorCode::Io);
}

TEST(OnnxImport, BadExternalData) {
    EXPECT_TRUE(contains(load_error("bad_external_length.onnx"), "external data length is 24"));
    EXPECT_TRUE(contains(load_error("bad_external_offset.onnx"), "too short"));
    EXPECT_TRUE(contains(load_error("bad_external_missing.onnx", ErrorCode::Io), "no_such_file.bin"));
    EXPECT_TRUE(contains(load_error("bad_external_escape.onnx"), "outside the model's directory"));
    EXPECT_TRUE(contains(load_error("bad_external_absolute.onnx"), "absolute path"));
    EXPECT_TRUE(contains(load_error("bad_external_offset_text.onnx"), "'3x2'"));
    // The data file shorter than the model says: truncate a copy.
    const auto dir = test::scratch_dir("external-short");
    std::filesystem::copy_file(fixture("external.onnx"), dir / "external.onnx");
    auto bin = test::read_bytes(fixture("external.bin"));
    bin.resize(50);
    test::write_bytes(dir / "external.bin", bin);
    const std::string m = expect_error([&] { (void)import::load_onnx(dir / "external.onnx"); },
                                       "external.bin", ErrorCode::InvalidArgument);
    EXPECT_TRUE(contains(m, "external.onnx")) << m;
}

// Issue 14: an external-data path that leads outside the model's folder is refused: "..", an
// absolute path (above), and a symbolic link beside the model pointing outside (a model archive
// may carry one to any file the user can read). Links and subfolders that stay inside are fine.
TEST(OnnxImport, ExternalDataThroughALinkOutsideIsRefused) {
    namespace fs = std::filesystem;
    const auto outside = test::scratch_dir("external-outside");
    std::filesystem::copy_file(fixture("external.bin"), outside / "secret.bin");
    const auto dir = test::scratch_dir("external-link");
    std::filesystem::copy_file(fixture("external.onnx"), dir / "external.onnx");
    fs::create_symlink(outside / "secret.bin", dir / "external.bin");
    const std::string m = expect_error([&] { (void)import::load_onnx(dir / "external.onnx"); },
                                       "external.onnx", ErrorCode::InvalidArgument);
    EXPECT_TRUE(contains(m, "outside the model's directory")) << m;
    EXPECT_TRUE(contains(m, "secret.bin")) << m;
    // A relative link to a file inside the folder, and the folder itself reached through a link.
    fs::remove(dir / "external.bin");
    fs::create_directories(dir / "data");
    std::filesystem::copy_file(fixture("external.bin"), dir / "data" / "blob.bin");
    fs::create_symlink("data/blob.bin", dir / "external.bin");
    EXPECT_NO_THROW((void)import::load_onnx(dir / "external.onnx"));
    const auto link_to_dir = test::scratch_dir("external-dir-link") / "model";
    fs::create_directory_symlink(dir, link_to_dir);
    EXPECT_NO_THROW((void)import::load_onnx(link_to_dir / "external.onnx"));
}

TEST(OnnxImport, NodesOutOfOrderAreSorted) {
    const Graph g = import::load_onnx(fixture("unsorted.onnx"));
    ASSERT_EQ(g.nodes().size(), 3u);
    EXPECT_EQ(g.nodes()[0].name, "first");
    EXPECT_EQ(g.nodes()[2].name, "third");
    // Apart from the header naming the file, the same graph as the one written in order.
    auto body = [](const std::string& d) { return d.substr(d.find('\n')); };
    EXPECT_EQ(body(dump(g)), body(dump(import::load_onnx(fixture("chain.onnx")))));
}

TEST(OnnxImport, MalformedGraphsAreRejected) {
    EXPECT_TRUE(contains(load_error("bad_missing_input.onnx"), "input 'ghost' is produced by no node"));
    EXPECT_TRUE(contains(load_error("bad_cycle.onnx"), "cycle"));
    EXPECT_TRUE(contains(load_error("bad_two_producers.onnx"), "'a' is already produced"));
    EXPECT_TRUE(contains(load_error("bad_undefined_output.onnx"), "'nowhere'"));
    EXPECT_TRUE(contains(load_error("bad_no_opset.onnx"), "imports no operator set"));
    EXPECT_TRUE(contains(load_error("bad_typed_count.onnx"), "needs 4 values, but float_data has 5"));
    EXPECT_TRUE(contains(load_error("bad_f16_bits.onnx"), "70000"));
    EXPECT_TRUE(contains(load_error("bad_raw_size.onnx"), "raw_data"));
    EXPECT_TRUE(contains(load_error("bad_negative_dim.onnx"), "negative dimension"));
    EXPECT_TRUE(contains(load_error("no_such_model.onnx", ErrorCode::Io), "no such file"));
}

TEST(OnnxImport, UnsupportedContentIsNamed) {
    EXPECT_TRUE(contains(load_error("bad_opset_22.onnx", ErrorCode::Unsupported), "opset 22"));
    const std::string old = load_error("bad_opset_6.onnx", ErrorCode::Unsupported);
    EXPECT_TRUE(contains(old, "opset 6")) << old;
    EXPECT_TRUE(contains(old, "'second' (Softmax)")) << old;
    // DOUBLE tensors import since vkml holds float64 in float storage (graph dtype f64).
    const graph::Graph d = import::load_onnx(fixture("bad_double_input.onnx"));
    EXPECT_EQ(d.value(d.inputs().at(0)).dtype, graph::DType::f64);
    // An If whose then_branch is an empty graph: malformed, named down to the attribute.
    const std::string m = load_error("bad_subgraph.onnx");
    EXPECT_TRUE(contains(m, "node 'branch' (If): attribute 'then_branch'")) << m;
    EXPECT_TRUE(contains(m, "has no graph outputs")) << m;
}

// Ifs nested 21 deep (the ONNX fuzzer's seed): refused at the 17th level with the path to it.
TEST(OnnxImport, SubgraphNestingIsLimited) {
    const std::string m = expect_error(
        [] { (void)import::load_onnx(fixture("../fuzz/corpus/onnx/deep_nesting.onnx")); }, "deep_nesting.onnx",
        ErrorCode::Unsupported);
    EXPECT_TRUE(contains(m, "nested more than 16 deep")) << m;
    EXPECT_TRUE(contains(m, "node 'z' (If): attribute 'then_branch': subgraph 'level19'")) << m;
}

// Subgraphs become Graph attributes; the outer values they read become the node's inputs
// (vkml_captures); sequence and optional types become value kinds.
TEST(OnnxImport, SubgraphsAndNonTensorTypes) {
    const auto node = test::onnx_testdata() / "node";
    VKML_REQUIRE_PATH(node, "install Debian's libonnx-testdata");
    {
        // test_range_float_type_positive_delta_expanded: the Loop's body reads 'delta' from the
        // outer scope.
        const Graph g = import::load_onnx(node / "test_range_float_type_positive_delta_expanded" / "model.onnx");
        const auto loop = std::find_if(g.nodes().begin(), g.nodes().end(), [](const graph::Node& n) { return n.op_type == "Loop"; });
        ASSERT_NE(loop, g.nodes().end());
        EXPECT_EQ(loop->get_strings("vkml_captures"), std::vector<std::string>{"delta"});
        ASSERT_EQ(loop->inputs.size(), 4u);
        EXPECT_EQ(g.value(loop->inputs[3]).name, "delta");
        const graph::Graph& body = loop->find("body")->as_graph();
        ASSERT_EQ(body.captures().size(), 1u);
        EXPECT_EQ(body.value(body.captures()[0]).name, "delta");
        EXPECT_EQ(body.inputs().size(), 3u);
        EXPECT_NO_THROW(body.validate());
        // dump() shows the body under its node, with the capture.
        const std::string d = graph::dump(g);
        EXPECT_TRUE(contains(d, "\n  body:\n")) << d;
        EXPECT_TRUE(contains(d, "\n    capture delta: ")) << d;
    }
    {
        const Graph g = import::load_onnx(node / "test_loop16_seq_none" / "model.onnx");
        const graph::Value& opt = g.value(g.inputs()[2]);
        EXPECT_EQ(opt.kind, graph::ValueKind::Optional);
        EXPECT_EQ(opt.element_kind, graph::ValueKind::Sequence);
        EXPECT_EQ(opt.dtype, graph::DType::f32);
        EXPECT_EQ(g.value(g.outputs()[0]).kind, graph::ValueKind::Sequence);
        // The If inside the Loop's body reads the body's input: a capture of the If, not of the body.
        const graph::Graph& body = g.nodes()[0].find("body")->as_graph();
        EXPECT_TRUE(body.captures().empty());
        const auto inner = std::find_if(body.nodes().begin(), body.nodes().end(), [](const graph::Node& n) { return n.op_type == "If"; });
        ASSERT_NE(inner, body.nodes().end());
        EXPECT_EQ(inner->get_strings("vkml_captures"), std::vector<std::string>{"opt_seq_in"});
    }
    {
        const auto in = import::load_onnx_value(node / "test_sequence_insert_at_back" / "test_data_set_0" / "input_0.pb",
                                                graph::ValueKind::Sequence);
        EXPECT_EQ(in.tensors.size(), 3u);
        const auto none = import::load_onnx_value(
            node / "test_optional_has_element_empty" / "test_data_set_0" / "input_0.pb", graph::ValueKind::Optional);
        EXPECT_FALSE(none.present);
        EXPECT_TRUE(none.tensors.empty());
    }
}

// Every cut of a model file must fail cleanly: protobuf may accept a cut that ends between two
// fields, so the importer's own checks (graph present, opset present, every input defined) are
// what catches those.
TEST(OnnxImport, TruncatedCopiesFailWithTheFileName) {
    for (const char* name : {"conv_relu.onnx", "typed_fields.onnx", "chain.onnx"}) {
        const auto bytes = test::read_bytes(fixture(name));
        const Graph whole = import::load_onnx_bytes(bytes, "cut.onnx");
        int accepted = 0;
        for (size_t n = 0; n < bytes.size(); ++n) {
            const std::span<const std::byte> cut(bytes.data(), n);
            try {
                const Graph g = import::load_onnx_bytes(cut, "cut.onnx");
                // A cut that only drops trailing optional fields may still be a complete model.
                EXPECT_EQ(dump(g), dump(whole)) << name << " cut at " << n;
                ++accepted;
            } catch (const Error& e) {
                ASSERT_TRUE(contains(e.what(), "'cut.onnx'")) << e.what();
            }
        }
        EXPECT_EQ(accepted, 0) << name;
    }
}

TEST(OnnxImport, CorruptedCopiesNeverCrash) {
    for (const char* name : {"conv_relu.onnx", "typed_fields.onnx", "external.onnx"}) {
        const auto original = test::read_bytes(fixture(name));
        int rejected = 0, accepted = 0;
        for (size_t i = 0; i < original.size(); ++i)
            for (uint8_t mask : {0xffu, 0x01u, 0x80u}) {
                auto bytes = original;
                bytes[i] ^= std::byte{mask};
                try {
                    (void)import::load_onnx_bytes(bytes, "corrupt.onnx", {fixture("")});
                    ++accepted; // e.g. a flipped bit inside a weight or a name
                } catch (const Error& e) {
                    ASSERT_TRUE(contains(e.what(), "'corrupt.onnx'")) << e.what();
                    ++rejected;
                }
            }
        EXPECT_GT(rejected, 0) << name;
        EXPECT_GT(accepted, 0) << name;
    }
}

// Every node test model that Debian ships either imports into a valid graph or is refused as
// Unsupported (dtypes, subgraphs, sequences); none may be "malformed".
TEST(OnnxImport, DebianNodeTests) {
    const auto root = test::onnx_testdata() / "node";
    VKML_REQUIRE_PATH(root, "install Debian's libonnx-testdata");
    int imported = 0, unsupported = 0;
    std::map<std::string, int> reasons;
    for (const auto& entry : std::filesystem::directory_iterator(root)) {
        const auto model = entry.path() / "model.onnx";
        if (!std::filesystem::exists(model)) continue;
        try {
            const Graph g = import::load_onnx(model);
            g.validate();
            ++imported;
        } catch (const Error& e) {
            ASSERT_EQ(e.code(), ErrorCode::Unsupported) << e.what();
            ASSERT_TRUE(contains(e.what(), model.string())) << e.what();
            ++unsupported;
            const std::string m = e.what();
            ++reasons[contains(m, "opset")          ? "opset"
                      : contains(m, "subgraph")     ? "subgraph"
                      : contains(m, "not a tensor") ? "non-tensor"
                                                    : "dtype or other"];
        }
    }
    std::string summary;
    for (const auto& [k, v] : reasons) summary += " " + k + "=" + std::to_string(v);
    std::printf("ONNX node tests: %d imported, %d unsupported (%s )\n", imported, unsupported,
                summary.c_str());
    EXPECT_GT(imported, 600);
}

TEST(OnnxImport, DebianNodeTestDetails) {
    const auto dir = test::onnx_testdata() / "node" / "test_conv_with_strides_padding";
    VKML_REQUIRE_PATH(dir, "install Debian's libonnx-testdata");
    const Graph g = import::load_onnx(dir / "model.onnx");
    ASSERT_EQ(g.nodes().size(), 1u);
    const Node& conv = g.nodes()[0];
    EXPECT_EQ(conv.op_type, "Conv");
    EXPECT_EQ(conv.get_ints("strides"), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(conv.get_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
    EXPECT_EQ(to_string(*g.value(g.inputs()[0]).shape), "[1,1,7,5]");
    EXPECT_EQ(to_string(*g.value(g.outputs()[0]).shape), "[1,1,4,3]");
    const auto in = import::load_onnx_tensor(dir / "test_data_set_0" / "input_0.pb");
    EXPECT_EQ(in.data.dims(), (std::vector<int64_t>{1, 1, 7, 5}));
    EXPECT_EQ(in.data.to_floats()[34], 34.f);
    const auto out = import::load_onnx_tensor(dir / "test_data_set_0" / "output_0.pb");
    EXPECT_EQ(out.data.dims(), (std::vector<int64_t>{1, 1, 4, 3}));
    EXPECT_EQ(out.data.to_floats()[0], 12.f);

    // A Constant-node test: the node disappears and its output is a constant graph output.
    const Graph c = import::load_onnx(test::onnx_testdata() / "node" / "test_constant" / "model.onnx");
    EXPECT_TRUE(c.nodes().empty());
    ASSERT_EQ(c.outputs().size(), 1u);
    EXPECT_TRUE(c.value(c.outputs()[0]).is_constant());

    auto bytes = test::read_bytes(dir / "test_data_set_0" / "input_0.pb");
    const auto cut_dir = test::scratch_dir("tensor-cut");
    bytes.resize(bytes.size() - 3);
    test::write_bytes(cut_dir / "input_0.pb", bytes);
    expect_error([&] { (void)import::load_onnx_tensor(cut_dir / "input_0.pb"); }, "input_0.pb",
                 ErrorCode::InvalidArgument);
}

// Dimension denotations are kept, and overrides by denotation set every input dimension so denoted
// (without case), a named one everywhere its name appears (the output too), an anonymous one alone.
TEST(OnnxImport, DimensionDenotations) {
    const Graph g = import::load_onnx(fixture("denoted.onnx"));
    const Value& x = g.value(g.id("x"));
    const Value& z = g.value(g.id("z"));
    ASSERT_TRUE(x.shape && z.shape);
    EXPECT_EQ((*x.shape)[0].denotation, "DATA_BATCH");
    EXPECT_EQ((*x.shape)[1].denotation, "DATA_CHANNEL");
    EXPECT_EQ((*x.shape)[2].denotation, "DATA_FEATURE");
    EXPECT_EQ((*z.shape)[0].denotation, "DATA_BATCH");
    EXPECT_EQ((*z.shape)[0].symbol, "");
    EXPECT_EQ((*z.shape)[1].denotation, "");
    // A label, not part of the shape.
    EXPECT_EQ(*x.shape,
              graph::Shape({graph::Dim::symbolic("B"), graph::Dim::known(2), graph::Dim::symbolic("L")}));

    Graph h = g;
    graph::apply_denotation_overrides(h, {{"data_batch", 3}, {"DATA_FEATURE", 5}, {"DATA_CHANNEL", 2}});
    EXPECT_EQ(to_string(*h.value(h.id("x")).shape), "[3,2,5]");
    EXPECT_EQ(to_string(*h.value(h.id("z")).shape), "[3,2,1]");
    EXPECT_EQ(to_string(*h.value(h.id("y")).shape), "[3,2,5]");
    EXPECT_TRUE(h.free_dimensions().empty());

    // A denotation no input has: the error lists those the inputs have.
    Graph bad = g;
    expect_error(
        [&] {
            graph::apply_denotation_overrides(bad, {{"DATA_TIME", 2}});
        },
        "'DATA_TIME' (the inputs have: DATA_BATCH, DATA_CHANNEL, DATA_FEATURE)", ErrorCode::InvalidArgument);
    // A fixed dimension given another size, directly or through a name override before.
    expect_error(
        [&] {
            graph::apply_denotation_overrides(bad, {{"DATA_CHANNEL", 3}});
        },
        "dimension 1 of input 'x' (DATA_CHANNEL) is 2, not the 3", ErrorCode::InvalidArgument);
    Graph named = g;
    graph::apply_free_dimension_overrides(named, {{"B", 2}});
    expect_error(
        [&] {
            graph::apply_denotation_overrides(named, {{"DATA_BATCH", 4}});
        },
        "dimension 0 of input 'x' (DATA_BATCH) is 2, not the 4", ErrorCode::InvalidArgument);
    expect_error(
        [&] {
            graph::apply_denotation_overrides(bad, {{"DATA_BATCH", 0}});
        },
        "at least 1", ErrorCode::InvalidArgument);
    // Through fix_input_shapes, as a Session applies them: by name, then by denotation.
    Graph both = g;
    graph::fix_input_shapes(both, {{"L", 7}}, {}, {{"DATA_BATCH", 1}});
    EXPECT_EQ(to_string(*both.value(both.id("x")).shape), "[1,2,7]");
    EXPECT_EQ(to_string(*both.value(both.id("z")).shape), "[1,2,1]");
}
