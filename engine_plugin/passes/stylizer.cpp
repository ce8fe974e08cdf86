// passes::Stylizer: a fast-neural-style model per input size, the 0..255 scaling and the strength
// blend (shaders/style/*.comp), standalone, recorded into a caller's command buffer, or as
// frame-graph passes.
#include "vkml/passes/stylizer.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <system_error>

#include "vkml/error.hpp"
#include "vkml/fg/ml_pass.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/gpu/transfer.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/model.hpp"
#include "vkml/ops/detect.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::passes {

using gpu::DType;

struct Stylizer::PerSize {
    uint32_t width = 0, height = 0;
    std::unique_ptr<Session> session;
    gpu::Shape in_shape, out_shape; // the model's input [1, 3, H, W] and output [1, 3, H', W']
    gpu::Tensor x, y;               // for record(): the model's input and output (f32)
    // add_passes(): image <-> tensor conversions, kept (a sample re-declares its graph at every
    // style switch) and alive while graphs that record them run.
    std::map<VkFormat, std::unique_ptr<ops::ImageToTensor>> to_tensor;
    std::unique_ptr<ops::TensorToImage> to_image;
};

namespace {

std::string size_text(uint32_t w, uint32_t h) {
    return std::to_string(w) + "x" + std::to_string(h);
}

bool is_float(DType d) {
    return d == DType::f32 || d == DType::f16;
}

struct BlendPush {
    uint32_t width, height, styled_width, styled_height;
    float original_scale, styled_scale, strength;
};

struct PrepPush {
    uint32_t n;
    float scale;
};

} // namespace

Stylizer::Stylizer(gpu::Device& device, StylizerDesc desc)
    : device_(device), desc_(std::move(desc)), strength_(std::clamp(desc_.strength, 0.f, 1.f)) {
    const std::string file = desc_.model.string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(desc_.model, ec))
        throw Error(ErrorCode::Io,
                    "style model '" + file + "' " +
                        (std::filesystem::exists(desc_.model, ec) ? "is not a file" : "does not exist"));
    if (!(desc_.pixel_scale > 0.f) || !std::isfinite(desc_.pixel_scale))
        throw Error(ErrorCode::InvalidArgument, "style model '" + file + "': pixel_scale must be positive");
    name_ = desc_.name.empty() ? desc_.model.stem().string() : desc_.name;
    graph_ = import::load_model(desc_.model);
    auto fail = [&](const std::string& problem) {
        throw Error(ErrorCode::InvalidArgument,
                    "'" + file + "' is not a style-transfer model (one RGB image in, one out): " + problem);
    };
    if (graph_.inputs().size() != 1) fail("it has " + std::to_string(graph_.inputs().size()) + " inputs");
    if (graph_.outputs().size() != 1) fail("it has " + std::to_string(graph_.outputs().size()) + " outputs");
    const graph::Value& in = graph_.value(graph_.inputs()[0]);
    input_name_ = in.name;
    if (in.dtype != graph::DType::f32)
        fail("input '" + in.name + "' is " + graph::dtype_name(in.dtype) + ", not float32");
    if (in.shape) {
        const graph::Shape& s = *in.shape;
        if (s.rank() != 4) fail("input '" + in.name + "' is " + graph::to_string(s) + ", not [1, 3, H, W]");
        if ((s[0].is_known() && s[0].size != 1) || (s[1].is_known() && s[1].size != 3))
            fail("input '" + in.name + "' is " + graph::to_string(s) + ", not [1, 3, H, W]");
    }
}

Stylizer::~Stylizer() = default;

void Stylizer::set_strength(float strength) {
    strength_ = std::isfinite(strength) ? std::clamp(strength, 0.f, 1.f) : 1.f;
}

Stylizer::PerSize& Stylizer::per_size(uint32_t width, uint32_t height) {
    if (width == 0 || height == 0)
        throw Error(ErrorCode::InvalidArgument, "style '" + name_ + "': cannot stylize an empty image (" +
                                                    size_text(width, height) + ")");
    auto key = std::make_pair(width, height);
    if (auto it = sizes_.find(key); it != sizes_.end()) return *it->second;
    auto p = std::make_unique<PerSize>();
    p->width = width;
    p->height = height;
    SessionOptions options;
    options.fp32 = desc_.fp32;
    options.input_shapes[input_name_] = {1, 3, int64_t(height), int64_t(width)};
    p->session = std::make_unique<Session>(device_, graph_, options);
    const Session& s = *p->session;
    const TensorInfo& out = s.outputs().at(0);
    p->in_shape = s.inputs().at(0).shape;
    p->out_shape = out.shape;
    if (s.inputs().at(0).storage != DType::f32 || out.storage != DType::f32 || out.shape.rank() != 4 ||
        out.shape[0] != 1 || out.shape[1] != 3 || out.shape[2] < int64_t(height) ||
        out.shape[3] < int64_t(width))
        throw Error(ErrorCode::InvalidArgument,
                    "'" + desc_.model.string() + "' is not a style-transfer model: for a " +
                        size_text(width, height) + " input it gives " + gpu::dtype_name(out.storage) +
                        out.shape.str() + ", not float32 [1, 3, H, W] of at least the input's size");
    return *sizes_.emplace(key, std::move(p)).first->second;
}

