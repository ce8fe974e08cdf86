#pragma once
// The graph passes a Session runs before lowering, public so tools and tests can run them one by
// one and look at the graph in between (graph::dump):
//
//   prune               drop nodes no graph output depends on
//   fix_input_shapes    free-dimension overrides (by name, by denotation) and input shapes: every
//                       input static
//   infer_and_fold      static shapes and dtypes for every value, by creating each node's operator
//                       in topological order and reading its outputs(); nodes whose inputs are all
//                       constants (and Shape/Size/EyeLike of static shapes) are evaluated on the host in
//                       double / int64 and become constants, so shape-computation subgraphs (a
//                       TF.js Resize's sizes, an exported Reshape's target) disappear
//   fuse                common subexpressions once, Conv+BatchNormalization (folded into the
//                       weights on the host), Pad into Conv pads, Conv + Add as the Conv's
//                       residual input, a following activation into the op that produces its
//                       input (else an activation into the Transpose that alone reads it), Convs
//                       of one input whose outputs only feed one channel Concat
//                       into one Conv, and a channel Concat read by Convs that repeats the first
//                       input of another Concat takes that Concat's other inputs too (zero weights)
//
//   fuse_conv_stacks    a whole Anime4K-shaped network (3x3 convolutions of few channels with
//                       CReLU between them, a 1x1 head over every layer or a last 3x3 layer,
//                       DepthToSpace plus the bilinear 2x input, or the input plus a channel slice)
//                       into one vkml.FusedConvStack node (ops::FusedConvStack, one dispatch); only
//                       where the device runs it (shared memory); after fuse
//   fuse_attention      scaled dot-product attention (MatMul, scale, masks, Softmax, MatMul) into
//                       one vkml.FusedAttention node (ops::FusedAttention, one dispatch); after fuse
//
// Fused nodes keep their ONNX op type and carry vkml attributes the lowering reads:
//   vkml_activation (string: Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, Elu,
//   Gelu, Mish), vkml_activation_alpha, vkml_activation_beta (floats, ONNX parameter meanings);
//   vkml_residual = 1 on a Conv whose fourth input is the residual; vkml_fused (strings): the
//   names of the nodes merged into it.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "vkml/gpu/device.hpp"
#include "vkml/gpu/tensor.hpp"
#include "vkml/graph/graph.hpp"

