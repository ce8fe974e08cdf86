// passes::Detector: model loading, format choice, the op chain around the Session, readback.
#include "vkml/passes/detector.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>

#include "vkml/error.hpp"
#include "vkml/gpu/transfer.hpp"
#include "vkml/passes/models.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/model.hpp"
#include "vkml/ops/detect.hpp"

namespace vkml::passes {

namespace {

// COCO 2017's 80 detection categories (the 91 ids without the 11 unused ones), in order.
constexpr std::array<const char*, 80> coco_names = {"person",        "bicycle",      "car",
                                                    "motorcycle",    "airplane",     "bus",
                                                    "train",         "truck",        "boat",
                                                    "traffic light", "fire hydrant", "stop sign",
                                                    "parking meter", "bench",        "bird",
                                                    "cat",           "dog",          "horse",
                                                    "sheep",         "cow",          "elephant",
                                                    "bear",          "zebra",        "giraffe",
                                                    "backpack",      "umbrella",     "handbag",
                                                    "tie",           "suitcase",     "frisbee",
                                                    "skis",          "snowboard",    "sports ball",
                                                    "kite",          "baseball bat", "baseball glove",
                                                    "skateboard",    "surfboard",    "tennis racket",
                                                    "bottle",        "wine glass",   "cup",
                                                    "fork",          "knife",        "spoon",
                                                    "bowl",          "banana",       "apple",
                                                    "sandwich",      "orange",       "broccoli",
                                                    "carrot",        "hot dog",      "pizza",
                                                    "donut",         "cake",         "chair",
                                                    "couch",         "potted plant", "bed",
                                                    "dining table",  "toilet",       "tv",
                                                    "laptop",        "mouse",        "remote",
                                                    "keyboard",      "cell phone",   "microwave",
                                                    "oven",          "toaster",      "sink",
                                                    "refrigerator",  "book",         "clock",
                                                    "vase",          "scissors",     "teddy bear",
                                                    "hair drier",    "toothbrush"};

[[noreturn]] void invalid(const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, "detector: " + what);
}

uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

std::string shape_text(const gpu::Shape& s) {
    return s.str();
}

// `body` (the commands of one stage) as one timestamp scope of `profiler` named prefix + name, when
// there is a profiler (no name is built without one); the scope closes after the stage's last
// dispatch.
template <class F>
void timed(gpu::Profiler* profiler, gpu::CommandBuffer& cmd, const std::string& prefix, const char* name,
           F&& body) {
    if (profiler) profiler->begin(cmd, prefix + name);
    body();
    if (profiler) profiler->end(cmd);
}

} // namespace

const char* format_name(DetectorFormat format) {
    switch (format) {
    case DetectorFormat::Auto:
        return "auto";
    case DetectorFormat::YoloV5:
        return "yolov5";
    case DetectorFormat::YoloV8:
        return "yolov8";
    case DetectorFormat::NanoDet:
        return "nanodet";
    }
    return "?";
}

DetectorFormat parse_format(std::string_view name) {
    for (DetectorFormat f :
         {DetectorFormat::Auto, DetectorFormat::YoloV5, DetectorFormat::YoloV8, DetectorFormat::NanoDet})
        if (name == format_name(f)) return f;
    invalid("unknown format '" + std::string(name) + "' (auto, yolov5, yolov8 or nanodet)");
}

std::span<const char* const> coco_class_names() {
    return coco_names;
}

std::filesystem::path resolve_model(std::string_view model) {
    if (model == "nanodet") return find_model(model)->path;
    return std::filesystem::path(model);
}

// ---------------------------------------------------------------------------------------------

