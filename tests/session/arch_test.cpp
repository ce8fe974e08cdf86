// Small real architectures that vkml's code did not write, exported by PyTorch (opset 17) with
// random weights: a MobileNetV3-style classifier, a ViT, a U-Net-style segmentation net, a CRNN
// with a bidirectional LSTM and a 3-D convolution net (assets/models/archs, made on the lent GPU
// machine by tools/models/archs/make_archs.py). Each runs through a Session in f32 and in f16
// storage against ONNX Runtime's CPU output on the committed input. The files are committed: a
// missing one is a failure naming it.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>

#include "npy.hpp"
#include "session/session_util.hpp"
#include "vkml/import/model.hpp"

namespace vkml::test {
namespace {

namespace fs = std::filesystem;

const fs::path archs_dir = fs::path(VKML_ASSETS_DIR) / "models" / "archs";

struct ArchCase {
    const char* name;
    bool fp32;
};
[[maybe_unused]] void PrintTo(const ArchCase& c, std::ostream* os) {
    *os << c.name << "/" << (c.fp32 ? "f32" : "f16");
}

class ArchModels : public GpuTest, public ::testing::WithParamInterface<ArchCase> {};

// Largest |vkml - ORT| over the largest |ORT|. f32: a few hundred terms per sum, so ~1e-6 is what a
// correct run gives; f16 storage: every activation rounded to 11 bits, through up to ~20 layers
// (attention's softmax and LayerNorm included).
constexpr double tol_f32 = 1e-5;
constexpr double tol_f16 = 1e-2;

TEST_P(ArchModels, MatchOnnxRuntime) {
    const ArchCase c = GetParam();
    const fs::path model = archs_dir / (std::string(c.name) + ".onnx");
    const fs::path in_npy = archs_dir / (std::string(c.name) + "_in.npy");
    const fs::path out_npy = archs_dir / (std::string(c.name) + "_out.npy");
    for (const fs::path& p : {model, in_npy, out_npy}) ASSERT_TRUE(fs::exists(p)) << "missing " << p;
    if (!c.fp32 && !dev().caps().storage16) GTEST_SKIP() << "no 16-bit storage on " << dev().caps().device_name;
    const graph::Graph g = import::load_model(model);
    const TensorData x = tool::read_npy(in_npy), want = tool::read_npy(out_npy);
    Session s(dev(), g, {.fp32 = c.fp32});
    if (std::string(c.name) == "vit_tiny") {
        // Both blocks' attention (MatMul, Transpose of K, Mul, Softmax, MatMul) run as one fused
        // kernel each (graph::fuse_attention).
        size_t fused = 0, softmax = 0;
        for (const StepInfo& st : s.steps()) {
            fused += st.op_type == "FusedAttention";
            softmax += st.op_type == "Softmax";
        }
        EXPECT_EQ(fused, 2u) << s.describe();
        EXPECT_EQ(softmax, 0u);
    }
    const auto out = s.run(std::vector<TensorData>{x});
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].dims(), want.dims()) << c.name;
    const double err = max_rel_diff(out[0], want);
    std::printf("%s %s: max |vkml - ORT| / max |ORT| = %.3g\n", c.name, c.fp32 ? "f32" : "f16", err);
    EXPECT_LE(err, c.fp32 ? tol_f32 : tol_f16) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Committed, ArchModels,
                         ::testing::Values(ArchCase{"mobilenet_small", true}, ArchCase{"mobilenet_small", false},
                                           ArchCase{"vit_tiny", true}, ArchCase{"vit_tiny", false},
                                           ArchCase{"unet_small", true}, ArchCase{"unet_small", false},
                                           ArchCase{"crnn_lstm", true}, ArchCase{"crnn_lstm", false},
                                           ArchCase{"conv3d_net", true}, ArchCase{"conv3d_net", false}));

} // namespace
} // namespace vkml::test
