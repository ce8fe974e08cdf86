// passes::Overlay (overlay.hpp): the items are kept on the CPU in the caller's coordinates; at
// record time they are clipped to the target, binned into 16x16 tiles and written, with the list
// of touched tiles, into the frame slot's host-visible buffer; shaders/overlay/blend.comp runs one
// workgroup per touched tile.
// Its pipelines are the core's (set 0: the storage image, the font buffer, the frame's data
// buffer), and so are its descriptors: pushed, or pooled sets of the command buffer's arena
// (the executor's per-slot arena when recording into the host's command buffer).
#include "vkml/passes/overlay.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "vkml/error.hpp"
#include "vkml/gpu/buffer.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/gpu/transfer.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::passes {
namespace {

constexpr int tile_size = 16;            // the shader's workgroup is one tile
constexpr uint32_t item_words = 12;      // blend.comp's item layout
constexpr uint32_t max_groups_x = 65535; // the smallest maxComputeWorkGroupCount[0] Vulkan allows

enum class Kind : uint32_t { Fill = 0, Rect = 1, Text = 2 };

// An item as queued, in the caller's coordinates (normalized boxes; text: one line per item).
struct Item {
    Kind kind = Kind::Fill;
    int64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    int64_t thickness = 0;    // Rect
    uint32_t scale = 1;       // Text
    uint32_t first_glyph = 0; // Text: index into Impl::glyphs
    Rgba color;
};

uint32_t pack(Rgba c) {
    return uint32_t(c.r) | uint32_t(c.g) << 8 | uint32_t(c.b) << 16 | uint32_t(c.a) << 24;
}

int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
    return std::min(std::max(v, lo), hi);
}

} // namespace

struct Overlay::Impl {
    struct Use {
        gpu::Buffer buffer;
    };
    struct Slot {
        uint64_t frame = ~0ull;
        size_t next = 0; // uses taken in this frame (the overlay may be added to a graph twice)
        std::vector<std::unique_ptr<Use>> uses;
    };

    gpu::Device& device;
    std::vector<Item> items;
    std::vector<uint8_t> glyphs; // glyph indices of the text items, in order
    gpu::Buffer font;
    std::vector<Slot> slots;
    // Scratch reused between frames so recording allocates nothing once warm.
    std::vector<uint32_t> words, tile_counts, touched;
    // Item boxes in tiles, kept for the second binning pass.
    struct Span {
        size_t tx0, ty0, tx1, ty1;  // inclusive
        int64_t ix0, iy0, ix1, iy1; // rect: the hollow middle (tiles fully inside it are skipped)
        bool hollow;
    };
    std::vector<Span> spans;

    Impl(gpu::Device& dev, uint32_t frames_in_flight);
    const gpu::Pipeline& pipeline(VkFormat format, const std::string& pass, const std::string& image);
    Use& take_use(uint32_t slot, uint64_t frame);
    void record(fg::PassContext& ctx, fg::ImageHandle target);
};

Overlay::Impl::Impl(gpu::Device& dev, uint32_t frames_in_flight)
    : device(dev), slots(std::max(frames_in_flight, 1u)) {
    // The font, uploaded once: font_cell_h words per glyph.
    std::vector<uint32_t> rows(size_t(font_glyph_count) * font_cell_h);
    for (int g = 0; g < font_glyph_count; ++g)
        for (int r = 0; r < font_cell_h; ++r) rows[size_t(g * font_cell_h + r)] = font_row(g, r);
    font =
        gpu::Buffer(device, {.size = rows.size() * sizeof(uint32_t),
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .name = "overlay font"});
    gpu::upload(device, font.range(), std::as_bytes(std::span(rows)));
}