struct Detector::Impl {
    gpu::Device& device;
    DetectorDesc desc;
    std::filesystem::path path;
    DetectorFormat format = DetectorFormat::Auto;
    std::unique_ptr<Session> session;
    uint32_t in_w = 0, in_h = 0;
    gpu::Tensor model_in;
    std::vector<gpu::Tensor> model_out;
    std::unique_ptr<ops::Op> decode;
    std::vector<gpu::Tensor> decode_in; // model outputs in the decoder's input order
    gpu::Tensor candidates, nms_boxes, scores;
    std::unique_ptr<ops::NonMaxSuppression> nms;
    gpu::Tensor selected, count;
    std::unique_ptr<gpu::Buffer> nms_scratch;
    std::vector<std::string> names;

    // Ops that depend on the source's shape and dtype.
    struct SourceOps {
        std::unique_ptr<ops::Letterbox> letterbox;
        std::unique_ptr<ops::GatherDetections> gather;
    };
    std::map<std::string, SourceOps> sources;

    // Frame graph pass state: the ops of each frame image (size, format, layout), whose letterbox
    // reads the image itself.
    std::map<std::string, SourceOps> image_sources;
    std::vector<DetectionBuffer> slots;
    std::vector<uint64_t> slot_frames;

    Impl(gpu::Device& d, const DetectorDesc& dd) : device(d), desc(dd) {}

    void load();
    void choose_format();
    SourceOps& source_ops(const gpu::Tensor& source);
    SourceOps& image_ops(VkExtent2D extent, VkFormat image_format, VkImageLayout layout);
    // Both take the letterbox's LetterboxDesc and make the ops of a source.
    SourceOps make_source_ops(ops::LetterboxDesc ld) const;
    // With a profiler, one scope per stage, named prefix + stage.
    void record(gpu::CommandBuffer& cmd, const gpu::Tensor& source, DetectionBuffer& out,
                gpu::Profiler* profiler = nullptr, const std::string& prefix = {});
    // The stages after `letterbox` (which records the source's letterbox into model_in).
    void record_stages(gpu::CommandBuffer& cmd, SourceOps& ops, const std::function<void()>& letterbox,
                       DetectionBuffer& out, gpu::Profiler* profiler, const std::string& prefix);
    std::vector<Detection> read(const DetectionBuffer& out) const;
    DetectionBuffer make_output() const;
};

