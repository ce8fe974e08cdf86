// The model registry (vkml/passes/models.hpp): one table of model names for the passes, the tool
// and the Python module. Names resolve to the files tools/fetch-models puts in the cache, the
// passes' own resolvers agree with it, and bad variants or scales are errors naming the model.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "vkml/error.hpp"
#include "vkml/passes/detector.hpp"
#include "vkml/passes/models.hpp"
#include "vkml/passes/super_resolution.hpp"

namespace vkml::passes {
namespace {

namespace fs = std::filesystem;

TEST(ModelRegistry, NamesResolveToTheCacheFiles) {
    const fs::path dir = "/models";
    const auto m = find_model("anime4k-m", 0, dir);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->family, ModelFamily::Anime4K);
    EXPECT_EQ(m->path, dir / "websr/weights/anime4k/cnn-2x-m-rl.json");
    EXPECT_EQ(m->scale, 2);
    EXPECT_EQ(m->input_range, 1.f);
    EXPECT_EQ(find_model("anime4k-l-an", 2, dir)->path, dir / "websr/weights/anime4k/cnn-2x-l-an.json");

    const auto e = find_model("esrgan-slim", 4, dir);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->family, ModelFamily::Esrgan);
    EXPECT_EQ(e->path, dir / "esrgan-slim/models/x4/model.json");
    EXPECT_EQ(e->input_range, 255.f);
    EXPECT_EQ(e->scale, 4);
    EXPECT_EQ(find_model("esrgan-medium", 0, dir)->path, dir / "esrgan-medium/models/x2/model.json");

    const auto d = find_model("nanodet", 0, dir);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->path, dir / "human-models/models/nanodet.json");

    EXPECT_FALSE(find_model("models/my.onnx", 0, dir).has_value()) << "a path is not a registered name";
    EXPECT_FALSE(find_model("bilinear", 0, dir).has_value());
    for (const std::string& name : registered_model_names()) EXPECT_TRUE(find_model(name, 0, dir)) << name;
}

TEST(ModelRegistry, BadVariantsAndScalesAreErrors) {
    for (const char* name : {"anime4k-x", "anime4k-m-zz", "anime4k-"}) {
        try {
            find_model(name);
            ADD_FAILURE() << name << " was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(find_model("anime4k-s", 4), Error);
    EXPECT_THROW(find_model("esrgan-thick", 5), Error);
    EXPECT_THROW(find_model("nanodet", 2), Error);
}

TEST(ModelRegistry, PassesResolveThroughTheRegistryAndVkmlModels) {
    const char* old = std::getenv("VKML_MODELS");
    const std::string saved = old ? old : "";
    setenv("VKML_MODELS", "/cache-here", 1);
    EXPECT_EQ(models_dir(), fs::path("/cache-here"));
    EXPECT_EQ(SuperResolution::model_path("anime4k-s"), find_model("anime4k-s")->path.string());
    EXPECT_EQ(SuperResolution::model_path("esrgan-slim"), "/cache-here/esrgan-slim/models/x2/model.json");
    EXPECT_EQ(SuperResolution::model_path("anime4k-m", "/other"), "/other/websr/weights/anime4k/cnn-2x-m-rl.json");
    EXPECT_EQ(SuperResolution::model_path("bilinear"), "");
    EXPECT_EQ(SuperResolution::model_path("dir/model.onnx"), "dir/model.onnx");
    EXPECT_EQ(resolve_model("nanodet"), fs::path("/cache-here/human-models/models/nanodet.json"));
    if (old)
        setenv("VKML_MODELS", saved.c_str(), 1);
    else
        unsetenv("VKML_MODELS");
}

} // namespace
} // namespace vkml::passes
