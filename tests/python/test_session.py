"""vkml.InferenceSession: ONNX Runtime's calls, results equal to the C++ Session's (through the
`vkml run` command), free dimensions, profiling, errors and threads."""
import json
import subprocess
import threading
import time

import numpy as np
import pytest

import vkml
from conftest import require_model


def rand(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def cpp_session_outputs(tool, model, name, x, tmp_path, fp32):
    """The model's outputs from the C++ Session, as `vkml run` writes them."""
    np.save(tmp_path / "x.npy", x)
    args = [tool, "run", str(model), "--input", f"{name}={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path / "out")]
    subprocess.run(args + ["--precision", "fp32" if fp32 else "f16"], check=True, capture_output=True)
    return tmp_path / "out"


@pytest.mark.parametrize("precision", ["f32", "f16"])
def test_onnx_model_equals_the_cpp_session(fixtures, tool, tmp_path, precision):
    model = fixtures / "conv_relu.onnx"
    x = rand((1, 3, 7, 5), seed=3)
    out_dir = cpp_session_outputs(tool, model, "x", x, tmp_path, fp32=precision == "f32")
    sess = vkml.InferenceSession(model, precision=precision)
    y, mean = sess.run(None, {"x": x})
    assert y.shape == (1, 4, 7, 5) and y.dtype == np.float32 and mean.shape == (1, 4, 1, 1)
    np.testing.assert_array_equal(y, np.load(out_dir / "y.npy"))
    np.testing.assert_array_equal(mean, np.load(out_dir / "mean.npy"))
    # and about what NumPy says the model computes: 2 * LeakyRelu(Conv(x, w, b), 0.125)
    w = (np.arange(4 * 3 * 3 * 3, dtype=np.float32) * 0.01).reshape(4, 3, 3, 3)
    b = np.array([0.5, -0.5, 1.0, -1.0], np.float32)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.einsum("nchwij,mcij->nmhw", np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3)), w)
    conv += b[None, :, None, None]
    want = 2 * np.where(conv > 0, conv, 0.125 * conv)
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-4 if precision == "f32" else 3e-2)


def test_precision_auto_keeps_tiny_activations_in_f32(fixtures):
    """y = x * 1e-4 * 1e-4 * 1e4 * 1e4: f16 flushes the 1e-8 activations to zero, the f16 guard does not."""
    model = fixtures / "tiny_activations.onnx"
    x = rand((1, 3, 7, 5), seed=5)
    x = np.copysign(0.5 + 0.5 * np.abs(x), x).astype(np.float32)
    if not vkml.devices()[0].fp16:
        pytest.skip("no 16-bit storage: f16 is f32 here")
    (zeros,) = vkml.InferenceSession(model, precision="f16").run(None, {"x": x})
    assert not zeros.any()
    (y,) = vkml.InferenceSession(model, precision="auto").run(None, {"x": x})
    np.testing.assert_allclose(y, x, rtol=3e-3, atol=0)
    with pytest.raises(ValueError, match="precision must be"):
        vkml.InferenceSession(model, precision="fast")


def test_inputs_outputs_and_free_dimensions(fixtures):
    sess = vkml.InferenceSession(fixtures / "conv_relu.onnx")
    (i,) = sess.get_inputs()
    assert (i.name, i.shape, i.type, i.dtype) == ("x", ["N", 3, "H", "W"], "tensor(float)", np.float32)
    assert [o.name for o in sess.get_outputs()] == ["y", "mean"]
    # Free dimensions take each run's sizes.
    for shape in [(1, 3, 4, 4), (2, 3, 6, 3), (1, 3, 4, 4)]:
        y, mean = sess.run(None, {"x": rand(shape)})
        assert y.shape == (shape[0], 4) + shape[2:] and mean.shape == (shape[0], 4, 1, 1)
    # free_dims fixes them at construction: the shapes are static, and checked.
    fixed = vkml.InferenceSession(fixtures / "conv_relu.onnx", free_dims={"N": 1, "H": 6, "W": 5})
    assert fixed.get_inputs()[0].shape == [1, 3, 6, 5]
    assert fixed.get_outputs()[0].shape == [1, 4, 6, 5]
    with pytest.raises(ValueError, match=r"input 'x' has shape \[1, 3, 6, 5\] in this session; got an array of shape \(1, 3, 6, 6\)"):
        fixed.run(None, {"x": rand((1, 3, 6, 6))})
    with pytest.raises(vkml.InvalidArgument, match="batch"):
        vkml.InferenceSession(fixtures / "conv_relu.onnx", free_dims={"batch": 1})