void Detector::Impl::load() {
    if (!(desc.score_threshold >= 0.f && desc.score_threshold < 1.f))
        invalid("score threshold " + std::to_string(desc.score_threshold) + " is outside [0, 1)");
    if (!(desc.iou_threshold >= 0.f && desc.iou_threshold <= 1.f))
        invalid("IoU threshold " + std::to_string(desc.iou_threshold) + " is outside [0, 1]");
    if (desc.max_detections < 1 || desc.max_detections > 10000)
        invalid("max detections " + std::to_string(desc.max_detections) + " is outside 1..10000");
    path = resolve_model(desc.model);
    if (!std::filesystem::exists(path)) {
        if (desc.model == "nanodet")
            invalid(path.string() +
                    ": NanoDet is not in the model cache (run tools/fetch-models, or set VKML_MODELS)");
        invalid(path.string() + ": no such model file");
    }
    const graph::Graph g = import::load_model(path);

    // The image input: the first non-constant graph input, [N, 3, H, W] with free N, H, W fixed.
    const graph::Value* input = nullptr;
    for (graph::ValueId id : g.inputs())
        if (!g.value(id).is_constant()) {
            input = &g.value(id);
            break;
        }
    if (!input) invalid(path.string() + ": the model has no input");
    SessionOptions options;
    options.fp32 = desc.fp32;
    // The letterbox writes the input and the decoder reads the outputs in the session's storage:
    // no conversion steps at its edges (seven dispatches for NanoDet in f16).
    options.storage_io = true;
    if (input->shape && input->shape->rank() == 4) {
        const auto& dims = input->shape->dims();
        const int64_t w = desc.input_width ? desc.input_width : 640,
                      h = desc.input_height ? desc.input_height : 640;
        if (!dims[0].is_known() || !dims[2].is_known() || !dims[3].is_known())
            options.input_shapes[input->name] = {1, dims[1].is_known() ? dims[1].size : 3,
                                                 dims[2].is_known() ? dims[2].size : h,
                                                 dims[3].is_known() ? dims[3].size : w};
    }
    session = std::make_unique<Session>(device, g, options);
    const TensorInfo& in = session->inputs()[0];
    if (session->inputs().size() != 1 || in.shape.rank() != 4 || in.shape[0] != 1 || in.shape[1] != 3)
        invalid(path.string() + ": expected one image input [1, 3, H, W], the model has " +
                std::to_string(session->inputs().size()) + " inputs, the first " + shape_text(in.shape));
    if (in.storage != gpu::DType::f32 && in.storage != gpu::DType::f16)
        invalid(path.string() + ": the image input is not a float tensor");
    in_h = uint32_t(in.shape[2]);
    in_w = uint32_t(in.shape[3]);
    model_in = gpu::Tensor(device, in.shape, in.storage, "detector input");
    for (const TensorInfo& o : session->outputs()) model_out.emplace_back(device, o.shape, o.storage, o.name);

    names.assign(coco_names.begin(), coco_names.end());
    if (!desc.class_names.empty()) names = desc.class_names;
    choose_format();

    const auto& c = candidates.shape();
    nms = ops::NonMaxSuppression::create(device, {.boxes = {nms_boxes.shape(), gpu::DType::f32},
                                                  .scores = {scores.shape(), gpu::DType::f32},
                                                  .max_output_boxes_per_class = desc.max_detections,
                                                  .iou_threshold = desc.iou_threshold,
                                                  .score_threshold = desc.score_threshold,
                                                  .center_point_box = 0,
                                                  .index_dtype = gpu::DType::i32});
    (void)c;
    selected = gpu::Tensor(device, nms->outputs()[0].shape, gpu::DType::i32, "detector selection");
    count = gpu::Tensor(device, {1}, gpu::DType::i32, "detector count");
    nms_scratch = std::make_unique<gpu::Buffer>(
        device, gpu::BufferDesc{.size = std::max<uint64_t>(nms->scratch_bytes(), 16),
                                .name = "detector nms scratch"});
}

