#include "vkml/passes/super_resolution.hpp"

#include <algorithm>
#include <filesystem>

#include "vkml/error.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/tensor.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/model.hpp"
#include "vkml/ops/detect.hpp"
#include "vkml/ops/layout.hpp"
#include "vkml/passes/models.hpp"

namespace vkml::passes {

namespace {

bool is_filter(const std::string& name) {
    return name == "bilinear" || name == "nearest";
}


} // namespace

std::vector<std::string> SuperResolution::model_names() {
    return {"anime4k-s", "anime4k-m", "anime4k-l", "esrgan-slim", "esrgan-medium", "bilinear", "nearest"};
}

std::string SuperResolution::model_path(const std::string& model, const std::string& models_dir) {
    if (is_filter(model)) return {};
    if (const auto reg = find_model(model, 2, models_dir)) return reg->path.string();
    return model; // a path
}

struct SuperResolution::Impl {
    gpu::Device& device;
    SuperResolutionDesc desc;
    float range = 1;
    std::unique_ptr<Session> session;
    std::unique_ptr<ops::Resize> resize;
    std::unique_ptr<ops::ImageToTensor> to_tensor;
    std::unique_ptr<ops::TensorToImage> to_image;
    gpu::Shape in_shape, out_shape;

    Impl(gpu::Device& d, const SuperResolutionDesc& s) : device(d), desc(s) {}
};

SuperResolution::SuperResolution(gpu::Device& device, const SuperResolutionDesc& desc)
    : impl_(std::make_unique<Impl>(device, desc)) {
    Impl& m = *impl_;
    if (desc.width == 0 || desc.height == 0)
        throw Error(ErrorCode::InvalidArgument, "SuperResolution: width and height must be set");
    const int64_t h = desc.height, w = desc.width;
    m.in_shape = {1, 3, h, w};
    m.out_shape = {1, 3, 2 * h, 2 * w};
    const std::string path = model_path(desc.model, desc.models_dir);
    const auto registered = is_filter(desc.model) ? std::nullopt : find_model(desc.model, 2, desc.models_dir);
    m.range = desc.value_range > 0 ? desc.value_range : registered ? registered->input_range : 1.f;

    if (is_filter(desc.model)) {
        ops::ResizeDesc r;
        r.input = {m.in_shape, gpu::DType::f32};
        r.sizes = {1, 3, 2 * h, 2 * w};
        r.mode = desc.model == "bilinear" ? "linear" : "nearest";
        r.coordinate_transformation_mode = desc.model == "bilinear" ? "half_pixel" : "asymmetric";
        r.nearest_mode = "floor";
        m.resize = ops::Resize::create(device, r);
    } else {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(path, ec)) {
            const bool named = path != desc.model;
            throw Error(ErrorCode::Io, path + ": model file not found" +
                                           (named ? " (model '" + desc.model +
                                                        "'; run tools/fetch-models or set VKML_MODELS)"
                                                  : std::string(" (names: anime4k-s/m/l, esrgan-slim, "
                                                                "esrgan-medium, bilinear, nearest)")));
        }
        const graph::Graph g = import::load_model(path);
        if (g.inputs().size() != 1)
            throw Error(ErrorCode::InvalidArgument,
                        path + ": a super-resolution model needs one input, this one has " +
                            std::to_string(g.inputs().size()));
        SessionOptions options;
        options.fp32 = desc.fp32;
        options.input_shapes[g.value(g.inputs()[0]).name] = {1, 3, h, w};
        m.session = std::make_unique<Session>(device, g, options);
        const auto& ins = m.session->inputs();
        const auto& outs = m.session->outputs();
        if (outs.size() != 1 || ins[0].shape != m.in_shape || outs[0].shape != m.out_shape ||
            ins[0].storage != gpu::DType::f32 || outs[0].storage != gpu::DType::f32)
            throw Error(ErrorCode::InvalidArgument,
                        path + ": not a 2x RGB upscaler with f32 NCHW input and output (for " +
                            m.in_shape.str() + " it gives " +
                            (outs.empty() ? std::string("no output") : outs[0].shape.str()) + ")");
    }

    ops::ImageToTensorDesc it;
    it.width = desc.width;
    it.height = desc.height;
    it.format = desc.input_format;
    it.layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL; // the frame graph's layout for sampled reads
    it.dtype = gpu::DType::f32;
    it.channels = 3;
    it.transform.scale = {m.range};
    m.to_tensor = ops::ImageToTensor::create(device, it);
    ops::TensorToImageDesc ti;
    ti.input = {m.out_shape, gpu::DType::f32};
    ti.format = desc.output_format;
    ti.transform.scale = {m.range};
    m.to_image = ops::TensorToImage::create(device, ti);
}

