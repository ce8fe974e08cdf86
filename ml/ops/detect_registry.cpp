#include "families.hpp"

namespace vkml::ops::detail {

// Kernels and limits: see ml/include/vkml/ops/detect.hpp and ml/ops/detect_*.cpp.
void add_detect_ops(std::vector<OpInfo>& out) {
    const std::string f = "Detection";
    out.push_back(
        {"NonMaxSuppression", f, "f32, f16 -> i64 or i32",
         "center_point_box 0 (corners in either order) and 1; max_output_boxes_per_class, iou_threshold, "
         "score_threshold (optional) as create-time values, not tensors; fixed-capacity output "
         "[B*C*min(max_output_boxes_per_class, N), 3] padded with -1 plus a count output [1]; rows in ONNX "
         "Runtime's order, equal scores by ascending box index; score > score_threshold, IoU > "
         "iou_threshold (f32); bitonic sort per (batch, class) (shared memory up to 512 keys, global "
         "passes above), greedy selection with a shared-memory bitmask, one workgroup per (batch, class); "
         "with a score_threshold and N at most twice the candidates shared memory holds (2048 in 48 KiB), "
         "only the candidates are sorted and swept, in shared memory, in one dispatch (NmsSort); "
         "N up to 65536 (16 KiB shared memory) or 131072 (32 KiB); max_output_boxes_per_class >= 1"});
    out.push_back(
        {"ImageToTensor", f, "f32, f16",
         "vkml op, not ONNX: VkImage (R8G8B8A8_UNORM/SRGB, B8G8R8A8_UNORM, R16G16B16A16_SFLOAT; sampled, "
         "SHADER_READ_ONLY_OPTIMAL or GENERAL) -> NCHW [1, 3 or 4, H, W]; per-channel (x * scale - mean) / "
         "std; RGB or BGR order; sRGB read linear (hardware decode) or re-encoded to stored values"});
    out.push_back(
        {"TensorToImage", f, "f32, f16",
         "vkml op, not ONNX: NCHW [1, 3 or 4, H, W] -> storage VkImage (R8G8B8A8_UNORM, B8G8R8A8_UNORM, "
         "R16G16B16A16_SFLOAT; GENERAL layout); inverse transform, RGB or BGR, alpha from channel 3 or 1.0, "
         "clamped to [0, 1] for UNORM; no sRGB targets"});
    out.push_back({"Letterbox", f, "f32, f16, u8 -> f32, f16",
                   "vkml op, not ONNX: [1, 3, H, W] f32/f16 or packed u8 pixels [1, H, W, 3 or 4] -> [1, 3, "
                   "height, width] "
                   "(output dtype chosen); aspect kept, content centred (odd padding pixel right/bottom), "
                   "scale min(dst/src), "
                   "bilinear with half-pixel centres and clamped edges (no antialiasing), pad_value (default "
                   "114/255), then "
                   "per-channel (x * scale - mean) / std; RGB or BGR; or straight from a sampled VkImage "
                   "(ImageToTensor's formats, sRGB as stored values)"});
    out.push_back(
        {"YoloDecode", f, "f32, f16 -> f32",
         "vkml op, not ONNX: YOLOv5 [B, N, 5 + C] (cx, cy, w, h, objectness, classes) or YOLOv8 [B, 4 + C, "
         "N] "
         "(cx, cy, w, h, classes) -> candidates [B, N, 6] (x0, y0, x1, y1, score, class), class-shifted "
         "boxes "
         "[B, N, 4] and scores [B, 1, N] for one class-aware NonMaxSuppression group; best class only"});
    out.push_back(
        {"NanoDetDecode", f, "f32, f16 -> f32",
         "vkml op, not ONNX: NanoDet (GFL) heads, per stride class scores [B, N_l, C] and side distributions "
         "[B, N_l, 4 * bins] (softmax expectation, in strides) -> the same three outputs as YoloDecode; "
         "centre offset 0 or 0.5 cell"});
    out.push_back(
        {"GatherDetections", f, "f32 (i64 or i32 indices)",
         "vkml op, not ONNX: NonMaxSuppression's selection (one group) -> detections [K, 6] f32 (box mapped "
         "(x - offset) / scale and clipped, score, class; zero rows past the count) and count [1] i32"});
    out.push_back({"CompositeOver", f, "f32, f16 (+ u8 overlay)",
                   "vkml op, not ONNX: premultiplied RGBA8 overlay [1, H, W, 4] over an image [1, 3, H, W]: "
                   "image * (1 - a) + rgb (bytes / 255)"});
}

} // namespace vkml::ops::detail