void Detector::Impl::choose_format() {
    const auto& outs = session->outputs();
    DetectorFormat f = desc.format;
    std::string shapes;
    for (const auto& o : outs) shapes += (shapes.empty() ? "" : ", ") + shape_text(o.shape);
    if (f == DetectorFormat::Auto) {
        if (outs.size() == 6) {
            f = DetectorFormat::NanoDet;
        } else if (outs.size() == 1 && outs[0].shape.rank() == 3) {
            const auto& s = outs[0].shape;
            f = s[1] > s[2] ? DetectorFormat::YoloV5 : DetectorFormat::YoloV8;
        } else {
            invalid(path.string() + ": cannot tell the output format from the outputs " + shapes +
                    " (give --format yolov5, yolov8 or nanodet)");
        }
    }
    format = f;
    const float class_offset = 4.f * float(std::max(in_w, in_h));
    if (f == DetectorFormat::YoloV5 || f == DetectorFormat::YoloV8) {
        // The output with the boxes: the first rank-3 one (exports may add auxiliary outputs).
        size_t k = outs.size();
        for (size_t i = 0; i < outs.size() && k == outs.size(); ++i)
            if (outs[i].shape.rank() == 3) k = i;
        if (k == outs.size())
            invalid(path.string() + ": no [1, N, 5 + C] or [1, 4 + C, N] output among " + shapes);
        const bool v8 = f == DetectorFormat::YoloV8;
        const auto& s = outs[k].shape;
        const int64_t classes = v8 ? s[1] - 4 : s[2] - 5;
        if (s[0] != 1 || classes < 1)
            invalid(path.string() + ": output " + shape_text(s) + " is not " +
                    (v8 ? "YOLOv8's [1, 4 + C, N]" : "YOLOv5's [1, N, 5 + C]"));
        auto op = ops::YoloDecode::create(device, {.input = {s, outs[k].storage},
                                                   .format = v8 ? ops::YoloFormat::V8 : ops::YoloFormat::V5,
                                                   .class_offset = class_offset});
        decode_in = {model_out[k]};
        decode = std::move(op);
    } else {
        // NanoDet: score heads [1, cells, C] and distribution heads [1, cells, 4 * bins], levels
        // told apart by their cell counts, strides from the cells a level of the input has.
        std::vector<size_t> score_i, box_i;
        int64_t classes = -1;
        for (size_t i = 0; i < outs.size(); ++i) {
            const auto& s = outs[i].shape;
            if (s.rank() != 3 || s[0] != 1)
                invalid(path.string() + ": NanoDet outputs must be [1, cells, n]: " + shapes);
            (s[2] % 4 == 0 && s[2] != int64_t(names.size()) ? box_i : score_i).push_back(i);
            if (s[2] == int64_t(names.size())) classes = s[2];
        }
        if (score_i.size() != box_i.size() || score_i.empty() || classes < 0)
            invalid(path.string() + ": outputs " + shapes +
                    " are not NanoDet's per-stride scores [1, cells, " + std::to_string(names.size()) +
                    "] and boxes [1, cells, 4 * bins]");
        auto by_cells = [&](size_t a, size_t b) { return outs[a].shape[1] > outs[b].shape[1]; };
        std::sort(score_i.begin(), score_i.end(), by_cells);
        std::sort(box_i.begin(), box_i.end(), by_cells);
        ops::NanoDetDecodeDesc d{.width = in_w,
                                 .height = in_h,
                                 .center_offset = desc.nanodet_center_offset,
                                 .class_offset = class_offset};
        d.strides.clear();
        for (size_t l = 0; l < score_i.size(); ++l) {
            const int64_t cells = outs[score_i[l]].shape[1];
            uint32_t stride = 0;
            for (uint32_t s = 4; s <= 128 && !stride; s *= 2)
                if (int64_t((in_w + s - 1) / s) * ((in_h + s - 1) / s) == cells) stride = s;
            if (!stride)
                invalid(path.string() + ": a NanoDet head of " + std::to_string(cells) +
                        " cells matches no stride of a " + std::to_string(in_w) + "x" + std::to_string(in_h) +
                        " input");
            d.strides.push_back(stride);
            d.scores.push_back({outs[score_i[l]].shape, outs[score_i[l]].storage});
            d.boxes.push_back({outs[box_i[l]].shape, outs[box_i[l]].storage});
        }
        decode = ops::NanoDetDecode::create(device, d);
        for (size_t i : score_i) decode_in.push_back(model_out[i]);
        for (size_t i : box_i) decode_in.push_back(model_out[i]);
    }
    const auto& o = decode->outputs();
    candidates = gpu::Tensor(device, o[0].shape, o[0].dtype, "detector candidates");
    nms_boxes = gpu::Tensor(device, o[1].shape, o[1].dtype, "detector nms boxes");
    scores = gpu::Tensor(device, o[2].shape, o[2].dtype, "detector scores");
}

Detector::Impl::SourceOps Detector::Impl::make_source_ops(ops::LetterboxDesc ld) const {
    SourceOps ops;
    ld.width = in_w;
    ld.height = in_h;
    ld.dtype = model_in.dtype();
    if (desc.normalization == DetectorNormalization::ImageNetBgr) {
        // NanoDet's training pipeline: BGR bytes, (x - mean) / std per channel.
        ld.order = ops::ChannelOrder::BGR;
        ld.transform = {{255.f}, {103.53f, 116.28f, 123.675f}, {57.375f, 57.12f, 58.395f}};
    }
    ops.letterbox = ops::Letterbox::create(device, ld);
    ops::GatherDetectionsDesc g{.candidates = {candidates.shape(), gpu::DType::f32},
                                .selected_indices = {selected.shape(), gpu::DType::i32}};
    ops::set_mapping(g, ops.letterbox->geometry());
    ops.gather = ops::GatherDetections::create(device, g);
    return ops;
}