SuperResolution::~SuperResolution() = default;

const std::string& SuperResolution::name() const {
    return impl_->desc.model;
}
bool SuperResolution::is_network() const {
    return impl_->session != nullptr;
}
uint32_t SuperResolution::input_width() const {
    return impl_->desc.width;
}
uint32_t SuperResolution::input_height() const {
    return impl_->desc.height;
}
float SuperResolution::value_range() const {
    return impl_->range;
}

void SuperResolution::record(gpu::CommandBuffer& cmd, const gpu::Tensor& input,
                             const gpu::Tensor& output) const {
    const Impl& m = *impl_;
    if (m.session) {
        const gpu::Tensor ins[] = {input}, outs[] = {output};
        m.session->record(cmd, {ins, outs});
    } else {
        const gpu::Tensor ins[] = {input}, outs[] = {output};
        m.resize->record(cmd, ins, outs);
    }
}

fg::ImageHandle SuperResolution::add_passes(fg::FrameGraph& graph, fg::ImageHandle input, fg::Queue queue,
                                            const std::string& name) {
    Impl* m = impl_.get();
    const uint64_t in_bytes = uint64_t(m->in_shape.elements()) * sizeof(float);
    const uint64_t out_bytes = uint64_t(m->out_shape.elements()) * sizeof(float);
    fg::BufferHandle x = graph.create_buffer(name + " input tensor", {.size = in_bytes});
    fg::BufferHandle y = graph.create_buffer(name + " output tensor", {.size = out_bytes});
    fg::ImageHandle out = graph.create_image(
        name + " output",
        {.format = m->desc.output_format, .width = output_width(), .height = output_height()});

    fg::PassBuilder convert = graph.add_compute_pass(name + " to tensor");
    convert.read(input, fg::ImageRead::Sampled);
    x = convert.write(x);
    convert.queue(queue).record([m, input, x](fg::PassContext& ctx) {
        if (ctx.layout(input) != VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL)
            throw Error(ErrorCode::InvalidArgument, "SuperResolution: the input image is not in "
                                                    "SHADER_READ_ONLY_OPTIMAL layout for its sampled read");
        const VkExtent2D e = ctx.extent(input);
        if (e.width != m->desc.width || e.height != m->desc.height)
            throw Error(ErrorCode::InvalidArgument,
                        "SuperResolution '" + m->desc.model + "': input image is " + std::to_string(e.width) +
                            "x" + std::to_string(e.height) + ", created for " +
                            std::to_string(m->desc.width) + "x" + std::to_string(m->desc.height));
        m->to_tensor->record(ctx.cmd(),
                             ops::ImageRef(ctx.view(input), m->desc.input_format, e.width, e.height),
                             ctx.tensor(x, m->in_shape, gpu::DType::f32));
    });

    fg::PassBuilder ml = graph.add_ml_pass(name + " ml");
    ml.read(x);
    if (m->session && m->session->arena()) {
        // The model's intermediate values live in the session's own arena: importing it and
        // declaring it read-written orders consecutive frames' runs of the model.
        fg::BufferHandle arena = graph.import_buffer(
            name + " arena", {.vkml_buffer = m->session->arena(),
                              .incoming = {.stages = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                           .access = VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
                                           .queue = queue}});
        arena = ml.write(arena, fg::BufferWrite::StorageReadWrite);
    }
    y = ml.write(y);
    ml.queue(queue).record([this, m, x, y](fg::PassContext& ctx) {
        record(ctx.cmd(), ctx.tensor(x, m->in_shape, gpu::DType::f32),
               ctx.tensor(y, m->out_shape, gpu::DType::f32));
    });

    fg::PassBuilder back = graph.add_compute_pass(name + " to image");
    back.read(y);
    out = back.write(out, fg::ImageWrite::Storage);
    back.queue(queue).record([m, y, out](fg::PassContext& ctx) {
        const VkExtent2D e = ctx.extent(out);
        m->to_image->record(ctx.cmd(), ctx.tensor(y, m->out_shape, gpu::DType::f32),
                            ops::ImageRef(ctx.view(out), m->desc.output_format, e.width, e.height));
    });
    return out;
}

} // namespace vkml::passes
