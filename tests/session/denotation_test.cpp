// Free-dimension overrides by denotation through a Session (SessionOptions::free_dim_denotations,
// as ONNX Runtime's AddFreeDimensionOverrideByDenotation): tests/fixtures/denoted.onnx computes
// y = x + z with x [B (DATA_BATCH), 2, L (DATA_FEATURE)] and z [? (DATA_BATCH), 2, 1].
#include <gtest/gtest.h>

#include <filesystem>

#include "session/session_util.hpp"
#include "vkml/import/onnx.hpp"

using namespace vkml;
using namespace vkml::test;

namespace {

class DenotationTest : public GpuTest {};

const std::filesystem::path model = std::filesystem::path(VKML_FIXTURE_DIR) / "denoted.onnx";

TEST_F(DenotationTest, OverridesShapeTheSession) {
    const Graph g = import::load_onnx(model);
    for (const auto& [batch, length] : {std::pair<int64_t, int64_t>{3, 5}, {1, 9}}) {
        Session s(dev(), g,
                  {.fp32 = true, .free_dim_denotations = {{"DATA_BATCH", batch}, {"data_feature", length}}});
        ASSERT_EQ(s.inputs().size(), 2u);
        EXPECT_EQ(s.inputs()[0].shape, gpu::Shape({batch, 2, length}));
        EXPECT_EQ(s.inputs()[1].shape, gpu::Shape({batch, 2, 1}));
        EXPECT_EQ(s.outputs()[0].shape, gpu::Shape({batch, 2, length}));
        const TensorData x = rand_tensor({batch, 2, length}, 1), z = rand_tensor({batch, 2, 1}, 2);
        const auto out = s.run(std::vector<TensorData>{x, z});
        ASSERT_EQ(out.size(), 1u);
        const auto xv = x.to_floats(), zv = z.to_floats(), yv = out[0].to_floats();
        ASSERT_EQ(yv.size(), xv.size());
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t c = 0; c < 2; ++c)
                for (int64_t l = 0; l < length; ++l) {
                    const size_t i = size_t((b * 2 + c) * length + l);
                    EXPECT_EQ(yv[i], xv[i] + zv[size_t(b * 2 + c)]) << b << " " << c << " " << l;
                }
    }
    // By name and by denotation together.
    Session both(dev(), g,
                 {.fp32 = true, .free_dims = {{"L", 4}}, .free_dim_denotations = {{"DATA_BATCH", 2}}});
    EXPECT_EQ(both.inputs()[0].shape, gpu::Shape({2, 2, 4}));
}

TEST_F(DenotationTest, Errors) {
    const Graph g = import::load_onnx(model);
    auto error_of = [&](const SessionOptions& o) {
        try {
            Session s(dev(), g, o);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // The batch left free: the error says how to set it.
    std::string m = error_of({.fp32 = true, .free_dim_denotations = {{"DATA_FEATURE", 3}}});
    EXPECT_NE(m.find("free_dim_denotations"), std::string::npos) << m;
    m = error_of({.fp32 = true, .free_dim_denotations = {{"DATA_BATCH", 1}, {"DATA_TIME", 3}}});
    EXPECT_NE(m.find("no input dimension of the model has the denotation 'DATA_TIME'"), std::string::npos)
        << m;
    m = error_of(
        {.fp32 = true, .free_dims = {{"B", 2}, {"L", 3}}, .free_dim_denotations = {{"DATA_BATCH", 1}}});
    EXPECT_NE(m.find("(DATA_BATCH) is 2, not the 1"), std::string::npos) << m;
}

} // namespace
