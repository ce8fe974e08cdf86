"""vkml for Python: ML on any Vulkan 1.3 device from NumPy.

    import vkml, numpy as np
    print(vkml.devices())                                  # what vkml can run on
    sess = vkml.InferenceSession("model.onnx", precision="f32")
    sess = vkml.InferenceSession("model.onnx", providers=["VkmlExecutionProvider"])  # ONNX Runtime's way
    y, = sess.run(None, {"x": np.zeros((1, 3, 64, 64), np.float32)})
    big = vkml.upscale(image, model="anime4k-m")           # (H, W, 3) uint8|16, float16|32 -> (2H, 2W, 3)
    vkml.ops.conv(x, w, pads=[1, 1, 1, 1], activation="relu")

Models: ONNX, TF.js (model.json) and Anime4K weights (JSON). Errors are vkml.Error and its
subclasses (vkml.InvalidArgument is also a ValueError, vkml.IoError an OSError, ...), with vkml's
message. Sessions and upscalers serve one thread at a time; the GIL is released while the GPU works.
"""
import atexit as _atexit
from dataclasses import dataclass as _dataclass

from . import _vkml
from ._vkml import (  # noqa: F401
    DeviceLost,
    Error,
    InvalidArgument,
    IoError,
    NodeArg,
    OutOfDeviceMemory,
    OutOfHostMemory,
    Profile,
    Timeout,
    Unsupported,
    Upscaler,
    VulkanError,
    device_count,
    device_name,
    upscale_video,
)
from . import ops  # noqa: F401
from ._session import InferenceSession, RunOptions, SessionOptions, get_available_providers  # noqa: F401

__version__ = _vkml.__version__

__all__ = [
    "DeviceInfo", "DeviceLost", "Error", "InferenceSession", "InvalidArgument", "IoError", "NodeArg",
    "OutOfDeviceMemory", "OutOfHostMemory", "Profile", "RunOptions", "SessionOptions", "Timeout", "Unsupported",
    "Upscaler", "VulkanError", "device_count", "device_name", "devices", "get_available_providers", "ops",
    "upscale", "upscale_video",
]


@_dataclass(frozen=True)
class DeviceInfo:
    """A Vulkan device as vkml sees it. Pass it (or its index) as device= anywhere."""

    index: int
    name: str
    type: str  # "discrete", "integrated", "virtual", "cpu" or "other"
    memory: int  # bytes of device-local memory
    fp16: bool  # 16-bit storage: f16 tensors (precision="f16" uses them)
    fp16_math: bool  # f16 arithmetic in shaders
    coopmat: bool  # VK_NV_cooperative_matrix: tensor cores for Conv, Gemm, MatMul in f16
    driver: str
    api_version: str
    timestamps: bool  # GPU timestamps: profile=True works


def devices():
    """Every Vulkan device the loader sees, in the order device=<index> counts them."""
    return [DeviceInfo(**d) for d in _vkml._device_infos()]


def upscale(image, model="anime4k-m", *, scale=2, fp32=False, tile=0, device=None):
    """Upscales an (H, W, 3) RGB image, uint8 (0..255), uint16 (0..65535), float16 or float32
    (0..1), with a super-resolution model: anime4k-s|m|l (2x), esrgan-slim|medium|thick (2, 3, 4
    or 8x) or a model file. Returns an array of the same dtype (bit depth kept); other dtypes raise
    TypeError. For many images, make one vkml.Upscaler and call it."""
    return Upscaler(model, scale=scale, fp32=fp32, tile=tile, device=device)(image)


# Devices go before the interpreter does (sessions still alive keep theirs until collected).
_atexit.register(_vkml._release_devices)
