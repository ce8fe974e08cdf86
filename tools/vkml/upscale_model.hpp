#pragma once
// The super-resolution models `vkml upscale` runs, by name or file, as a media::FrameProcessor.
#include <filesystem>
#include <memory>
#include <string>

#include "vkml/media/testclip.hpp"
#include "vkml/media/transcode.hpp"
#include "vkml/graph/graph.hpp"

namespace vkml {
class TiledRunner;
} // namespace vkml

namespace vkml::tool {

struct ModelChoice {
    std::string name;      // a built-in name (anime4k-m, esrgan-slim, ...) or a model file
    int scale = 0;         // 0: 2
    float input_range = 0; // 0: the model's own (esrgan 255, others 1)
    bool fp32 = false;
    int tile = 0;           // 0: automatic
    std::string models_dir; // where built-in names resolve; empty: passes::models_dir()
};

// The model file a name stands for, with the pixel range it expects (1 or 255) and its scale.
struct ResolvedModel {
    std::filesystem::path path;
    float input_range = 1.f;
    int scale = 2;
    std::string label; // "anime4k-m (cnn-2x-m-rl.json)"
};
ResolvedModel resolve_model(const ModelChoice& choice);

// The model in a graph that takes and gives RGB 0..1 (scaling wrapped around 0..255 models).
graph::Graph load_rgb01_graph(const ResolvedModel& model);

class ModelProcessor final : public media::FrameProcessor {
public:
    explicit ModelProcessor(const ModelChoice& choice);
    ~ModelProcessor() override;
    media::Size output_size(int in_w, int in_h) const override;
    gpu::DType dtype() const override;
    void prepare(const media::ProcessorSetup& setup) override;
    void process(media::FrameContext& frame) override;
    std::string name() const override { return model_.label; }
    bool processes_alpha() const override { return true; } // the alpha is upscaled as a grey image

private:
    ModelChoice choice_;
    ResolvedModel model_;
    graph::Graph graph_;
    std::unique_ptr<TiledRunner> runner_;
    gpu::Device* device_ = nullptr;
    bool fp32_ = false; // the runner's precision
};

// The bundled default clip (see media::bundled_clip_path).
inline std::filesystem::path default_clip_path() {
    return media::bundled_clip_path();
}

} // namespace vkml::tool