const gpu::Pipeline& Overlay::Impl::pipeline(VkFormat format, const std::string& pass,
                                             const std::string& image) {
    gpu::ShaderId shader{};
    if (format == VK_FORMAT_R8G8B8A8_UNORM) {
        shader = gpu::ShaderId::overlay_rgba8_f32;
    } else if (format == VK_FORMAT_R16G16B16A16_SFLOAT) {
        shader = gpu::ShaderId::overlay_rgba16f_f32;
    } else {
        throw Error(ErrorCode::Unsupported, "passes::Overlay: pass '" + pass + "' targets image '" + image +
                                                "' of VkFormat " + std::to_string(int(format)) +
                                                "; the overlay blends into VK_FORMAT_R8G8B8A8_UNORM or "
                                                "VK_FORMAT_R16G16B16A16_SFLOAT storage images only");
    }
    // The device's pipeline cache keeps it (created on first use, then found by its description).
    return device.pipeline({.shader = shader,
                            .binding_types = {gpu::BindingType::StorageImage, gpu::BindingType::StorageBuffer,
                                              gpu::BindingType::StorageBuffer},
                            .push_constant_bytes = 8 * sizeof(uint32_t),
                            .workgroup = {tile_size, tile_size, 1}});
}

Overlay::Impl::Use& Overlay::Impl::take_use(uint32_t slot_index, uint64_t frame) {
    // The executor records a slot only after that slot's previous frame completed, so its buffers
    // are free to rewrite; a slot beyond frames_in_flight simply gets its own.
    if (slot_index >= slots.size()) slots.resize(slot_index + 1);
    Slot& slot = slots[slot_index];
    if (slot.frame != frame) {
        slot.frame = frame;
        slot.next = 0;
    }
    if (slot.next == slot.uses.size()) slot.uses.push_back(std::make_unique<Use>());
    return *slot.uses[slot.next++];
}

