// vkml.Upscaler / vkml.upscale (images as NumPy arrays) and vkml.upscale_video (files), on the
// code `vkml upscale` runs: its model names and RGB 0..1 wrapping (vkml_cli: resolve_model,
// load_rgb01_graph, ModelProcessor), vkml::TiledRunner and media::transcode.

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>

#include "common.hpp"
#include "vkml/media/transcode.hpp"
#include "upscale_model.hpp"
#include "vkml/error.hpp"
#include "vkml/gpu/half.hpp"
#include "vkml/graph/tiled.hpp"

namespace vkml::python {

namespace {

tool::ModelChoice model_choice(const std::string& model, int scale, bool fp32, int tile) {
    if (scale < 1) throw py::value_error("scale must be at least 1, not " + std::to_string(scale));
    if (tile < 0) throw py::value_error("tile must be 0 (automatic) or a size in pixels, not " + std::to_string(tile));
    tool::ModelChoice c;
    c.name = model;
    c.scale = scale;
    c.fp32 = fp32;
    c.tile = tile;
    return c;
}

// The pixel types an image array may have; each comes back in its own type (bit depth kept).
enum class Pixel { u8, u16, f16, f32 };

Pixel pixel_kind(const py::dtype& d) {
    if (d.equal(py::dtype("uint8"))) return Pixel::u8;
    if (d.equal(py::dtype("uint16"))) return Pixel::u16;
    if (d.equal(py::dtype("float16"))) return Pixel::f16;
    if (d.equal(py::dtype("float32"))) return Pixel::f32;
    throw py::type_error("vkml.upscale: the image is " + text(d) +
                         "; it must be uint8 (0..255), uint16 (0..65535), float16 or float32 (0..1), and the "
                         "result has the same dtype (convert others, e.g. image.astype(numpy.float32))");
}

class Upscaler {
public:
    Upscaler(const std::string& model, int scale, bool fp32, int tile, const py::object& device)
        : choice_(model_choice(model, scale, fp32, tile)) {
        device_ = device_for(device);
        py::gil_scoped_release nogil;
        resolved_ = tool::resolve_model(choice_);
        graph_ = tool::load_rgb01_graph(resolved_);
        SessionOptions so;
        so.fp32 = fp32;
        runner_ = std::make_unique<TiledRunner>(*device_, graph_, TiledDesc{.tile = tile, .session = so});
    }

    py::array call(const py::array& image) {
        BusyGuard busy(busy_, "this vkml.Upscaler");
        const Pixel kind = pixel_kind(image.dtype());
        if (image.ndim() != 3 || image.shape(2) != 3 || image.shape(0) < 1 || image.shape(1) < 1)
            throw py::value_error("vkml.upscale: the image must be an RGB array of shape (height, width, 3), not " +
                                  shape_text(std::vector<int64_t>(image.shape(), image.shape() + image.ndim())));
        const int64_t h = image.shape(0), w = image.shape(1), plane = h * w;
        // HWC in the image's range -> NCHW 0..1 floats (then the graph input's dtype).
        std::vector<float> planar(static_cast<size_t>(plane * 3));
        auto gather = [&]<typename T>(auto to_unit) {
            const auto px = image.unchecked<T, 3>();
            for (int64_t y = 0; y < h; ++y)
                for (int64_t x = 0; x < w; ++x)
                    for (int64_t c = 0; c < 3; ++c) planar[size_t(c * plane + y * w + x)] = to_unit(px(y, x, c));
        };
        switch (kind) {
        case Pixel::u8:
            gather.operator()<uint8_t>([](uint8_t v) { return v / 255.f; });
            break;
        case Pixel::u16:
            gather.operator()<uint16_t>([](uint16_t v) { return v / 65535.f; });
            break;
        case Pixel::f16:
            gather.operator()<uint16_t>([](uint16_t v) { return gpu::half_to_float(v); });
            break;
        case Pixel::f32:
            gather.operator()<float>([](float v) { return v; });
            break;
        }
        std::vector<float> out;
        int64_t oh = 0, ow = 0;
        {
            py::gil_scoped_release nogil;
            const std::vector<int64_t> dims{1, 3, h, w};
            graph::TensorData input = graph::TensorData::from_floats(dims, planar);
            if (graph_.value(graph_.inputs()[0]).dtype == graph::DType::f16) {
                std::vector<uint16_t> halves(planar.size());
                gpu::floats_to_halves(planar, halves);
                input = graph::TensorData::from_halves(dims, halves);
            }
            const TilePlan& plan = runner_->prepare(h, w);
            const gpu::Shape os = runner_->output_shape();
            if (plan.scale != resolved_.scale || os[1] != 3 || runner_->input_shape()[1] != 3)
                throw Error(ErrorCode::InvalidArgument, "'" + resolved_.path.string() + "' turns a " +
                                                            std::to_string(w) + "x" + std::to_string(h) +
                                                            " RGB image into " + os.str() + ", not a " +
                                                            std::to_string(resolved_.scale) + "x RGB image (check scale)");
            out = runner_->run(input).to_floats();
            oh = os[2];
            ow = os[3];
        }
        const int64_t oplane = oh * ow;
        // Back in the image's dtype: integers rounded and clamped to their range, floats as the model gave them.
        auto scatter = [&]<typename T>(auto from_unit) {
            py::array_t<T> result({oh, ow, int64_t{3}});
            auto px = result.template mutable_unchecked<3>();
            for (int64_t y = 0; y < oh; ++y)
                for (int64_t x = 0; x < ow; ++x)
                    for (int64_t c = 0; c < 3; ++c) px(y, x, c) = from_unit(out[size_t(c * oplane + y * ow + x)]);
            return py::array(result);
        };
        switch (kind) {
        case Pixel::u8:
            return scatter.operator()<uint8_t>(
                [](float v) { return static_cast<uint8_t>(std::lround(std::clamp(v, 0.f, 1.f) * 255.f)); });
        case Pixel::u16:
            return scatter.operator()<uint16_t>(
                [](float v) { return static_cast<uint16_t>(std::lround(std::clamp(v, 0.f, 1.f) * 65535.f)); });
        case Pixel::f16: {
            py::array result = scatter.operator()<uint16_t>([](float v) { return gpu::float_to_half(v); });
            return result.attr("view")(py::dtype("float16")).cast<py::array>();
        }
        case Pixel::f32:
            break;
        }
        return scatter.operator()<float>([](float v) { return v; });
    }

