#include "upscale_model.hpp"


#include "vkml/error.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/graph/tiled.hpp"
#include "vkml/import/model.hpp"
#include "vkml/passes/models.hpp"

namespace vkml::tool {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad_model(const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, what);
}

} // namespace

ResolvedModel resolve_model(const ModelChoice& c) {
    ResolvedModel m;
    const int scale = c.scale ? c.scale : 2;
    const std::string& n = c.name;
    // The registry's names (anime4k-s|m|l[-an|-rl|-3d], esrgan-slim|medium|thick), the same ones
    // passes::SuperResolution and the samples take.
    if (const auto reg = passes::find_model(n, scale, c.models_dir)) {
        if (reg->family == passes::ModelFamily::NanoDet)
            bad_model("'" + n + "' is a detector (vkml detect), not an upscaler");
        m.path = reg->path;
        m.input_range = reg->input_range;
        m.label = reg->label;
    } else {
        m.path = n;
        std::error_code ec;
        if (!fs::exists(m.path, ec)) {
            if (n.find('/') == std::string::npos && n.find('.') == std::string::npos)
                bad_model("unknown model '" + n +
                          "' (anime4k-s|m|l, esrgan-slim|medium|thick, or a path to a model file)");
            throw Error(ErrorCode::Io, "'" + n + "': no such model file");
        }
        m.input_range = 1.f;
        m.label = fs::path(n).filename().string();
    }
    if (c.input_range > 0) m.input_range = c.input_range;
    m.scale = scale;
    std::error_code ec;
    if (!fs::exists(m.path, ec))
        throw Error(ErrorCode::Io,
                    "'" + m.path.string() + "': model " + n +
                        " is not in the model cache (run tools/fetch-models, or set VKML_MODELS)");
    return m;
}

graph::Graph load_rgb01_graph(const ResolvedModel& model) {
    graph::Graph g = import::load_model(model.path);
    if (g.inputs().size() != 1 || g.outputs().size() != 1)
        g.fail("vkml upscale needs a model with one image input and one image output, this one has " +
               std::to_string(g.inputs().size()) + " inputs and " + std::to_string(g.outputs().size()) +
               " outputs");
    if (model.input_range != 1.f) {
        // Frames arrive as RGB 0..1: scale on the way in and out, inside the graph (so the session
        // fuses it and the tensors the pipeline sees stay 0..1).
        const graph::ValueId in = g.inputs()[0], out = g.outputs()[0];
        const graph::Value old_in = g.value(in);
        const graph::ValueId new_in =
            g.add_value(g.unique_name("vkml_rgb01_input"), old_in.dtype, old_in.shape);
        const graph::ValueId up =
            g.add_constant(g.unique_name("vkml_range"), graph::TensorData::scalar(model.input_range));
        const graph::ValueId down = g.add_constant(g.unique_name("vkml_range_inverse"),
                                                   graph::TensorData::scalar(1.f / model.input_range));
        const graph::ValueId new_out = g.add_value(g.unique_name("vkml_rgb01_output"), g.value(out).dtype);
        g.add_node("Mul", {new_in, up}, {in}, g.unique_name("vkml_to_model_range"));
        g.add_node("Mul", {out, down}, {new_out}, g.unique_name("vkml_from_model_range"));
        g.inputs()[0] = new_in;
        g.outputs()[0] = new_out;
        g.sort_topologically();
    }
    return g;
}

ModelProcessor::ModelProcessor(const ModelChoice& choice)
    : choice_(choice), model_(resolve_model(choice)), graph_(load_rgb01_graph(model_)) {}

ModelProcessor::~ModelProcessor() = default;

media::Size ModelProcessor::output_size(int in_w, int in_h) const {
    return {in_w * model_.scale, in_h * model_.scale};
}

gpu::DType ModelProcessor::dtype() const {
    return runner_ ? runner_->input_dtype() : gpu::DType::f32;
}

void ModelProcessor::prepare(const media::ProcessorSetup& setup) {
    // Frames of any size go through overlapping tiles sized from the memory budget (--tile
    // overrides); a frame that fits is one tile, the same as a whole-frame session.
    // f16 storage holds 11 significant bits: frames of more than 10 bits (12-bit video, 16-bit
    // images) run in f32, so every bit of them reaches the model and comes back.
    const bool fp32 = choice_.fp32 || setup.bits > 10;
    if (!runner_ || device_ != setup.device || fp32 != fp32_) {
        runner_.reset();
        device_ = setup.device;
        fp32_ = fp32;
        SessionOptions so;
        so.fp32 = fp32;
        runner_ =
            std::make_unique<TiledRunner>(*device_, graph_, TiledDesc{.tile = setup.tile, .session = so});
    }
    const TilePlan& plan = runner_->prepare(setup.input.height, setup.input.width);
    if (plan.scale != model_.scale || runner_->output_shape()[1] != 3 || runner_->input_shape()[1] != 3)
        throw Error(ErrorCode::InvalidArgument,
                    "'" + model_.path.string() + "' turns a " + std::to_string(setup.input.width) + "x" +
                        std::to_string(setup.input.height) + " RGB frame into " +
                        runner_->output_shape().str() + ", not a " + std::to_string(model_.scale) +
                        "x RGB frame (check --scale)");
    if (runner_->input_dtype() != runner_->output_dtype())
        throw Error(ErrorCode::Unsupported, "'" + model_.path.string() + "': input and output dtypes differ");
}

void ModelProcessor::process(media::FrameContext& frame) {
    // The tiled runner copies tiles in and out with transfers: the colour conversion's writes of the
    // input, and the previous frame's use of the runner's tile buffers, come first.
    gpu::barrier::memory(frame.cmd(),
                         VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_TRANSFER_BIT,
                         VK_ACCESS_2_SHADER_WRITE_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT,
                         VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                         VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT |
                             VK_ACCESS_2_SHADER_READ_BIT | VK_ACCESS_2_SHADER_WRITE_BIT);
    // Piece by piece, each its own submission: on a slow device one image is minutes of work,
    // which must not be one submission (see TiledRunner). Ctrl-C stops between pieces.
    const size_t pieces = size_t(runner_->plan().pieces);
    for (size_t i = 0; i < pieces; ++i) {
        if (i > 0) {
            frame.flush(runner_->progress_after(i - 1));
            if (frame.cancelled()) return;
        }
        runner_->record_piece(frame.cmd(), frame.input(), frame.output(), i);
    }
}

} // namespace vkml::tool