Session& Stylizer::session(uint32_t width, uint32_t height) {
    return *per_size(width, height).session;
}

void Stylizer::prepare(uint32_t width, uint32_t height) {
    PerSize& p = per_size(width, height);
    if (!p.x) {
        p.x = gpu::Tensor(device_, p.in_shape, DType::f32, name_ + " input");
        p.y = gpu::Tensor(device_, p.out_shape, DType::f32, name_ + " output");
    }
}

void Stylizer::record_blend(gpu::CommandBuffer& cmd, const gpu::Tensor& original, const gpu::Tensor& styled,
                            const gpu::Tensor& out, float original_scale) const {
    const gpu::Shape& s = original.shape();
    const gpu::Shape& m = styled.shape();
    const gpu::Pipeline& blend =
        device_.pipeline({.shader = original.dtype() == DType::f16 ? gpu::ShaderId::style_blend_f16
                                                                   : gpu::ShaderId::style_blend_f32,
                          .bindings = 3,
                          .push_constant_bytes = sizeof(BlendPush)});
    const BlendPush push{uint32_t(s[3]), uint32_t(s[2]),          uint32_t(m[3]), uint32_t(m[2]),
                         original_scale, 1.f / desc_.pixel_scale, strength_};
    const gpu::BufferRange buffers[] = {original.range(), styled.range(), out.range()};
    cmd.dispatch(blend, buffers, push, cmd.groups_for(blend, uint64_t(s.elements())));
}

void Stylizer::record(gpu::CommandBuffer& cmd, const gpu::Tensor& rgb, const gpu::Tensor& out,
                      gpu::Profiler* profiler) {
    const gpu::Shape& s = rgb.shape();
    auto bad = [&](const std::string& problem) {
        throw Error(ErrorCode::InvalidArgument, "style '" + name_ + "': " + problem);
    };
    if (s.rank() != 4 || s[0] != 1 || s[1] != 3 || s[2] < 1 || s[3] < 1)
        bad("the input must be an RGB tensor [1, 3, H, W], not " + s.str());
    if (!is_float(rgb.dtype()))
        bad(std::string("the input must be f32 or f16, not ") + gpu::dtype_name(rgb.dtype()));
    if (!(out.shape() == s) || out.dtype() != rgb.dtype())
        bad("the output must be " + std::string(gpu::dtype_name(rgb.dtype())) + s.str() +
            " like the input, not " + gpu::dtype_name(out.dtype()) + out.shape().str());
    if (!rgb.contiguous() || !out.contiguous()) bad("the input and output tensors must be contiguous");
    if (rgb.buffer() == out.buffer() && rgb.byte_offset() < out.byte_offset() + out.bytes() &&
        out.byte_offset() < rgb.byte_offset() + rgb.bytes())
        bad("the output overlaps the input");
    prepare(uint32_t(s[3]), uint32_t(s[2]));
    PerSize& p = per_size(uint32_t(s[3]), uint32_t(s[2]));
    // An earlier record on this queue may still read x or y (frames in flight).
    gpu::barrier::compute_to_compute(cmd);
    if (strength_ > 0.f) {
        const gpu::Pipeline& prep =
            device_.pipeline({.shader = rgb.dtype() == DType::f16 ? gpu::ShaderId::style_prep_f16
                                                                  : gpu::ShaderId::style_prep_f32,
                              .bindings = 2,
                              .push_constant_bytes = sizeof(PrepPush)});
        const gpu::BufferRange buffers[] = {rgb.range(), p.x.range()};
        cmd.dispatch(prep, buffers, PrepPush{uint32_t(s.elements()), desc_.pixel_scale},
                     cmd.groups_for(prep, uint64_t(s.elements())));
        gpu::barrier::compute_to_compute(cmd);
        const gpu::Tensor ins[] = {p.x}, outs[] = {p.y};
        p.session->record(cmd, {ins, outs}, profiler);
        gpu::barrier::compute_to_compute(cmd);
    }
    record_blend(cmd, rgb, p.y, out, 1.f);
}

graph::TensorData Stylizer::run(const graph::TensorData& rgb) {
    const auto& d = rgb.dims();
    if (d.size() != 4 || d[0] != 1 || d[1] != 3 || d[2] < 1 || d[3] < 1 ||
        (rgb.dtype() != graph::DType::f32 && rgb.dtype() != graph::DType::f16))
        throw Error(ErrorCode::InvalidArgument, "style '" + name_ +
                                                    "': run() takes an RGB tensor f32[1, 3, H, W], not " +
                                                    graph::describe(rgb));
    const gpu::Shape shape = gpu::Shape(std::span<const int64_t>(d));
    gpu::Tensor in(device_, shape, DType::f32, name_ + " rgb"),
        out(device_, shape, DType::f32, name_ + " result");
    gpu::upload(device_, in, rgb.to_floats());
    prepare(uint32_t(d[3]), uint32_t(d[2]));
    device_.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        record(cmd, in, out);
        gpu::barrier::compute_to_transfer(cmd);
    });
    const std::vector<float> v = gpu::download_floats(device_, out);
    return graph::TensorData::from_floats(d, v);
}