    const std::string& label() const { return resolved_.label; }
    int scale() const { return resolved_.scale; }
    std::string path() const { return resolved_.path.string(); }

private:
    tool::ModelChoice choice_;
    std::shared_ptr<gpu::Device> device_;
    tool::ResolvedModel resolved_;
    graph::Graph graph_;
    std::unique_ptr<TiledRunner> runner_;
    std::atomic<bool> busy_{false};
};

py::dict progress_dict(const media::Progress& p) {
    py::dict d;
    d["frames_done"] = p.frames_done;
    d["frames_total"] = p.frames_total;
    d["seconds"] = p.seconds;
    d["fps"] = p.fps;
    d["output_bytes"] = p.output_bytes;
    d["frame_progress"] = p.frame_progress;
    return d;
}

py::dict upscale_video(const py::object& input, const py::object& output, const std::string& model, int scale,
                       bool fp32, int tile, const std::optional<std::string>& codec, std::optional<int> crf,
                       const std::optional<std::string>& preset, const std::optional<std::string>& pix_fmt,
                       const std::map<std::string, std::string>& encoder_options, int64_t frames,
                       const std::optional<std::string>& threads, const py::object& progress, bool keep_partial,
                       bool tolerate_errors, const py::object& device) {
    if (!progress.is_none() && !PyCallable_Check(progress.ptr()))
        throw py::type_error("progress must be a callable taking a dict, or None");
    if (frames < 0) throw py::value_error("frames must be 0 (all) or a positive count");
    media::TranscodeDesc desc;
    desc.input = path_text(input);
    desc.output = path_text(output);
    desc.codec = codec.value_or("");
    desc.crf = crf.value_or(-1);
    desc.preset = preset.value_or("");
    desc.pix_fmt = pix_fmt.value_or("");
    desc.encoder_options.assign(encoder_options.begin(), encoder_options.end());
    if (threads) desc.threads = media::parse_thread_counts(*threads);
    desc.tile = tile;
    desc.max_frames = frames;
    desc.quiet = true;
    desc.no_partial = !keep_partial;
    desc.tolerate_errors = tolerate_errors;
    desc.tolerate_hint = " (tolerate_errors=True goes on with what can be read)";
    desc.handle_signals = false; // Ctrl-C stays Python's: KeyboardInterrupt, seen in the progress hook
    desc.log_name = "vkml.upscale_video";
    std::atomic<bool> cancel{false};
    desc.cancel = &cancel;
    std::exception_ptr raised; // from the progress callback or a signal, raised once transcode returns
    desc.on_progress = [&](const media::Progress& p) {
        py::gil_scoped_acquire gil;
        if (raised) return;
        try {
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            if (!progress.is_none()) progress(progress_dict(p));
        } catch (...) {
            raised = std::current_exception();
            cancel = true;
        }
    };
    const std::shared_ptr<gpu::Device> dev = device_for(device);
    desc.device = dev.get();
    tool::ModelProcessor processor(model_choice(model, scale, fp32, tile));
    media::TranscodeStats st;
    {
        py::gil_scoped_release nogil;
        st = media::transcode(desc, processor);
    }
    if (raised) std::rethrow_exception(raised);
    if (!progress.is_none())
        progress(progress_dict({st.frames, st.frames, st.seconds, st.fps, st.output_bytes, 0}));
    py::dict d;
    d["frames"] = st.frames;
    d["seconds"] = st.seconds;
    d["fps"] = st.fps;
    d["output"] = st.output.string();
    d["input_size"] = py::make_tuple(st.input_size.width, st.input_size.height);
    d["output_size"] = py::make_tuple(st.output_size.width, st.output_size.height);
    d["output_bytes"] = st.output_bytes;
    d["cancelled"] = st.cancelled;
    d["model"] = processor.name();
    py::dict stages;
    for (const media::StageStats& s : st.stages) stages[py::str(s.name)] = s.fps;
    d["stage_fps"] = stages;
    d["summary"] = st.summary();
    return d;
}

} // namespace

void register_upscale(py::module_& m) {
    py::class_<Upscaler>(m, "Upscaler", R"(A super-resolution model for images held as NumPy arrays.

    up = vkml.Upscaler("anime4k-m")        # or esrgan-slim|medium|thick (scale 2, 3, 4, 8), a model file
    big = up(image)                         # (H, W, 3) RGB -> (2H, 2W, 3), same dtype

Large images go through overlapping tiles sized from the device's memory (tile= overrides).
Built-in models come from the model cache (VKML_MODELS, else ~/.cache/vkml/models). The image
is uint8 (0..255), uint16 (0..65535, e.g. a 16-bit PNG), float16 or float32 (0..1); the result
has the same dtype: integers are rounded and clamped, floats are the model's values (about 0..1).
Other dtypes raise TypeError.
An upscaler serves one thread at a time; the GIL is released while the GPU works.)")
        .def(py::init<const std::string&, int, bool, int, const py::object&>(), py::arg("model") = "anime4k-m",
             py::kw_only(), py::arg("scale") = 2, py::arg("fp32") = false, py::arg("tile") = 0,
             py::arg("device") = py::none())
        .def("__call__", &Upscaler::call, py::arg("image"))
        .def_property_readonly("model", &Upscaler::label)
        .def_property_readonly("model_path", &Upscaler::path)
        .def_property_readonly("scale", &Upscaler::scale)
        .def("__repr__", [](const Upscaler& u) { return "<vkml.Upscaler " + u.label() + ">"; });

    m.def("upscale_video", &upscale_video, py::arg("input"), py::arg("output"), py::kw_only(),
          py::arg("model") = "anime4k-m", py::arg("scale") = 2, py::arg("fp32") = false, py::arg("tile") = 0,
          py::arg("codec") = py::none(), py::arg("crf") = py::none(), py::arg("preset") = py::none(),
          py::arg("pix_fmt") = py::none(), py::arg("encoder_options") = std::map<std::string, std::string>{},
          py::arg("frames") = 0, py::arg("threads") = py::none(), py::arg("progress") = py::none(),
          py::arg("keep_partial") = true, py::arg("tolerate_errors") = false, py::arg("device") = py::none(),
          R"(Upscales a video (anything FFmpeg decodes), an image file or a folder of images, as `vkml upscale`
does: audio and subtitles copied, timestamps, metadata and rotation kept. Returns the run's
statistics as a dict. progress(dict) is called about 4 times a second and once at the end, with
frames_done, frames_total, seconds, fps, output_bytes; an exception it raises, or Ctrl-C, stops
the run (the partial output is kept, playable, unless keep_partial=False) and is raised. Damaged
or truncated input raises vkml.InvalidArgument naming the file, unless tolerate_errors=True
(then a warning on stderr and on with what can be read). The output's codec family, pixel
format, bit depth and alpha follow the input's, as in `vkml upscale`.)");
}

} // namespace vkml::python
