"""vkml.upscale / vkml.Upscaler on arrays, and vkml.upscale_video on the bundled clip."""
import pathlib

import numpy as np
import pytest

import vkml
from conftest import require_model

CLIP = pathlib.Path(__file__).resolve().parents[2] / "assets" / "clips" / "pedestrians.mp4"


@pytest.fixture
def anime4k_s():
    return require_model("websr/weights/anime4k/cnn-2x-s-rl.json")


def test_upscale_arrays_equal_the_session(anime4k_s):
    rng = np.random.default_rng(2)
    image = rng.integers(0, 256, (10, 13, 3), dtype=np.uint8)
    up = vkml.Upscaler("anime4k-s", fp32=True)
    assert up.scale == 2 and "anime4k-s" in up.model and up.model_path == str(anime4k_s)
    big = up(image.astype(np.float32) / 255)
    assert big.shape == (20, 26, 3) and big.dtype == np.float32
    # The same model through a session, NCHW.
    sess = vkml.InferenceSession(anime4k_s, precision="f32")
    (i,) = sess.get_inputs()
    (y,) = sess.run(None, {i.name: (image.astype(np.float32) / 255).transpose(2, 0, 1)[None]})
    np.testing.assert_allclose(big, y[0].transpose(1, 2, 0), atol=1e-5)
    # uint8 in, uint8 out: rounded and clamped.
    small = vkml.upscale(image, "anime4k-s", fp32=True)
    assert small.dtype == np.uint8 and small.shape == (20, 26, 3)
    np.testing.assert_array_equal(small, np.round(np.clip(big, 0, 1) * 255).astype(np.uint8))


def test_upscale_keeps_the_bit_depth(anime4k_s):
    """uint16 (a 16-bit PNG's pixels) and float16 images come back in their own dtype, at their
    precision: the same values as the float32 run, rounded to 16 bits or to half floats."""
    rng = np.random.default_rng(3)
    image = rng.integers(0, 65536, (9, 11, 3), dtype=np.uint16)
    up = vkml.Upscaler("anime4k-s", fp32=True)
    ref = up(image.astype(np.float32) / 65535)
    deep = up(image)
    assert deep.dtype == np.uint16 and deep.shape == (18, 22, 3)
    want = np.round(np.clip(ref, 0, 1) * 65535).astype(np.int64)
    # One unit of 65535 either way: the uint16 -> 0..1 division is done in float32 on both sides.
    assert np.abs(deep.astype(np.int64) - want).max() <= 1
    # More than 8 bits survive: the result is not an 8-bit image scaled up.
    assert np.any(deep % 257 != 0)
    half = up((image.astype(np.float32) / 65535).astype(np.float16))
    assert half.dtype == np.float16 and half.shape == (18, 22, 3)
    np.testing.assert_allclose(half.astype(np.float32), ref, atol=4e-3)
    # Non-contiguous views are read through their strides.
    np.testing.assert_array_equal(up(np.ascontiguousarray(image[:, ::-1])), up(image[:, ::-1]))


def test_upscale_errors(anime4k_s):
    up = vkml.Upscaler("anime4k-s")
    with pytest.raises(ValueError, match=r"shape \(height, width, 3\), not \(4, 4\)"):
        up(np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match=r"not \(4, 4, 4\)"):
        up(np.zeros((4, 4, 4), np.uint8))
    for dtype in (np.float64, np.int8, np.int16, np.uint32, np.int32, np.bool_):
        with pytest.raises(TypeError, match=r"uint8 \(0\.\.255\), uint16 \(0\.\.65535\), float16 or float32"):
            up(np.zeros((4, 4, 3), dtype))
    with pytest.raises(vkml.InvalidArgument, match="unknown model 'anime5k'"):
        vkml.Upscaler("anime5k")
    with pytest.raises(vkml.InvalidArgument, match="2x only"):
        vkml.Upscaler("anime4k-s", scale=3)
    with pytest.raises(vkml.IoError, match="no such model file"):
        vkml.Upscaler("/nonexistent/model.onnx")


def test_upscale_video(anime4k_s, tmp_path):
    calls = []
    out = tmp_path / "clip_x2.mp4"
    stats = vkml.upscale_video(CLIP, out, model="anime4k-s", frames=3, progress=calls.append)
    assert stats["frames"] == 3 and not stats["cancelled"]
    assert stats["input_size"] == (160, 120) and stats["output_size"] == (320, 240)
    assert pathlib.Path(stats["output"]) == out and out.stat().st_size > 0
    assert calls and calls[-1]["frames_done"] == 3


def test_upscale_video_stops_when_progress_raises(anime4k_s, tmp_path):
    class Stop(Exception):
        pass

    def progress(p):
        raise Stop

    with pytest.raises(Stop):
        vkml.upscale_video(CLIP, tmp_path / "a.mp4", model="anime4k-s", frames=200, progress=progress)
    with pytest.raises(vkml.IoError, match="no such file"):
        vkml.upscale_video(tmp_path / "missing.mp4", tmp_path / "b.mp4")
    with pytest.raises(TypeError, match="callable"):
        vkml.upscale_video(CLIP, tmp_path / "c.mp4", progress=3)


def test_upscale_video_damaged_input_raises_unless_tolerated(anime4k_s, tmp_path):
    # The bundled clip with bytes of its first frames scrambled (issue 14, item 5).
    data = bytearray(CLIP.read_bytes())
    for i in range(2000, 2400):
        data[i] ^= 0x5A
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(bytes(data))
    out = tmp_path / "out.mp4"
    with pytest.raises(vkml.InvalidArgument, match=r"bad\.mp4.*damaged.*tolerate_errors=True"):
        vkml.upscale_video(bad, out, model="anime4k-s", frames=3)
    assert not out.exists()
    stats = vkml.upscale_video(bad, out, model="anime4k-s", frames=3, tolerate_errors=True)
    assert stats["frames"] == 3 and out.stat().st_size > 0