def test_output_names_select_and_order(fixtures):
    sess = vkml.InferenceSession(fixtures / "conv_relu.onnx", precision="f32")
    x = rand((1, 3, 4, 4), seed=1)
    y, mean = sess.run(None, {"x": x})
    (m2, y2) = sess.run(["mean", "y"], {"x": x})
    np.testing.assert_array_equal(m2, mean)
    np.testing.assert_array_equal(y2, y)
    with pytest.raises(ValueError, match="unknown output 'z': the model's outputs are 'y', 'mean'"):
        sess.run(["z"], {"x": x})


def test_bad_inputs(fixtures):
    sess = vkml.InferenceSession(fixtures / "conv_relu.onnx")
    x = rand((1, 3, 4, 4))
    with pytest.raises(TypeError, match=r"input 'x' is tensor\(float\), that is numpy.float32; got a float64 array"):
        sess.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(TypeError, match="float32; got a int32 array"):
        sess.run(None, {"x": x.astype(np.int32)})
    with pytest.raises(ValueError, match=r"input 'x' has shape \[N, 3, H, W\]; got an array of shape \(1, 4, 4, 4\)"):
        sess.run(None, {"x": rand((1, 4, 4, 4))})
    with pytest.raises(ValueError, match=r"got an array of shape \(3, 4, 4\)"):
        sess.run(None, {"x": rand((3, 4, 4))})
    with pytest.raises(ValueError, match="unknown input 'X': the model's inputs are 'x'"):
        sess.run(None, {"X": x})
    with pytest.raises(ValueError, match="missing input 'x'"):
        sess.run(None, {})
    with pytest.raises(TypeError, match="as a dict"):
        sess.run(None, [x])
    with pytest.raises(TypeError, match="not a str"):
        sess.run("y", {"x": x})
    # A nested list is taken as the input's dtype; non-contiguous arrays are fine.
    (y1, _) = sess.run(None, {"x": x.tolist()})
    (y2, _) = sess.run(None, {"x": np.asfortranarray(x)})
    np.testing.assert_array_equal(y1, y2)


def test_bad_sessions(fixtures, tmp_path):
    with pytest.raises(vkml.IoError) as e:
        vkml.InferenceSession(tmp_path / "missing.onnx")
    assert isinstance(e.value, OSError) and "missing.onnx" in str(e.value)
    with pytest.raises(ValueError, match='precision must be "f16"'):
        vkml.InferenceSession(fixtures / "chain.onnx", precision="int8")
    with pytest.raises(vkml.Error, match="bad_cycle.onnx") as e:
        vkml.InferenceSession(fixtures / "bad_cycle.onnx")
    assert isinstance(e.value, ValueError) and e.value.code == "InvalidArgument"


def test_closed_session(fixtures):
    sess = vkml.InferenceSession(fixtures / "chain.onnx")
    x = np.array([[-1, 0, 1, 2]], np.float32)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(y, -1 / (1 + np.exp(-np.maximum(x, 0))), atol=1e-3)
    sess.close()
    assert sess.closed and "closed" in repr(sess)
    for call in (lambda: sess.run(None, {"x": x}), sess.get_inputs, sess.get_outputs):
        with pytest.raises(ValueError, match="is closed"):
            call()
    with vkml.InferenceSession(fixtures / "chain.onnx") as s:
        s.run(None, {"x": x})
    assert s.closed


def test_tfjs_model(fixtures):
    sess = vkml.InferenceSession(fixtures / "tfjs_small" / "model.json", precision="f32")
    (i,) = sess.get_inputs()
    assert i.shape == ["batch", 2, "height", "width"]  # NHWC in the file, NCHW in vkml
    (y,) = sess.run(None, {i.name: rand((1, 2, 6, 5))})
    assert y.dtype == np.float32 and y.ndim == 4 and y.shape[0] == 1 and np.isfinite(y).all()


def test_anime4k_model_equals_the_cpp_session(tool, tmp_path):
    model = require_model("websr/weights/anime4k/cnn-2x-s-rl.json")
    sess = vkml.InferenceSession(model)
    (i,) = sess.get_inputs()
    x = np.random.default_rng(5).uniform(0, 1, (1, 3, 12, 10)).astype(np.float32)
    (y,) = sess.run(None, {i.name: x})
    assert y.shape == (1, 3, 24, 20)
    out_dir = cpp_session_outputs(tool, model, i.name, x, tmp_path, fp32=False)
    np.testing.assert_array_equal(y, np.load(out_dir / f"{sess.get_outputs()[0].name}.npy"))


