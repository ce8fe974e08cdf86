#include "vkml/gpu/transfer.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "vkml/error.hpp"
#include "vkml/gpu/command.hpp"
#include "vkml/gpu/device.hpp"
#include "vkml/gpu/half.hpp"

namespace vkml::gpu {

void upload(Device& device, const BufferRange& dst, std::span<const std::byte> data) {
    if (data.empty()) return;
    Buffer staging(device, {.size = data.size(),
                            .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                            .memory = MemoryUsage::Upload,
                            .name = "vkml upload staging"});
    std::memcpy(staging.mapped(), data.data(), data.size());
    device.run_now(QueueRole::Transfer,
                   [&](CommandBuffer& cmd) { cmd.copy(staging.range(), dst, data.size()); });
}

void download(Device& device, const BufferRange& src, std::span<std::byte> data) {
    if (data.empty()) return;
    Buffer staging(device, {.size = data.size(),
                            .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                            .memory = MemoryUsage::Readback,
                            .name = "vkml download staging"});
    device.run_now(QueueRole::Transfer, [&](CommandBuffer& cmd) {
        cmd.copy(src, staging.range(), data.size());
        barrier::to_host(cmd);
    });
    std::memcpy(data.data(), staging.mapped(), data.size());
}

namespace {
void check_size(const Tensor& t, size_t elements, const char* what) {
    if (!t) throw Error(ErrorCode::InvalidArgument, std::string(what) + ": empty tensor");
    if (!t.contiguous())
        throw Error(ErrorCode::InvalidArgument,
                    std::string(what) + ": tensor " + t.shape().str() + " is not contiguous");
    if (elements != size_t(t.elements()))
        throw Error(ErrorCode::InvalidArgument, std::string(what) + ": " + std::to_string(elements) +
                                                    " elements given for a tensor of shape " +
                                                    t.shape().str());
}
} // namespace

void upload_raw(Device& device, const Tensor& tensor, std::span<const std::byte> data) {
    check_size(tensor, data.size() / dtype_size(tensor.dtype()), "upload");
    upload(device, tensor.range(), data);
}

std::vector<std::byte> download_raw(Device& device, const Tensor& tensor) {
    check_size(tensor, size_t(tensor.elements()), "download");
    std::vector<std::byte> out(tensor.bytes());
    download(device, tensor.range(), out);
    return out;
}

void upload(Device& device, const Tensor& tensor, std::span<const float> data) {
    check_size(tensor, data.size(), "upload");
    std::vector<std::byte> bytes(tensor.bytes());
    switch (tensor.dtype()) {
    case DType::f32:
        std::memcpy(bytes.data(), data.data(), bytes.size());
        break;
    case DType::f16:
        floats_to_halves(data, {reinterpret_cast<uint16_t*>(bytes.data()), data.size()});
        break;
    case DType::i32:
        for (size_t i = 0; i < data.size(); ++i) {
            const auto v = int32_t(std::lround(data[i]));
            std::memcpy(bytes.data() + 4 * i, &v, 4);
        }
        break;
    case DType::i64:
        for (size_t i = 0; i < data.size(); ++i) {
            const auto v = int64_t(std::llround(data[i]));
            std::memcpy(bytes.data() + 8 * i, &v, 8);
        }
        break;
    case DType::u8:
        for (size_t i = 0; i < data.size(); ++i)
            bytes[i] = std::byte(uint8_t(std::lround(std::fmin(std::fmax(data[i], 0.f), 255.f))));
        break;
    }
    upload(device, tensor.range(), bytes);
}

std::vector<float> download_floats(Device& device, const Tensor& tensor) {
    const std::vector<std::byte> bytes = download_raw(device, tensor);
    std::vector<float> out(size_t(tensor.elements()));
    switch (tensor.dtype()) {
    case DType::f32:
        std::memcpy(out.data(), bytes.data(), bytes.size());
        break;
    case DType::f16:
        halves_to_floats({reinterpret_cast<const uint16_t*>(bytes.data()), out.size()}, out);
        break;
    case DType::i32:
        for (size_t i = 0; i < out.size(); ++i) {
            int32_t v;
            std::memcpy(&v, bytes.data() + 4 * i, 4);
            out[i] = float(v);
        }
        break;
    case DType::i64:
        for (size_t i = 0; i < out.size(); ++i) {
            int64_t v;
            std::memcpy(&v, bytes.data() + 8 * i, 8);
            out[i] = float(v);
        }
        break;
    case DType::u8:
        for (size_t i = 0; i < out.size(); ++i) out[i] = float(uint8_t(bytes[i]));
        break;
    }
    return out;
}

} // namespace vkml::gpu