Detector::Impl::SourceOps& Detector::Impl::source_ops(const gpu::Tensor& source) {
    const std::string key = shape_text(source.shape()) + gpu::dtype_name(source.dtype());
    auto it = sources.find(key);
    if (it != sources.end()) return it->second;
    return sources.emplace(key, make_source_ops({.input = {source.shape(), source.dtype()}})).first->second;
}

Detector::Impl::SourceOps& Detector::Impl::image_ops(VkExtent2D extent, VkFormat image_format,
                                                     VkImageLayout layout) {
    const std::string key = std::to_string(extent.width) + "x" + std::to_string(extent.height) + "/" +
                            std::to_string(int(image_format)) + "/" + std::to_string(int(layout));
    auto it = image_sources.find(key);
    if (it != image_sources.end()) return it->second;
    return image_sources
        .emplace(key, make_source_ops(
                          {.image = ops::LetterboxImage{extent.width, extent.height, image_format, layout}}))
        .first->second;
}

DetectionBuffer Detector::Impl::make_output() const {
    DetectionBuffer out;
    const uint64_t align = std::max<uint64_t>(16, device.caps().min_storage_buffer_offset_alignment);
    const uint64_t det_bytes = uint64_t(desc.max_detections) * 6 * 4;
    const uint64_t count_at = align_up(det_bytes, align);
    out.buffer = std::make_shared<gpu::Buffer>(
        device, gpu::BufferDesc{.size = count_at + 16,
                                .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                         VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                .memory = gpu::MemoryUsage::Readback,
                                .name = "detections"});
    std::memset(out.buffer->mapped(), 0, out.buffer->size());
    out.detections = gpu::Tensor(out.buffer, 0, {int64_t(desc.max_detections), 6}, gpu::DType::f32);
    out.count = gpu::Tensor(out.buffer, count_at, {1}, gpu::DType::i32);
    return out;
}

void Detector::Impl::record(gpu::CommandBuffer& cmd, const gpu::Tensor& source, DetectionBuffer& out,
                            gpu::Profiler* profiler, const std::string& prefix) {
    SourceOps& ops = source_ops(source);
    record_stages(
        cmd, ops, [&] { ops.letterbox->record(cmd, std::span(&source, 1), std::span(&model_in, 1)); }, out,
        profiler, prefix);
}

void Detector::Impl::record_stages(gpu::CommandBuffer& cmd, SourceOps& ops,
                                   const std::function<void()>& letterbox, DetectionBuffer& out,
                                   gpu::Profiler* profiler, const std::string& prefix) {
    auto stage = [&](const char* name, auto&& body) { timed(profiler, cmd, prefix, name, body); };
    if (!out.buffer || out.detections.shape()[0] != int64_t(desc.max_detections))
        invalid("the detection buffer was not made by this detector's make_output()");
    const auto& g = ops.letterbox->geometry();
    out.width = g.src_width;
    out.height = g.src_height;
    // Earlier records on this queue are done with the shared intermediate tensors.
    gpu::barrier::compute_to_compute(cmd);
    stage("letterbox", letterbox);
    gpu::barrier::compute_to_compute(cmd);
    stage("model", [&] { session->record(cmd, Bindings{std::span(&model_in, 1), model_out}); });
    gpu::barrier::compute_to_compute(cmd);
    const gpu::Tensor decoded[] = {candidates, nms_boxes, scores};
    stage("decode", [&] { decode->record(cmd, decode_in, decoded); });
    gpu::barrier::compute_to_compute(cmd);
    const gpu::Tensor nms_in[] = {nms_boxes, scores};
    const gpu::Tensor nms_out[] = {selected, count};
    stage("nms", [&] { nms->record(cmd, nms_in, nms_out, nms_scratch->range()); });
    gpu::barrier::compute_to_compute(cmd);
    const gpu::Tensor gather_in[] = {candidates, selected, count};
    const gpu::Tensor gather_out[] = {out.detections, out.count};
    stage("gather", [&] { ops.gather->record(cmd, gather_in, gather_out); });
    gpu::barrier::to_host(cmd);
}