def test_profile(fixtures, tmp_path):
    trace = tmp_path / "trace.json"
    sess = vkml.InferenceSession(fixtures / "conv_relu.onnx", profile=True, profile_file=str(trace))
    assert sess.last_profile is None
    with pytest.raises(RuntimeError, match="nothing profiled yet"):
        sess.end_profiling()
    x = rand((1, 3, 5, 5))
    got = sess.run(None, {"x": x})
    # One GPU run gives both the results and the times (it used to run the model twice).
    assert sess._model_runs == 1
    plain = vkml.InferenceSession(fixtures / "conv_relu.onnx")
    for a, b in zip(got, plain.run(None, {"x": x})):
        np.testing.assert_array_equal(a, b)
    p = sess.last_profile
    assert p.records and p.total_us > 0
    assert {r["op_type"] for r in p.records} >= {"Conv"}
    assert all(r["duration_us"] >= 0 for r in p.records)
    assert "by op type" in p.table()
    assert sess.end_profiling() == str(trace)
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert len(events) >= len(p.records)
    with pytest.raises(RuntimeError, match="profiling is off"):
        vkml.InferenceSession(fixtures / "chain.onnx").end_profiling()


def test_one_thread_at_a_time(fixtures):
    """A second thread calling run() while the first is inside it gets a clear error (the GIL is
    released during the GPU work, so it can get there); separate sessions run side by side."""
    sess = vkml.InferenceSession(fixtures / "conv_relu.onnx", precision="f32")
    x = rand((1, 3, 96, 96))
    want = sess.run(None, {"x": x})
    refused, other = [], []

    def calls(until):
        while not refused and time.monotonic() < until:
            try:
                sess.run(None, {"x": x})
            except RuntimeError as e:
                (refused if "already in use by another thread" in str(e) else other).append(e)
            except Exception as e:  # noqa: BLE001
                other.append(e)
                return

    deadline = time.monotonic() + 60
    t = threading.Thread(target=calls, args=(deadline,))
    t.start()
    calls(deadline)
    t.join()
    assert not other, other
    assert refused, "run() from a second thread never reported the first one"
    assert "one thread at a time" in str(refused[0])
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], want[0])  # and it still works

    results = [None, None]

    def own_session(k):
        with vkml.InferenceSession(fixtures / "conv_relu.onnx", precision="f32") as s:
            results[k] = s.run(None, {"x": x})

    threads = [threading.Thread(target=own_session, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for r in results:
        np.testing.assert_array_equal(r[0], want[0])


def test_sequence_inputs_and_absent_inputs(fixtures):
    # sequence_optional.onnx: joined = ConcatFromSequence(seq, axis 0), has_bias = OptionalHasElement(bias)
    model = fixtures / "sequence_optional.onnx"
    a, b = rand((2, 3), seed=1), rand((4, 3), seed=2)
    sess = vkml.InferenceSession(model, precision="f32", sequence_inputs={"seq": [[2, 3], [4, 3]]},
                                 absent_inputs=["bias"])
    assert [(i.name, i.shape) for i in sess.get_inputs()] == [("seq[0]", [2, 3]), ("seq[1]", [4, 3])]
    joined, has_bias = sess.run(None, {"seq": [a, b]})
    np.testing.assert_array_equal(joined, np.concatenate([a, b]))
    assert has_bias.dtype == np.bool_ and has_bias.shape == () and not has_bias
    # The sequence's tensors by their own names, as get_inputs() lists them.
    (again,) = sess.run(["joined"], {"seq[0]": a, "seq[1]": b})
    np.testing.assert_array_equal(again, joined)
    with pytest.raises(ValueError, match=r"input 'seq' is a sequence of 2 tensors in this session \(sequence_inputs\); got 3"):
        sess.run(None, {"seq": [a, b, a]})
    with pytest.raises(TypeError, match="input 'seq' is a sequence: feed a list of arrays"):
        sess.run(None, {"seq": a})
    with pytest.raises(ValueError, match=r"input 'seq\[1\]' has shape \[4, 3\] in this session"):
        sess.run(None, {"seq": [a, a]})

    # The optional holding its tensor: an ordinary input, whose free dimension B takes each run's
    # size (a session per size); a sequence of one, fed as a tuple.
    present = vkml.InferenceSession(model, precision="f16", sequence_inputs={"seq": [[1, 3]]})
    assert [(i.name, i.shape) for i in present.get_inputs()] == [("seq[0]", [1, 3]), ("bias", ["B"])]
    for size in (3, 5):
        joined, has_bias = present.run(None, {"seq": (a[:1],), "bias": np.ones(size, np.float32)})
        np.testing.assert_allclose(joined, a[:1], rtol=1e-3, atol=1e-3)
        assert has_bias

    with pytest.raises(vkml.InvalidArgument, match="sequence_inputs names 'nope', which is not an input of the model"):
        vkml.InferenceSession(model, sequence_inputs={"nope": [[1]]})
    with pytest.raises(vkml.InvalidArgument, match="absent_inputs names 'nope'"):
        vkml.InferenceSession(model, sequence_inputs={"seq": [[1, 3]]}, absent_inputs=["nope"])
    with pytest.raises(ValueError, match="both in sequence_inputs and in absent_inputs"):
        vkml.InferenceSession(model, sequence_inputs={"seq": [[1, 3]]}, absent_inputs=["seq"])