namespace vkml::graph {

// Removes nodes whose outputs reach no graph output; returns how many.
size_t prune(Graph& graph);

// Applies free-dimension overrides (by name, then by denotation) and whole input shapes, then
// checks every graph input is static (the error lists the free dimensions left and how to set
// them).
void fix_input_shapes(Graph& graph, const std::map<std::string, int64_t, std::less<>>& free_dims,
                      const std::map<std::string, std::vector<int64_t>, std::less<>>& input_shapes,
                      const std::map<std::string, int64_t, std::less<>>& free_dim_denotations = {});

// Whether the host evaluator can compute `node` (op type and domain; inputs not checked).
bool host_evaluable(const Node& node);
// The most elements a host-evaluated tensor may have (inputs, outputs and intermediates; 1 GiB
// as doubles): a model whose ConstantOfShape, Range, Tile or Expand asks for more is an error
// naming the node, not an allocation of any size the file asks for.
inline constexpr int64_t host_max_elements = int64_t{1} << 27;
// Computes the outputs of `node` on the host, given its inputs (nullptr for absent optional
// inputs) and, for Shape and Size, the input shapes. Throws naming the node when it cannot, or
// when a tensor would have more than `max_elements` elements (or a dimension product overflows).
std::vector<TensorData> host_evaluate(const Graph& graph, const Node& node,
                                      const std::vector<const TensorData*>& inputs,
                                      const std::vector<std::vector<int64_t>>& input_shapes,
                                      int64_t max_elements = host_max_elements);

// Constant folding without a device: every node the host evaluator computes whose present inputs
// are all constants becomes constants, in topological order (so chains fold), and is removed.
// This is the part of infer_and_fold that needs no shapes of computed values; tools, tests and
// the fuzzers (tests/fuzz) use it on a freshly imported graph. Returns how many nodes folded.
size_t fold_constants(Graph& graph, int64_t max_elements = host_max_elements);

// Sequences, optionals and control flow (ml/graph/control.cpp, docs/architecture.md): resolved
// while infer_and_fold walks the graph, when every input before the node has its static shape and
// the constants are folded. Sequence and optional values become lists of tensor values
// (Value::elements); If with a constant condition inlines the branch it takes, with a computed one
// both branches and a Where per output (when they agree); Loop unrolls one iteration at a time (so
// a condition computed from constants folds before the next one); Scan and SequenceMap unroll over
// their static lengths. Positions, trip counts and conditions must be constants by then.
//
// The ops resolved this way (SequenceConstruct ... SequenceMap, Optional*, If, Loop, Scan, and the
// internal vkml.IfSelect).
bool structural_op(const Node& node);
// structural_op, or an Identity of a sequence or optional.
bool resolved_at_build(const Graph& graph, const Node& node);
// The most iterations vkml unrolls of one Loop (and steps of a Scan, tensors of a split), and the
// most nodes the expansions of one graph may add: a model asking for more is an Unsupported error
// naming the node, not a build that runs out of memory or time.
inline constexpr int64_t max_loop_iterations = int64_t{1} << 14;
inline constexpr size_t max_expanded_nodes = size_t{1} << 18;
struct ExpandBudget {
    size_t nodes = 0; // nodes added so far
};
// The nodes that replace `node` (a copy, not a reference into graph.nodes()); sets outputs that
// are resolved sequences, optionals or constants directly. Throws naming the node.
std::vector<Node> expand_structural(Graph& graph, const Node& node, ExpandBudget& budget);

// Ops vkml runs as a few of its other ops, expanded when infer_and_fold reaches them (ml/graph/
// composite.cpp): MeanVarianceNormalization, MatMulInteger and ConvInteger (composite_type), and
// MaxPool of uint8 or int8 (composite_op, which reads the input's dtype).
bool composite_type(const Node& node);
bool composite_op(const Graph& graph, const Node& node);
std::vector<Node> expand_composite(Graph& graph, const Node& node, ExpandBudget& budget);

// fold_constants plus that resolution, without a device: shapes come only from constants and
// declarations, so a structural node that needs the shape of a computed value (or a decision
// input that is not a constant) is an error. For tests and the fuzzers (tests/fuzz), which stop
// before the first device call. Returns how many structural nodes it expanded.
size_t expand_on_host(Graph& graph, int64_t max_elements = host_max_elements);

// The float storage dtype each node gets (precision policy), used to create the probe operators.
using FloatPolicy = std::function<gpu::DType(const Node&)>;

struct InferStats {
    size_t folded = 0;   // nodes evaluated on the host
    size_t inferred = 0; // nodes whose outputs got shapes from their operator
};
// Static shapes and dtypes everywhere, folding what the host can compute (see above). Graph
// outputs whose declared static shape disagrees with the inferred one are an error.
InferStats infer_and_fold(Graph& graph, gpu::Device& device, const FloatPolicy& float_dtype);

struct FusionOptions {
    bool dedupe = true; // common subexpressions: a repeated node's readers read the first one
    bool conv_batchnorm = true;
    bool pad_into_conv = true;
    bool residual = true;
    bool activation = true;
    bool sibling_convs = true; // Convs of one input concatenated on channels become one Conv
    // A Concat read by Convs whose input A starts another Concat (A, F...): concatenate (A, F...)
    // there too, the Convs' weights zero for F, so that neither Concat is a pass (RDN's global
    // fusion over the blocks' outputs)
    bool concat_prefixes = true;
};
struct FusionReport {
    size_t dedupe = 0, conv_batchnorm = 0, pad_into_conv = 0, residual = 0, activation = 0, sibling_convs = 0,
           concat_prefixes = 0;
    size_t total() const {
        return dedupe + conv_batchnorm + pad_into_conv + residual + activation + sibling_convs + concat_prefixes;
    }
};
// Needs static shapes (infer_and_fold) for the residual fusion; the others need constants only.
FusionReport fuse(Graph& graph, const FusionOptions& options = {});

// Replaces every whole conv stack (see above) the device can run as one node of domain "vkml",
// op FusedConvStack: input x, then each 3x3 layer's weight and bias (no_value for none), then
// the 1x1 head's; attributes layers, head ("conv1x1", "last_layer"), act ("crelu"), output
// ("depth_to_space_bilinear", "residual"), vkml_stack_nodes (the names of the nodes replaced).
// Shared memory holds f16 when `float_dtype` gives f16 for every node replaced. Needs static
// shapes and fuse() first. Returns how many stacks it fused.
size_t fuse_conv_stacks(Graph& graph, gpu::Device& device, const FloatPolicy& float_dtype);
// VKML_DISABLE_FUSED_STACK set (and not "0"): sessions do not run fuse_conv_stacks.
bool conv_stack_disabled_by_env();

// Replaces scaled dot-product attention as exported transformers write it by one node of domain
// "vkml", op FusedAttention (ops::FusedAttention, one dispatch), where the device runs it:
//   MatMul(Q', K') -> [Mul or Div by a constant scalar] -> [Where(cond, S, c) or Where(cond, c, S),
//   c a constant scalar] -> [Add(S, mask), mask any float tensor broadcast to S] -> Softmax over the
//   last axis -> MatMul(P, V)
// where Q' is Q or Q times / over a constant scalar, and K' is K^T written as a Transpose of the
// last two axes of K (or of K times a scalar, or such a Transpose times a scalar: newer exporters
// scale Q and K by sqrt(scale) each), or any other tensor, then read as K^T. Every intermediate
// (the scores, each step after them, the probabilities) must be read only by the next step and be
// no graph output, and every node replaced must have the float dtype `float_dtype` gives the
// final MatMul. The node's inputs: q, k, v, cond (or no value), mask (or no value); attributes
// scale (float), k_transposed (int), select_keep (int), fill (float), vkml_fused (the names of
// the nodes replaced). Needs static shapes. Returns how many it fused.
size_t fuse_attention(Graph& graph, gpu::Device& device, const FloatPolicy& float_dtype);
// VKML_DISABLE_FUSED_ATTENTION set (and not "0"): sessions do not run fuse_attention.
bool attention_disabled_by_env();

} // namespace vkml::graph
