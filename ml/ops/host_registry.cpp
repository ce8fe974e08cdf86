#include "families.hpp"

namespace vkml::ops::detail {

// Ops the graph runtime evaluates on the host (ml/graph/host_eval.cpp), in double and int64, when
// their inputs are constants (initializers, or values folded before them); a model that computes
// such an input on the device is an Unsupported error naming the node. Shape-computation
// subgraphs fold away this way; NonZero's output shape depends on its data, so it is host-only.
void add_host_ops(std::vector<OpInfo>& out) {
    const char* family = "Host-evaluated (constant inputs)";
    const char* all = "f32, f16, i32, i64, u8, bool";
    out.push_back({"Shape", family, all, "start, end; needs only a static input shape."});
    out.push_back({"Size", family, all, "needs only a static input shape."});
    out.push_back({"EyeLike", family, all, "dtype, k; needs only a static 2-D input shape."});
    out.push_back({"Range", family, "f32, f16, i32, i64", "exact int64 arithmetic; at most 2^27 elements."});
    out.push_back({"ConstantOfShape", family, all, "value; at most 2^27 elements."});
    out.push_back({"NonZero", family, all, "the output's shape depends on the data: host only."});
    out.push_back({"Compress", family, all, "axis; the output's shape depends on the condition: host only."});
    out.push_back({"Unique", family, all,
                   "axis, sorted; outputs Y, indices, inverse_indices, counts; data-dependent shapes: host only."});
    for (const char* w : {"HannWindow", "HammingWindow", "BlackmanWindow"})
        out.push_back({w, family, "f32, f16, i32, i64", "periodic, output_datatype; computed in double."});
    out.push_back({"TfIdfVectorizer", family, "i32, i64 -> f32",
                   "X [C] or [N, C]; pool_int64s (no strings), ngram_counts, ngram_indexes, min/max_gram_length, "
                   "max_skip_count, mode TF/IDF/TFIDF, weights (by output position); n-grams counted as ONNX's "
                   "reference counts them (1-grams once, longer ones per skip distance)."});
    out.push_back({"MelWeightMatrix", family, "f32, f16, i32, i64",
                   "output_datatype; [dft_length / 2 + 1, num_mel_bins] triangles on the mel scale, computed in "
                   "double."});

    // Sequences, optionals and control flow: resolved when a session is built (ml/graph/control.cpp,
    // docs/architecture.md); positions, trip counts and conditions must be constants by then.
    const char* seq = "Sequences, optionals and control flow (resolved at session build)";
    out.push_back({"SequenceConstruct", seq, all, "a sequence is a list of the session's tensors."});
    out.push_back({"SequenceEmpty", seq, all, "dtype."});
    out.push_back({"SequenceInsert", seq, all, "position: a constant."});
    out.push_back({"SequenceErase", seq, all, "position: a constant."});
    out.push_back({"SequenceAt", seq, all, "position: a constant; out of range is an error naming the node."});
    out.push_back({"SequenceLength", seq, all, "a constant."});
    out.push_back({"SplitToSequence", seq, all, "axis, keepdims; split: a constant. Slices of the input."});
    out.push_back({"ConcatFromSequence", seq, all, "axis, new_axis. A Concat."});
    out.push_back({"SequenceMap", seq, all, "body inlined once per element."});
    out.push_back({"Optional", seq, all, "type; an optional holds a tensor, a sequence or nothing."});
    out.push_back({"OptionalHasElement", seq, all, "a constant."});
    out.push_back({"OptionalGetElement", seq, all, "an empty optional is an error naming the node."});
    out.push_back({"If", seq, all,
                   "constant condition: the branch taken; computed: both branches and Where, when they agree in "
                   "shapes and dtypes."});
    out.push_back({"Loop", seq, all,
                   "unrolled: trip count and condition must fold to constants (from constants, shapes and the "
                   "iteration number); at most 16384 iterations."});
    out.push_back({"Scan", seq, all, "unrolled over the static scan axis; axes and directions; opset 8's batch axis."});
}

} // namespace vkml::ops::detail