fg::ImageHandle Stylizer::add_passes(fg::FrameGraph& graph, fg::ImageHandle color, uint32_t width,
                                     uint32_t height, const StylizerPassDesc& desc) {
    PerSize& p = per_size(width, height);
    const std::string& n = desc.name;
    const uint64_t in_bytes = uint64_t(p.in_shape.elements()) * sizeof(float);
    const uint64_t out_bytes = uint64_t(p.out_shape.elements()) * sizeof(float);
    fg::BufferHandle x = graph.create_buffer(n + " x", {.size = in_bytes});
    fg::BufferHandle y = graph.create_buffer(n + " y", {.size = out_bytes});
    fg::BufferHandle z = graph.create_buffer(n + " z", {.size = in_bytes});
    fg::ImageHandle result = graph.create_image(
        n + " result", {.format = VK_FORMAT_R8G8B8A8_UNORM, .width = width, .height = height});

    // Pixels as the model wants them: the stored bytes (sRGB not linearized) times 255.
    std::unique_ptr<ops::ImageToTensor>& to_tensor_op = p.to_tensor[desc.format];
    if (!to_tensor_op)
        to_tensor_op = ops::ImageToTensor::create(device_, {.width = width,
                                                            .height = height,
                                                            .format = desc.format,
                                                            .dtype = DType::f32,
                                                            .transform = {.scale = {desc_.pixel_scale}},
                                                            .linearize_srgb = false});
    if (!p.to_image)
        p.to_image = ops::TensorToImage::create(
            device_, {.input = {p.in_shape, DType::f32}, .format = VK_FORMAT_R8G8B8A8_UNORM});
    const ops::ImageToTensor* to_tensor = to_tensor_op.get();
    const ops::TensorToImage* to_image = p.to_image.get();

    fg::PassBuilder in = graph.add_compute_pass(n + " in");
    in.read(color);
    x = in.write(x);
    const VkFormat format = desc.format;
    in.queue(desc.queue)
        .record([to_tensor, color, x, format, width, height, shape = p.in_shape](fg::PassContext& ctx) {
            to_tensor->record(ctx.cmd(), ops::ImageRef(ctx.view(color), format, width, height),
                              ctx.tensor(x, shape, DType::f32));
        });

    // The whole model as one ML pass; its arena is imported and read-written, which orders the
    // runs of consecutive frames on the queue.
    fg::PassBuilder model = graph.add_ml_pass(n + " model");
    model.read(x);
    const Session* session = p.session.get();
    if (session->arena()) {
        fg::BufferHandle arena =
            graph.import_buffer(n + " arena", {.vkml_buffer = session->arena(),
                                               .incoming = {.stages = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                                            .access = VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
                                                            .queue = desc.queue}});
        arena = model.write(arena, fg::BufferWrite::StorageReadWrite);
    }
    y = model.write(y);
    model.queue(desc.queue)
        .record([this, session, x, y, in_shape = p.in_shape, out_shape = p.out_shape](fg::PassContext& ctx) {
            if (strength_ <= 0.f) return; // the blend does not read y then
            const gpu::Tensor ins[] = {ctx.tensor(x, in_shape, DType::f32)};
            const gpu::Tensor outs[] = {ctx.tensor(y, out_shape, DType::f32)};
            session->record(ctx.cmd(), {ins, outs});
        });

    fg::PassBuilder blend = graph.add_compute_pass(n + " blend");
    blend.read(x);
    blend.read(y);
    z = blend.write(z);
    blend.queue(desc.queue)
        .record([this, x, y, z, in_shape = p.in_shape, out_shape = p.out_shape](fg::PassContext& ctx) {
            record_blend(ctx.cmd(), ctx.tensor(x, in_shape, DType::f32), ctx.tensor(y, out_shape, DType::f32),
                         ctx.tensor(z, in_shape, DType::f32), 1.f / desc_.pixel_scale);
        });

    fg::PassBuilder out = graph.add_compute_pass(n + " out");
    out.read(z);
    result = out.write(result, fg::ImageWrite::Storage);
    out.queue(desc.queue)
        .record([to_image, z, result, width, height, shape = p.in_shape](fg::PassContext& ctx) {
            to_image->record(ctx.cmd(), ctx.tensor(z, shape, DType::f32),
                             ops::ImageRef(ctx.view(result), VK_FORMAT_R8G8B8A8_UNORM, width, height));
        });
    return result;
}

} // namespace vkml::passes