std::vector<Detection> Detector::Impl::read(const DetectionBuffer& out) const {
    std::vector<Detection> dets;
    if (!out.buffer) return dets;
    const std::byte* base = out.buffer->mapped();
    int32_t n = 0;
    std::memcpy(&n, base + out.count.byte_offset(), 4);
    n = std::clamp<int32_t>(n, 0, int32_t(desc.max_detections));
    const float* rows = reinterpret_cast<const float*>(base + out.detections.byte_offset());
    for (int32_t i = 0; i < n; ++i) {
        const float* r = rows + size_t(i) * 6;
        Detection d;
        d.class_id = int(std::lround(r[5]));
        d.name = d.class_id >= 0 && size_t(d.class_id) < names.size() ? names[size_t(d.class_id)]
                                                                      : "class " + std::to_string(d.class_id);
        d.score = r[4];
        d.x0 = std::min(r[0], r[2]);
        d.x1 = std::max(r[0], r[2]);
        d.y0 = std::min(r[1], r[3]);
        d.y1 = std::max(r[1], r[3]);
        dets.push_back(std::move(d));
    }
    return dets;
}

// ---------------------------------------------------------------------------------------------

Detector::Detector(gpu::Device& device, const DetectorDesc& desc)
    : impl_(std::make_unique<Impl>(device, desc)) {
    impl_->load();
}

Detector::~Detector() = default;

DetectorFormat Detector::format() const {
    return impl_->format;
}
uint32_t Detector::input_width() const {
    return impl_->in_w;
}
uint32_t Detector::input_height() const {
    return impl_->in_h;
}
const std::filesystem::path& Detector::model_path() const {
    return impl_->path;
}
const DetectorDesc& Detector::desc() const {
    return impl_->desc;
}

std::string Detector::describe() const {
    std::ostringstream s;
    s << impl_->path.string() << ": " << format_name(impl_->format) << ", input " << impl_->in_w << "x"
      << impl_->in_h << " " << gpu::dtype_name(impl_->model_in.dtype()) << ", "
      << impl_->candidates.shape()[1] << " candidate boxes, score > " << impl_->desc.score_threshold
      << ", IoU > " << impl_->desc.iou_threshold << " suppresses, at most " << impl_->desc.max_detections;
    return s.str();
}

DetectionBuffer Detector::make_output() const {
    return impl_->make_output();
}

void Detector::record(gpu::CommandBuffer& cmd, const gpu::Tensor& source, DetectionBuffer& out,
                      gpu::Profiler* profiler) {
    impl_->record(cmd, source, out, profiler);
}

std::vector<Detection> Detector::read(const DetectionBuffer& out) const {
    return impl_->read(out);
}

std::vector<Detection> Detector::detect(const gpu::Tensor& source, gpu::Profiler* profiler) {
    DetectionBuffer out = impl_->make_output();
    impl_->device.run_now(gpu::QueueRole::Compute, [&](gpu::CommandBuffer& cmd) {
        if (profiler) profiler->reset(cmd);
        impl_->record(cmd, source, out, profiler);
    });
    return impl_->read(out);
}