void Overlay::Impl::record(fg::PassContext& ctx, fg::ImageHandle target) {
    const gpu::Pipeline& pipe = pipeline(ctx.format(target), ctx.name(), "#" + std::to_string(target.index));
    const VkExtent2D extent = ctx.extent(target);
    const int64_t w = extent.width, h = extent.height;

    // Items clipped to the image, in blend.comp's layout; invisible ones are dropped.
    words.clear();
    uint32_t n = 0;
    const size_t tiles_x = size_t((w + tile_size - 1) / tile_size),
                 tiles_y = size_t((h + tile_size - 1) / tile_size);
    tile_counts.assign(tiles_x * tiles_y, 0);
    spans.clear();
    for (const Item& it : items) {
        const int64_t x0 = std::max<int64_t>(it.x0, 0), y0 = std::max<int64_t>(it.y0, 0);
        const int64_t x1 = std::min(it.x1, w), y1 = std::min(it.y1, h);
        if (x0 >= x1 || y0 >= y1) continue;
        uint32_t word[item_words] = {uint32_t(x0),
                                     uint32_t(y0),
                                     uint32_t(x1),
                                     uint32_t(y1),
                                     0,
                                     0,
                                     0,
                                     0,
                                     pack(it.color),
                                     uint32_t(it.kind),
                                     0,
                                     0};
        Span s{size_t(x0 / tile_size),
               size_t(y0 / tile_size),
               size_t((x1 - 1) / tile_size),
               size_t((y1 - 1) / tile_size),
               0,
               0,
               0,
               0,
               false};
        if (it.kind == Kind::Rect) {
            // The inner box clamped just outside the image keeps the test exact and in 32 bits.
            s.ix0 = clamp64(it.x0 + it.thickness, -1, w + 1);
            s.iy0 = clamp64(it.y0 + it.thickness, -1, h + 1);
            s.ix1 = clamp64(it.x1 - it.thickness, -1, w + 1);
            s.iy1 = clamp64(it.y1 - it.thickness, -1, h + 1);
            s.hollow = true;
            word[4] = uint32_t(int32_t(s.ix0));
            word[5] = uint32_t(int32_t(s.iy0));
            word[6] = uint32_t(int32_t(s.ix1));
            word[7] = uint32_t(int32_t(s.iy1));
        } else if (it.kind == Kind::Text) {
            // A visible line starts less than its own box left of / above the image, so the origin
            // fits in 32 bits; the shader takes unsigned differences.
            word[4] = uint32_t(int32_t(it.x0));
            word[5] = uint32_t(int32_t(it.y0));
            word[6] = it.scale;
            word[7] = it.first_glyph;
        }
        words.insert(words.end(), std::begin(word), std::end(word));
        spans.push_back(s);
        ++n;
    }
    // Calls fn(tile) for the tiles an item touches: its box's tiles, less those that lie wholly in
    // an outline's hollow middle (a contiguous run per tile row, skipped without visiting it, so a
    // screen-sized box costs its perimeter).
    auto for_each_tile = [&](const Span& s, auto&& fn) {
        for (size_t ty = s.ty0; ty <= s.ty1; ++ty) {
            const int64_t y0 = int64_t(ty) * tile_size, y1 = std::min(y0 + tile_size, h);
            int64_t skip0 = 1, skip1 = 0; // tiles skip0..skip1 of this row are hollow
            if (s.hollow && y0 >= s.iy0 && y1 <= s.iy1) {
                skip0 = (std::max<int64_t>(s.ix0, 0) + tile_size - 1) / tile_size;
                skip1 = s.ix1 >= w ? int64_t(tiles_x) - 1 : s.ix1 / tile_size - 1;
            }
            for (size_t tx = s.tx0; tx <= s.tx1; ++tx) {
                if (int64_t(tx) >= skip0 && int64_t(tx) <= skip1) {
                    tx = size_t(skip1);
                    continue;
                }
                fn(ty * tiles_x + tx);
            }
        }
    };
    for (const Span& s : spans) for_each_tile(s, [&](size_t t) { ++tile_counts[t]; });

    // Glyph indices, 4 to a word.
    const uint32_t chars_base = uint32_t(words.size());
    words.resize(words.size() + (glyphs.size() + 3) / 4, 0);
    for (size_t i = 0; i < glyphs.size(); ++i)
        words[chars_base + i / 4] |= uint32_t(glyphs[i]) << (i % 4 * 8);

    // Touched tiles in row order with their list starts (plus a sentinel), then the lists.
    touched.clear();
    for (size_t t = 0; t < tile_counts.size(); ++t)
        if (tile_counts[t]) touched.push_back(uint32_t(t));
    const uint32_t tile_count = uint32_t(touched.size());
    if (tile_count == 0) return; // nothing visible
    const uint32_t tiles_base = uint32_t(words.size());
    uint32_t list = tiles_base + 2 * (tile_count + 1);
    words.resize(list, 0);
    for (uint32_t i = 0; i < tile_count; ++i) {
        const uint32_t t = touched[i];
        words[tiles_base + 2 * i] = uint32_t(t % tiles_x) | uint32_t(t / tiles_x) << 16;
        words[tiles_base + 2 * i + 1] = list;
        const uint32_t count = tile_counts[t];
        tile_counts[t] = list; // from here on: the tile's write cursor
        list += count;
    }
    words[tiles_base + 2 * tile_count] = 0;
    words[tiles_base + 2 * tile_count + 1] = list;
    words.resize(list, 0);
    for (uint32_t k = 0; k < n; ++k) {
        for_each_tile(spans[k], [&](size_t t) { words[tile_counts[t]++] = k; });
    }

    // The frame slot's buffer (grown when needed; its previous frame is complete).
    Use& use = take_use(ctx.frame_slot(), ctx.frame_index());
    const uint64_t bytes = words.size() * sizeof(uint32_t);
    if (!use.buffer || use.buffer.size() < bytes) {
        use.buffer =
            gpu::Buffer(device, {.size = std::max<uint64_t>(bytes + bytes / 2, 64 * 1024),
                                 .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                 .memory = gpu::MemoryUsage::Upload,
                                 .name = "overlay items (slot " + std::to_string(ctx.frame_slot()) + ")"});
    }
    // Host-coherent memory written before the submission: the submit makes it visible.
    std::memcpy(use.buffer.mapped(), words.data(), bytes);

    const uint32_t groups_x = std::min(tile_count, max_groups_x);
    const uint32_t groups_y = (tile_count + groups_x - 1) / groups_x;
    const uint32_t push[8] = {uint32_t(w), uint32_t(h), groups_x, tile_count, 0, chars_base, tiles_base, 0};

    const gpu::Binding bindings[] = {gpu::Binding::storage_image(ctx.view(target), ctx.layout(target)),
                                     gpu::Binding::storage_buffer(font.range()),
                                     gpu::Binding::storage_buffer({use.buffer.vk(), 0, bytes})};
    ctx.cmd().dispatch(pipe, bindings, push, {groups_x, groups_y, 1});
}

