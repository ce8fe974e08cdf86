#include "common/scene.hpp"

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "vkml/error.hpp"
#include "vkml/gpu/buffer.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/gpu/transfer.hpp"
#include "vkml/shader_ids.hpp"

namespace vkml::samples {

namespace {

// Column-major 4x4 matrices, as GLSL reads them.
struct Mat4 {
    std::array<float, 16> m{};
    float& at(int row, int col) { return m[size_t(col * 4 + row)]; }
    float at(int row, int col) const { return m[size_t(col * 4 + row)]; }
    static Mat4 identity() {
        Mat4 r;
        for (int i = 0; i < 4; ++i) r.at(i, i) = 1;
        return r;
    }
};

Mat4 operator*(const Mat4& a, const Mat4& b) {
    Mat4 r;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            float s = 0;
            for (int k = 0; k < 4; ++k) s += a.at(i, k) * b.at(k, j);
            r.at(i, j) = s;
        }
    return r;
}

struct Vec3 {
    float x = 0, y = 0, z = 0;
};
Vec3 operator-(Vec3 a, Vec3 b) {
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}
Vec3 cross(Vec3 a, Vec3 b) {
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
float dot(Vec3 a, Vec3 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
Vec3 normalize(Vec3 a) {
    const float l = std::sqrt(dot(a, a));
    return {a.x / l, a.y / l, a.z / l};
}

Mat4 translate(float x, float y, float z) {
    Mat4 r = Mat4::identity();
    r.at(0, 3) = x, r.at(1, 3) = y, r.at(2, 3) = z;
    return r;
}
Mat4 scale(float x, float y, float z) {
    Mat4 r;
    r.at(0, 0) = x, r.at(1, 1) = y, r.at(2, 2) = z, r.at(3, 3) = 1;
    return r;
}
Mat4 rotate_x(float a) {
    Mat4 r = Mat4::identity();
    r.at(1, 1) = std::cos(a), r.at(1, 2) = -std::sin(a), r.at(2, 1) = std::sin(a), r.at(2, 2) = std::cos(a);
    return r;
}
Mat4 rotate_y(float a) {
    Mat4 r = Mat4::identity();
    r.at(0, 0) = std::cos(a), r.at(0, 2) = std::sin(a), r.at(2, 0) = -std::sin(a), r.at(2, 2) = std::cos(a);
    return r;
}
Mat4 rotate_z(float a) {
    Mat4 r = Mat4::identity();
    r.at(0, 0) = std::cos(a), r.at(0, 1) = -std::sin(a), r.at(1, 0) = std::sin(a), r.at(1, 1) = std::cos(a);
    return r;
}

Mat4 look_at(Vec3 eye, Vec3 target, Vec3 up) {
    const Vec3 f = normalize(target - eye), s = normalize(cross(f, up)), u = cross(s, f);
    Mat4 r = Mat4::identity();
    r.at(0, 0) = s.x, r.at(0, 1) = s.y, r.at(0, 2) = s.z, r.at(0, 3) = -dot(s, eye);
    r.at(1, 0) = u.x, r.at(1, 1) = u.y, r.at(1, 2) = u.z, r.at(1, 3) = -dot(u, eye);
    r.at(2, 0) = -f.x, r.at(2, 1) = -f.y, r.at(2, 2) = -f.z, r.at(2, 3) = dot(f, eye);
    return r;
}

// Vulkan clip space: y down, depth 0..1.
Mat4 perspective(float fov_y, float aspect, float near, float far) {
    const float t = 1.f / std::tan(fov_y / 2);
    Mat4 r;
    r.at(0, 0) = t / aspect;
    r.at(1, 1) = -t;
    r.at(2, 2) = far / (near - far);
    r.at(2, 3) = near * far / (near - far);
    r.at(3, 2) = -1;
    return r;
}

struct Vertex {
    float pos[3], normal[3], uv[2];
};

// Unit cube centred on the origin (each face with uv 0..1), then a unit quad in the XY plane
// facing +z.
std::vector<Vertex> make_vertices(uint32_t& cube_first, uint32_t& quad_first) {
    std::vector<Vertex> v;
    const float n[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
    cube_first = 0;
    for (const auto& face : n) {
        const Vec3 nn{face[0], face[1], face[2]};
        const Vec3 up = std::fabs(nn.y) > 0.5f ? Vec3{0, 0, -1} : Vec3{0, 1, 0};
        const Vec3 right = cross(up, nn);
        auto corner = [&](float a, float b) {
            Vertex x{};
            x.pos[0] = 0.5f * (nn.x + a * right.x + b * up.x);
            x.pos[1] = 0.5f * (nn.y + a * right.y + b * up.y);
            x.pos[2] = 0.5f * (nn.z + a * right.z + b * up.z);
            std::memcpy(x.normal, face, sizeof x.normal);
            x.uv[0] = (a + 1) / 2;
            x.uv[1] = (1 - b) / 2;
            return x;
        };
        for (auto [a, b] :
             {std::pair{-1.f, -1.f}, {1.f, -1.f}, {1.f, 1.f}, {-1.f, -1.f}, {1.f, 1.f}, {-1.f, 1.f}})
            v.push_back(corner(a, b));
    }
    quad_first = uint32_t(v.size());
    for (auto [a, b] :
         {std::pair{-1.f, -1.f}, {1.f, -1.f}, {1.f, 1.f}, {-1.f, -1.f}, {1.f, 1.f}, {-1.f, 1.f}})
        v.push_back(Vertex{{0.5f * a, 0.5f * b, 0}, {0, 0, 1}, {(a + 1) / 2, (1 - b) / 2}});
    return v;
}

enum Material { Ground = 0, Paper = 1, Sign = 2, Brick = 3, Leaf = 4, Metal = 5, Poster = 6 };

struct Draw {
    bool cube = true;
    Mat4 model;
    Material material = Ground;
    float uv_scale = 1;
    uint32_t seed = 0;
};

struct Push {
    float mvp[16];
    float model[12];
    float params[4];
};
static_assert(sizeof(Push) == 128);

// The scene at time t: everything placed by closed-form functions of t.
std::vector<Draw> scene_draws(double time) {
    const float t = float(time);
    std::vector<Draw> d;
    // Ground, 60 m square, one checker tile per metre.
    d.push_back({false, rotate_x(-1.5707963f) * scale(60, 60, 1), Ground, 60, 1});
    // Newspaper pages on easels along the back.
    for (int i = 0; i < 3; ++i) {
        const float x = -4.2f + 4.2f * float(i);
        d.push_back({false, translate(x, 1.6f, -5.5f) * rotate_y(0.25f * float(1 - i)) * scale(3.2f, 2.4f, 1),
                     Paper, 1, uint32_t(10 + i)});
        d.push_back({true, translate(x, 0.4f, -5.55f) * scale(0.08f, 0.8f, 0.08f), Metal, 1, 0});
    }
    // Test charts on the sides.
    d.push_back({false, translate(-6.5f, 1.8f, -2.0f) * rotate_y(1.1f) * scale(2.2f, 2.2f, 1), Poster, 1, 1});
    d.push_back({false, translate(6.5f, 1.8f, -2.0f) * rotate_y(-1.1f) * scale(2.2f, 2.2f, 1), Poster, 1, 2});
    // The rotating sign on its pole.
    d.push_back(
        {true, translate(0, 2.5f, -2.0f) * rotate_y(0.6f * t) * scale(2.6f, 1.1f, 0.12f), Sign, 1, 20});
    d.push_back({true, translate(0, 1.0f, -2.0f) * scale(0.1f, 2.0f, 0.1f), Metal, 1, 0});
    // Brick cubes orbiting and tumbling.
    for (int i = 0; i < 6; ++i) {
        const float a = 0.35f * t + 6.2831853f * float(i) / 6;
        const float r = 3.2f;
        const float bob = 0.25f * std::sin(1.3f * t + float(i));
        d.push_back({true,
                     translate(r * std::cos(a), 0.8f + bob, -1.5f + 0.6f * r * std::sin(a)) *
                         rotate_y(0.9f * t + float(i)) * rotate_x(0.5f * t + 0.3f * float(i)) *
                         scale(0.9f, 0.9f, 0.9f),
                     Brick, 1, uint32_t(30 + i)});
    }
    // A fence of thin posts and rails in front: one- to two-pixel lines at 960x540.
    for (int i = 0; i <= 24; ++i)
        d.push_back({true, translate(-6.0f + 0.5f * float(i), 0.5f, 2.2f) * scale(0.035f, 1.0f, 0.035f),
                     Metal, 1, 0});
    for (float y : {0.35f, 0.9f})
        d.push_back({true, translate(0, y, 2.2f) * scale(12.0f, 0.025f, 0.025f), Metal, 4, 0});
    // Bushes: crossed alpha-tested leaf cards, swaying.
    for (int i = 0; i < 10; ++i) {
        const float x = -5.5f + 1.2f * float(i) + 0.3f * float(i % 3);
        const float z = 3.2f + 0.5f * float((i * 7) % 3);
        const float sway = 0.08f * std::sin(1.7f * t + 0.9f * float(i));
        for (int k = 0; k < 2; ++k)
            d.push_back({false,
                         translate(x, 0.7f, z) * rotate_y(0.4f * float(i) + 1.5707963f * float(k)) *
                             rotate_z(sway) * scale(1.4f, 1.4f, 1),
                         Leaf, 1, uint32_t(40 + i)});
    }
    return d;
}

void check(VkResult r, const char* what) {
    if (r != VK_SUCCESS)
        throw Error(error_code_from(r), std::string("scene: ") + what + " failed: " + vk_result_name(r));
}

// The scene's own multisampled colour and depth images for one size. They never leave the scene's
// pass, so the pass records their barriers itself; the graph sees only the resolved image.
struct Targets {
    gpu::Device& device;
    VkExtent2D extent{};
    VkImage image[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE}; // colour, depth
    VkImageView view[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
    gpu::AllocationPtr memory[2];

    Targets(gpu::Device& d, VkExtent2D e, VkSampleCountFlagBits samples) : device(d), extent(e) {
        const VkFormat formats[2] = {Scene::color_format, Scene::depth_format};
        const VkImageUsageFlags usage[2] = {VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT |
                                                VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                                            VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT};
        for (int i = 0; i < 2; ++i) {
            VkImageCreateInfo ci{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
            ci.imageType = VK_IMAGE_TYPE_2D;
            ci.format = formats[i];
            ci.extent = {e.width, e.height, 1};
            ci.mipLevels = ci.arrayLayers = 1;
            ci.samples = samples;
            ci.usage = usage[i];
            check(vkCreateImage(d.vk(), &ci, nullptr, &image[i]), "vkCreateImage");
            VkMemoryRequirements req;
            vkGetImageMemoryRequirements(d.vk(), image[i], &req);
            memory[i] =
                d.allocator().allocate(req, gpu::MemoryUsage::DeviceLocal, gpu::ResourceTiling::Optimal);
            check(vkBindImageMemory(d.vk(), image[i], memory[i]->memory(), memory[i]->offset()),
                  "vkBindImageMemory");
            VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
            vi.image = image[i];
            vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
            vi.format = formats[i];
            vi.subresourceRange = {fg::format_aspect(formats[i]), 0, 1, 0, 1};
            check(vkCreateImageView(d.vk(), &vi, nullptr, &view[i]), "vkCreateImageView");
            d.set_debug_name(VK_OBJECT_TYPE_IMAGE, image[i],
                             i == 0 ? "scene msaa colour" : "scene msaa depth");
        }
    }
    ~Targets() {
        // Frames rendered into them may still run (gpu::Device::retire).
        for (int i = 0; i < 2; ++i)
            device.retire([vk = device.vk(), v = view[i], im = image[i], mem = std::move(memory[i])] {
                vkDestroyImageView(vk, v, nullptr);
                vkDestroyImage(vk, im, nullptr);
            });
    }
    Targets(const Targets&) = delete;
    Targets& operator=(const Targets&) = delete;
};

void image_barrier(VkCommandBuffer cmd, VkImage image, VkImageAspectFlags aspect, VkImageLayout from,
                   VkImageLayout to, VkPipelineStageFlags2 src_stages, VkAccessFlags2 src_access,
                   VkPipelineStageFlags2 dst_stages, VkAccessFlags2 dst_access) {
    VkImageMemoryBarrier2 b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2};
    b.srcStageMask = src_stages;
    b.srcAccessMask = src_access;
    b.dstStageMask = dst_stages;
    b.dstAccessMask = dst_access;
    b.oldLayout = from;
    b.newLayout = to;
    b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = image;
    b.subresourceRange = {aspect, 0, 1, 0, 1};
    VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
    dep.imageMemoryBarrierCount = 1;
    dep.pImageMemoryBarriers = &b;
    vkCmdPipelineBarrier2(cmd, &dep);
}

VkSampleCountFlagBits pick_samples(gpu::Device& d, uint32_t wanted) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d.physical_device(), &p);
    const VkSampleCountFlags ok =
        p.limits.framebufferColorSampleCounts & p.limits.framebufferDepthSampleCounts;
    for (uint32_t s = 8; s > 1; s /= 2)
        if (s <= wanted && (ok & s)) return VkSampleCountFlagBits(s);
    return VK_SAMPLE_COUNT_1_BIT;
}

} // namespace

struct Scene::Impl {
    gpu::Device& device;
    VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT;
    std::vector<std::unique_ptr<Targets>> targets; // by size
    const gpu::Pipeline* pipeline = nullptr;       // the device's pipeline cache owns it
    gpu::Buffer vertices;
    uint32_t cube_first = 0, quad_first = 0;

    float zoom = 1;

    Impl(gpu::Device& d, const SceneDesc& desc)
        : device(d), samples(pick_samples(d, desc.samples)), zoom(desc.zoom) {
        if (!(desc.zoom >= 1.f) || !std::isfinite(desc.zoom))
            throw Error(ErrorCode::InvalidArgument,
                        "scene: SceneDesc::zoom must be a finite number >= 1, got " +
                            std::to_string(desc.zoom));
        const std::vector<Vertex> v = make_vertices(cube_first, quad_first);
        vertices =
            gpu::Buffer(d, {.size = v.size() * sizeof(Vertex),
                            .usage = VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                            .name = "scene vertices"});
        gpu::upload(d, vertices.range(), std::as_bytes(std::span(v)));

        pipeline = &d.pipeline(gpu::GraphicsPipelineDesc{
            .vertex = gpu::ShaderId::samples_scene_vs_f32,
            .fragment = gpu::ShaderId::samples_scene_fs_f32,
            .push_constant_bytes = sizeof(Push),
            .color_formats = {color_format},
            .depth_format = depth_format,
            .samples = samples,
            .alpha_to_coverage = samples > 1, // foliage edges from its alpha (1 elsewhere)
            .vertex_bindings = {{0, sizeof(Vertex), VK_VERTEX_INPUT_RATE_VERTEX}},
            .vertex_attributes = {{0, 0, VK_FORMAT_R32G32B32_SFLOAT, offsetof(Vertex, pos)},
                                  {1, 0, VK_FORMAT_R32G32B32_SFLOAT, offsetof(Vertex, normal)},
                                  {2, 0, VK_FORMAT_R32G32_SFLOAT, offsetof(Vertex, uv)}},
            .name = "sample scene"});
    }

    Targets& targets_for(VkExtent2D e) {
        for (auto& t : targets)
            if (t->extent.width == e.width && t->extent.height == e.height) return *t;
        targets.push_back(std::make_unique<Targets>(device, e, samples));
        return *targets.back();
    }

    // Renders into the multisampled targets and resolves into `dst` (TRANSFER_DST_OPTIMAL).
    void render(VkCommandBuffer cmd, Targets& t, VkImage dst, VkImageLayout dst_layout, double time) const {
        constexpr VkPipelineStageFlags2 fragment_tests =
            VK_PIPELINE_STAGE_2_EARLY_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_2_LATE_FRAGMENT_TESTS_BIT;
        // Earlier frames' contents are not needed (UNDEFINED), but their resolve reads and depth
        // writes must be done before this frame overwrites the images.
        image_barrier(cmd, t.image[0], VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
                      VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
                      VK_ACCESS_2_NONE, VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT,
                      VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_2_COLOR_ATTACHMENT_READ_BIT);
        image_barrier(cmd, t.image[1], VK_IMAGE_ASPECT_DEPTH_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
                      VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL, fragment_tests,
                      VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT, fragment_tests,
                      VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT |
                          VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_READ_BIT);
        VkRenderingAttachmentInfo color{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
        color.imageView = t.view[0];
        color.imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
        color.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
        color.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
        color.clearValue.color = {{0.62f, 0.74f, 0.9f, 1.f}};
        VkRenderingAttachmentInfo depth{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
        depth.imageView = t.view[1];
        depth.imageLayout = VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL;
        depth.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
        depth.storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
        depth.clearValue.depthStencil = {1.f, 0};
        VkRenderingInfo ri{VK_STRUCTURE_TYPE_RENDERING_INFO};
        ri.renderArea = {{0, 0}, t.extent};
        ri.layerCount = 1;
        ri.colorAttachmentCount = 1;
        ri.pColorAttachments = &color;
        ri.pDepthAttachment = &depth;
        vkCmdBeginRendering(cmd, &ri);
        const VkViewport vp{0, 0, float(t.extent.width), float(t.extent.height), 0, 1};
        const VkRect2D sc{{0, 0}, t.extent};
        vkCmdSetViewport(cmd, 0, 1, &vp);
        vkCmdSetScissor(cmd, 0, 1, &sc);
        draw(cmd, t.extent, time);
        vkCmdEndRendering(cmd);
        image_barrier(cmd, t.image[0], VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                      VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT,
                      VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT, VK_PIPELINE_STAGE_2_RESOLVE_BIT,
                      VK_ACCESS_2_TRANSFER_READ_BIT);
        VkImageResolve region{};
        region.srcSubresource = region.dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        region.extent = {t.extent.width, t.extent.height, 1};
        vkCmdResolveImage(cmd, t.image[0], VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, dst, dst_layout, 1, &region);
    }

    void draw(VkCommandBuffer cmd, VkExtent2D extent, double time) const {
        const float t = float(time);
        // The camera drifts slowly left and right and in and out.
        const Vec3 eye{1.8f * std::sin(0.15f * t), 2.0f + 0.2f * std::sin(0.23f * t),
                       5.6f + 0.5f * std::cos(0.11f * t)};
        const Mat4 view = look_at(eye, {0, 1.2f, -2.0f}, {0, 1, 0});
        // Zoom narrows the field of view so tan(fov/2) shrinks by the zoom: a centre crop of the
        // default view, same eye, same pixel footprint as a zoom-times-larger render.
        const float fov = 2.f * std::atan(std::tan(0.45f) / zoom);
        const Mat4 proj = perspective(fov, float(extent.width) / float(extent.height), 0.1f, 100.f);
        const Mat4 view_proj = proj * view;
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline->vk());
        const VkBuffer vb = vertices.vk();
        const VkDeviceSize offset = 0;
        vkCmdBindVertexBuffers(cmd, 0, 1, &vb, &offset);
        for (const Draw& d : scene_draws(time)) {
            Push p{};
            const Mat4 mvp = view_proj * d.model;
            std::memcpy(p.mvp, mvp.m.data(), sizeof p.mvp);
            for (int r = 0; r < 3; ++r)
                for (int c = 0; c < 4; ++c) p.model[r * 4 + c] = d.model.at(r, c);
            p.params[0] = float(d.material);
            p.params[1] = float(samples); // the fragment shader alpha-tests only without MSAA
            p.params[2] = d.uv_scale;
            p.params[3] = float(d.seed);
            vkCmdPushConstants(cmd, pipeline->layout(), pipeline->stages(), 0, sizeof p, &p);
            vkCmdDraw(cmd, d.cube ? 36 : 6, 1, d.cube ? cube_first : quad_first, 0);
        }
    }
};

namespace {
// VKML_SCENE_ZOOM overrides SceneDesc::zoom for every sample that draws the scene, so a test (or a
// user) can compare upscalers on a small window at a full-size frame's pixel scale without each
// sample growing its own flag.
SceneDesc with_environment(SceneDesc desc) {
    if (const char* z = std::getenv("VKML_SCENE_ZOOM"); z && *z) {
        char* end = nullptr;
        desc.zoom = std::strtof(z, &end);
        if (*end || !std::isfinite(desc.zoom) || desc.zoom < 1.f)
            throw Error(ErrorCode::InvalidArgument,
                        std::string("VKML_SCENE_ZOOM: expected a number >= 1, got '") + z + "'");
    }
    return desc;
}
} // namespace

Scene::Scene(gpu::Device& device, const SceneDesc& desc)
    : impl_(std::make_unique<Impl>(device, with_environment(desc))) {}
Scene::~Scene() = default;

fg::ImageHandle Scene::add_passes(fg::FrameGraph& graph, uint32_t width, uint32_t height,
                                  std::function<double()> time, std::string name) {
    // The graph's image is written by the resolve, a transfer command: to the graph this is a
    // transfer pass (the frame graph has no multisampled attachments); the multisampled rendering
    // inside it uses the scene's own images.
    fg::ImageHandle color =
        graph.create_image(name + " color", {.format = color_format, .width = width, .height = height});
    fg::PassBuilder pass = graph.add_transfer_pass(std::move(name));
    color = pass.write(color, fg::ImageWrite::TransferDst);
    Targets& targets = impl_->targets_for({width, height});
    pass.record([impl = impl_.get(), &targets, color, time = std::move(time)](fg::PassContext& ctx) {
        impl->render(ctx.vk(), targets, ctx.image(color), ctx.layout(color), time());
    });
    return color;
}

fg::ImageHandle Scene::add_passes(fg::FrameGraph& graph, uint32_t width, uint32_t height, double time,
                                  std::string name) {
    return add_passes(
        graph, width, height, [time] { return time; }, std::move(name));
}

} // namespace vkml::samples