std::vector<Detection> Detector::detect(const HostImage& image, gpu::Profiler* profiler) {
    if (!image.pixels || !image.width || !image.height) invalid("empty image");
    if (image.channels != 3 && image.channels != 4)
        invalid("images need 3 or 4 channels, this one has " + std::to_string(image.channels));
    const uint64_t row = uint64_t(image.width) * image.channels;
    const uint64_t stride = image.stride_bytes ? image.stride_bytes : row;
    const uint64_t bytes = row * image.height;
    // The letterbox kernel reads whole words: the buffer is rounded up to 4 bytes.
    auto buffer = std::make_shared<gpu::Buffer>(
        impl_->device, gpu::BufferDesc{.size = align_up(bytes, 4), .name = "detector source pixels"});
    std::vector<std::byte> packed(align_up(bytes, 4));
    for (uint32_t y = 0; y < image.height; ++y)
        std::memcpy(packed.data() + y * row, image.pixels + y * stride, row);
    gpu::upload(impl_->device, buffer->range(), packed);
    const gpu::Tensor source(
        buffer, 0, {1, int64_t(image.height), int64_t(image.width), int64_t(image.channels)}, gpu::DType::u8);
    return detect(source, profiler);
}

// ---------------------------------------------------------------------------------------------

uint64_t Detector::output_bytes() const {
    return 16 + uint64_t(impl_->desc.max_detections) * 6 * 4;
}

fg::BufferHandle Detector::add_pass(fg::FrameGraph& graph, fg::ImageHandle image,
                                    const DetectorPassDesc& desc, fg::BufferHandle output) {
    fg::PassBuilder pass = graph.add_ml_pass(desc.name);
    pass.read(image, fg::ImageRead::Sampled);
    pass.queue(desc.queue);
    pass.side_effect();
    fg::BufferHandle written;
    if (output) written = pass.write(output, fg::BufferWrite::TransferDst, VK_PIPELINE_STAGE_2_TRANSFER_BIT);
    Impl* impl = impl_.get();
    const std::string prefix = desc.name + "/";
    const bool stages = desc.stage_timestamps;
    pass.record([impl, image, output, prefix, stages](fg::PassContext& ctx) {
        gpu::CommandBuffer& cmd = ctx.cmd();
        const VkExtent2D e = ctx.extent(image);
        const VkFormat f = ctx.format(image);
        const VkImageLayout layout = ctx.layout(image);
        Impl::SourceOps& ops = impl->image_ops(e, f, layout);
        const uint32_t slot = ctx.frame_slot();
        while (impl->slots.size() <= slot) {
            impl->slots.push_back(impl->make_output());
            impl->slot_frames.push_back(UINT64_MAX);
        }
        gpu::Profiler* profiler = stages ? ctx.profiler() : nullptr;
        DetectionBuffer& out = impl->slots[slot];
        // The letterbox reads the frame image itself: no full-size tensor of the frame.
        impl->record_stages(
            cmd, ops,
            [&] {
                ops.letterbox->record(cmd, ops::ImageRef(ctx.view(image), f, e.width, e.height),
                                      impl->model_in);
            },
            out, profiler, prefix);
        impl->slot_frames[slot] = ctx.frame_index();
        if (output) {
            gpu::barrier::compute_to_transfer(cmd);
            const gpu::BufferRange dst = ctx.buffer(output);
            const gpu::BufferRange count = out.count.range(), dets = out.detections.range();
            cmd.copy(count, {dst.buffer, dst.offset, 4}, 4);
            cmd.copy(dets, {dst.buffer, dst.offset + 16, out.detections.bytes()}, out.detections.bytes());
        }
    });
    return written;
}

std::vector<Detection> Detector::results(uint32_t frame_slot) const {
    if (frame_slot >= impl_->slots.size()) return {};
    return impl_->read(impl_->slots[frame_slot]);
}

uint64_t Detector::results_frame(uint32_t frame_slot) const {
    return frame_slot < impl_->slot_frames.size() ? impl_->slot_frames[frame_slot] : UINT64_MAX;
}

} // namespace vkml::passes
