#pragma once
// Helpers shared by the layout family's operators (not public API).
#include <cstdint>
#include <string>
#include <vector>

#include "util.hpp"
#include "vkml/gpu/pipeline.hpp"
#include "vkml/ops/layout.hpp"

namespace vkml::ops::detail {

// A gather of the input into a contiguous output, described per output dimension (outermost
// first): output element (o_0, ..., o_{r-1}) reads input element
//     base + sum_k (o_k mod mods[k]) * strides[k]
// Strides may be negative (Slice with negative steps) or 0 (Expand); mods[k] < dims[k] only for
// Tile. Transpose, Slice, Expand, Tile, Split, DepthToSpace and SpaceToDepth are all such views.
struct LayoutStridedView {
    std::vector<int64_t> dims, strides, mods;
    int64_t base = 0;
    void add(int64_t dim, int64_t stride) { add(dim, stride, dim); }
    void add(int64_t dim, int64_t stride, int64_t mod) {
        dims.push_back(dim);
        strides.push_back(stride);
        mods.push_back(mod);
    }
};

// Builds the strided-copy kernel's parameters for `view` over tensors of `dtype` (i64 elements
// become pairs of words), merging dimensions the view walks contiguously. Fails naming `op` when
// the view needs more than the kernel's 8 dimensions or 32-bit offsets do not reach. An
// activation (f32 and f16 only) is applied to every element moved.
LayoutCopyPlan make_layout_copy(gpu::Device& device, const char* op, DType dtype,
                                const LayoutStridedView& view, const Activation& activation = {});
void record_layout_copy(gpu::CommandBuffer& cmd, const LayoutCopyPlan& plan, const Tensor& in,
                        const Tensor& out);

// The shader variant that moves `dtype`'s bits: "i32" for every 32- and 64-bit dtype (f32 moves
// as raw words, i64 as two), "f16", "u8".
const char* layout_variant(DType dtype);
// 32-bit words per element for the word-moving variant (2 for i64, else 1).
uint32_t layout_words(DType dtype);
// Fails unless `index` is i32 or i64.
void layout_require_index(const char* op, const std::string& field, const TensorDesc& index);
// "[1, 2, 3]" for error messages.
std::string layout_list(std::span<const int64_t> values);
// Element strides of a contiguous shape, as a vector.
std::vector<int64_t> layout_strides(const Shape& shape);

} // namespace vkml::ops::detail
