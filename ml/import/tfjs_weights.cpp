#include "tfjs_weights.hpp"

#include <cmath>
#include <cstring>

#include "import_util.hpp"
#include "vkml/gpu/half.hpp"

namespace vkml::import {

using graph::DType;
using graph::TensorData;

namespace {

struct Encoding {
    DType dtype;            // what the weight is in the model
    std::string stored;     // what the bytes hold: float32, int32, bool, uint8, uint16, float16
    size_t stored_size = 4; // bytes per stored element
    double min = 0, scale = 1;
};

Encoding encoding_of(const JsonView& w) {
    Encoding e;
    const std::string dtype = w.at("dtype").as_string();
    if (dtype == "float32")
        e.dtype = DType::f32;
    else if (dtype == "int32")
        e.dtype = DType::i32;
    else if (dtype == "bool")
        e.dtype = DType::boolean;
    else
        w.at("dtype").fail("weights of dtype '" + dtype +
                           "' are not supported (float32, int32 and bool are)");
    e.stored = dtype;
    e.stored_size = e.dtype == DType::boolean ? 1 : 4;
    if (auto q = w.get("quantization")) {
        e.stored = q->at("dtype").as_string();
        if (e.stored == "uint8" || e.stored == "uint16") {
            e.stored_size = e.stored == "uint8" ? 1 : 2;
            e.min = q->at("min").as_number();
            e.scale = q->at("scale").as_number();
            if (!std::isfinite(e.min) || !std::isfinite(e.scale))
                q->fail("min and scale must be finite numbers");
        } else if (e.stored == "float16") {
            e.stored_size = 2;
            if (e.dtype != DType::f32) q->fail("float16 quantization applies to float32 weights only");
        } else {
            q->at("dtype").fail("quantization to '" + e.stored +
                                "' is not supported (uint8, uint16, float16 are)");
        }
    }
    return e;
}

// Turns the stored bytes of one weight into its tensor.
TensorData decode(const Encoding& e, std::vector<int64_t> dims, const std::byte* p, size_t n) {
    if (e.stored == "float32" || e.stored == "int32" || e.stored == "bool") {
        std::vector<std::byte> bytes(p, p + n * e.stored_size);
        if (e.dtype == DType::boolean)
            for (std::byte& b : bytes) b = b != std::byte{0} ? std::byte{1} : std::byte{0};
        return TensorData(e.dtype, std::move(dims), std::move(bytes));
    }
    std::vector<double> values(n);
    if (e.stored == "float16") {
        std::vector<float> f(n);
        for (size_t i = 0; i < n; ++i) {
            uint16_t h;
            std::memcpy(&h, p + 2 * i, 2);
            f[i] = gpu::half_to_float(h);
        }
        return TensorData::from_floats(std::move(dims), f);
    }
    for (size_t i = 0; i < n; ++i) {
        uint32_t q = 0;
        if (e.stored_size == 1)
            q = static_cast<uint8_t>(p[i]);
        else {
            uint16_t h;
            std::memcpy(&h, p + 2 * i, 2);
            q = h;
        }
        values[i] = e.min + e.scale * static_cast<double>(q);
    }
    if (e.dtype == DType::i32) {
        std::vector<int32_t> ints(n);
        for (size_t i = 0; i < n; ++i) ints[i] = static_cast<int32_t>(std::lround(values[i]));
        return TensorData::from_int32s(std::move(dims), ints);
    }
    std::vector<float> f(values.begin(), values.end());
    return TensorData::from_floats(std::move(dims), f);
}

} // namespace

TfjsWeights::TfjsWeights(const JsonView& manifest, const std::filesystem::path& model_json) {
    const std::filesystem::path dir = model_json.parent_path().empty() ? "." : model_json.parent_path();
    const std::string file = model_json.string();
    for (const JsonView& group : manifest.items()) {
        // A group's shards are one byte stream cut into files; a weight may straddle two shards.
        std::vector<std::byte> stream;
        std::string shard_names;
        for (const JsonView& path : group.at("paths").items()) {
            const auto shard = resolve_beside(dir, path.as_string(), file);
            const std::vector<std::byte> bytes = read_file(shard, uint64_t{1} << 32, file);
            stream.insert(stream.end(), bytes.begin(), bytes.end());
            shard_names += (shard_names.empty() ? "'" : ", '") + path.as_string() + "'";
        }
        size_t offset = 0;
        for (const JsonView& w : group.at("weights").items()) {
            const std::string name = w.at("name").as_string();
            std::vector<int64_t> dims = w.at("shape").as_ints();
            uint64_t n = 1;
            for (int64_t d : dims) {
                if (d < 0 || (d > 0 && n > (uint64_t{1} << 40) / static_cast<uint64_t>(d)))
                    w.at("shape").fail("weight '" + name + "' has an invalid shape");
                n *= static_cast<uint64_t>(d);
            }
            const Encoding e = encoding_of(w);
            const uint64_t bytes = n * e.stored_size;
            if (bytes > stream.size() - offset)
                w.fail("weight '" + name + "' needs bytes " + std::to_string(offset) + " to " +
                       std::to_string(offset + bytes) + " of its group, but the shards (" + shard_names +
                       ") hold only " + std::to_string(stream.size()) + " bytes (truncated or wrong shard?)");
            if (weights_.count(name)) w.fail("weight '" + name + "' appears twice in the manifest");
            weights_.emplace(name,
                             decode(e, std::move(dims), stream.data() + offset, static_cast<size_t>(n)));
            offset += static_cast<size_t>(bytes);
        }
        if (offset != stream.size())
            group.fail("the shards (" + shard_names + ") hold " + std::to_string(stream.size()) +
                       " bytes, but the weights listed need " + std::to_string(offset) +
                       " (wrong or corrupted shard?)");
    }
}

TensorData hwio_to_oihw(const TensorData& filter, bool depthwise) {
    const auto& d = filter.dims();
    const int64_t kh = d[0], kw = d[1], ci = d[2], co = d[3];
    const std::vector<float> src = filter.to_floats();
    std::vector<float> dst(src.size());
    for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x)
            for (int64_t i = 0; i < ci; ++i)
                for (int64_t o = 0; o < co; ++o) {
                    const float v = src[static_cast<size_t>(((y * kw + x) * ci + i) * co + o)];
                    if (depthwise)
                        dst[static_cast<size_t>(((i * co + o) * kh + y) * kw + x)] = v;
                    else
                        dst[static_cast<size_t>(((o * ci + i) * kh + y) * kw + x)] = v;
                }
    return depthwise ? TensorData::from_floats({ci * co, 1, kh, kw}, dst)
                     : TensorData::from_floats({co, ci, kh, kw}, dst);
}

const TensorData* TfjsWeights::find(const std::string& name) const {
    auto it = weights_.find(name);
    return it == weights_.end() ? nullptr : &it->second;
}

} // namespace vkml::import