Overlay::Overlay(gpu::Device& device, uint32_t frames_in_flight)
    : impl_(std::make_unique<Impl>(device, frames_in_flight)) {}

Overlay::~Overlay() = default;

void Overlay::clear() {
    impl_->items.clear();
    impl_->glyphs.clear();
}

size_t Overlay::item_count() const {
    return impl_->items.size();
}

void Overlay::text(int x, int y, std::string_view text, Rgba color, int scale,
                   std::optional<Rgba> background) {
    if (text.empty()) return;
    scale = std::clamp(scale, 1, 255); // as draw_text
    if (background && background->a) {
        const TextSize size = text_size(text, scale);
        impl_->items.push_back({.kind = Kind::Fill,
                                .x0 = x,
                                .y0 = y,
                                .x1 = int64_t(x) + size.w,
                                .y1 = int64_t(y) + size.h,
                                .color = *background});
    }
    if (color.a == 0) return;
    int64_t line_y = y;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        if (!line.empty()) {
            const auto first = uint32_t(impl_->glyphs.size());
            for (char c : line) impl_->glyphs.push_back(uint8_t(font_glyph(c)));
            impl_->items.push_back({.kind = Kind::Text,
                                    .x0 = x,
                                    .y0 = line_y,
                                    .x1 = x + int64_t(line.size()) * font_cell_w * scale,
                                    .y1 = line_y + int64_t(font_cell_h) * scale,
                                    .scale = uint32_t(scale),
                                    .first_glyph = first,
                                    .color = color});
        }
        line_y += int64_t(font_cell_h) * scale;
        start = end + 1;
    }
}

void Overlay::rect(int x0, int y0, int x1, int y1, Rgba color, int thickness) {
    if (thickness < 1 || color.a == 0) return;
    impl_->items.push_back({.kind = Kind::Rect,
                            .x0 = std::min(x0, x1),
                            .y0 = std::min(y0, y1),
                            .x1 = std::max(x0, x1),
                            .y1 = std::max(y0, y1),
                            .thickness = thickness,
                            .color = color});
}

void Overlay::fill(int x0, int y0, int x1, int y1, Rgba color) {
    if (color.a == 0) return;
    impl_->items.push_back({.kind = Kind::Fill,
                            .x0 = std::min(x0, x1),
                            .y0 = std::min(y0, y1),
                            .x1 = std::max(x0, x1),
                            .y1 = std::max(y0, y1),
                            .color = color});
}

fg::ImageHandle Overlay::add_pass(fg::FrameGraph& graph, fg::ImageHandle target, std::string name) {
    fg::PassBuilder pass = graph.add_compute_pass(std::move(name));
    const fg::ImageHandle out = pass.write(target, fg::ImageWrite::StorageReadWrite);
    pass.record([impl = impl_.get(), out](fg::PassContext& ctx) { impl->record(ctx, out); });
    return out;
}

} // namespace vkml::passes
