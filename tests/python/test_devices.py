"""Device enumeration (vkml.devices, device_count, device_name) and device= arguments."""
import re

import numpy as np
import pytest

import vkml


def test_devices_describe_every_device():
    devices = vkml.devices()
    assert len(devices) == vkml.device_count() >= 1
    for i, d in enumerate(devices):
        assert d.index == i
        assert d.name == vkml.device_name(i)
        assert d.type in ("discrete", "integrated", "virtual", "cpu", "other")
        assert d.memory > 0
        assert isinstance(d.fp16, bool) and isinstance(d.coopmat, bool)
        assert re.match(r"\d+\.\d+\.\d+", d.api_version)
    assert "DeviceInfo(index=0" in repr(devices)


@pytest.mark.parametrize("index", [vkml.device_count(), 99, -1])
def test_invalid_device_index_names_the_valid_range(index):
    n = vkml.device_count()
    with pytest.raises(ValueError, match=rf"device index {index} is out of range: .*0\.\.{n - 1}"):
        vkml.device_name(index)
    with pytest.raises(ValueError, match=r"0\.\." + str(n - 1)):
        vkml.ops.run("Relu", np.ones(3, np.float32), device=index)


def test_device_arguments(fixtures):
    x = np.array([-1.0, 2.0], np.float32)
    first = vkml.devices()[0]
    for device in (None, 0, first, first.name[:4]):
        np.testing.assert_array_equal(vkml.ops.run("Relu", x, device=device), [0.0, 2.0])
    with pytest.raises(TypeError, match="device must be"):
        vkml.ops.run("Relu", x, device=1.5)
    with pytest.raises(TypeError, match="not a bool"):
        vkml.ops.run("Relu", x, device=True)
    with pytest.raises(vkml.InvalidArgument, match="no Vulkan device matches 'no such gpu'"):
        vkml.ops.run("Relu", x, device="no such gpu")
    with vkml.InferenceSession(fixtures / "chain.onnx", device=0) as s:
        assert s._device["name"] == first.name


def test_version():
    assert re.match(r"\d+\.\d+\.\d+", vkml.__version__)
