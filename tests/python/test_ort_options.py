"""ONNX Runtime's session arguments on vkml.InferenceSession (issue 17): sess_options, providers,
provider_options and run_options are mapped where they mean something for vkml, refused with a
clear exception where they cannot be honoured."""
import json
import warnings

import numpy as np
import pytest

import vkml


def rand(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def test_ort_call_shape(fixtures):
    """The line ONNX Runtime users type runs unchanged and gives the same results."""
    x = rand((1, 3, 5, 4))
    want = vkml.InferenceSession(fixtures / "conv_relu.onnx", precision="f32").run(None, {"x": x})
    so = vkml.SessionOptions()
    sess = vkml.InferenceSession(str(fixtures / "conv_relu.onnx"), so,
                                 providers=[("VkmlExecutionProvider", {"device_id": 0, "precision": "f32"})])
    got = sess.run(None, {"x": x}, vkml.RunOptions())
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert sess.get_providers() == ["VkmlExecutionProvider"]
    options = sess.get_provider_options()["VkmlExecutionProvider"]
    assert options["device_id"] == "0" and options["precision"] == "f32"
    assert sess.get_session_options() is so
    assert "VkmlExecutionProvider" in vkml.get_available_providers()
    assert isinstance(sess, vkml._vkml.InferenceSession)


def test_provider_lists(fixtures):
    model = fixtures / "conv_relu.onnx"
    # ONNX Runtime's parallel provider_options list; device ids as strings, as ORT gives them.
    s = vkml.InferenceSession(model, providers=["VkmlExecutionProvider"], provider_options=[{"device_id": "0"}])
    assert s.get_provider_options()["VkmlExecutionProvider"]["device_id"] == "0"
    # Code written for CUDA (with the usual CPU fallback) runs on a vkml device; CUDA's own
    # options are ignored with a warning, its device_id is the vkml device's index.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = vkml.InferenceSession(model, providers=[("CUDAExecutionProvider", {"device_id": 0,
                                                     "arena_extend_strategy": "kSameAsRequested"}),
                                                    "CPUExecutionProvider"])
    assert any("arena_extend_strategy" in str(w.message) for w in caught)
    assert s.get_providers() == ["VkmlExecutionProvider"]
    # CPUExecutionProvider alone: a CPU Vulkan driver (lavapipe), when there is one.
    cpus = [d for d in vkml.devices() if d.type == "cpu"]
    if cpus:
        s = vkml.InferenceSession(model, providers=["CPUExecutionProvider"])
        assert s.get_provider_options()["VkmlExecutionProvider"]["device_id"] == str(cpus[0].index)
        assert "CPUExecutionProvider" in vkml.get_available_providers()


def test_bad_providers(fixtures):
    model = fixtures / "conv_relu.onnx"
    with pytest.raises(ValueError, match="unknown execution provider 'OpenGLExecutionProvider'.*VkmlExecutionProvider"):
        vkml.InferenceSession(model, providers=["OpenGLExecutionProvider"])
    with pytest.raises(ValueError, match="has no option 'arena'; its options are device_id, precision"):
        vkml.InferenceSession(model, providers=[("VkmlExecutionProvider", {"arena": 1})])
    with pytest.raises(ValueError, match="provider_options has 2 entries for 1 providers"):
        vkml.InferenceSession(model, providers=["VkmlExecutionProvider"], provider_options=[{}, {}])
    with pytest.raises(ValueError, match="provider_options without providers"):
        vkml.InferenceSession(model, provider_options=[{}])
    with pytest.raises(TypeError, match="list of provider names.*not a str"):
        vkml.InferenceSession(model, providers="VkmlExecutionProvider")
    with pytest.raises(TypeError, match=r"providers\[0\] is a provider name"):
        vkml.InferenceSession(model, providers=[3])
    with pytest.raises(ValueError, match="providers is empty"):
        vkml.InferenceSession(model, providers=[])
    with pytest.raises(ValueError, match="device is given twice"):
        vkml.InferenceSession(model, device=0, providers=[("VkmlExecutionProvider", {"device_id": 0})])
    with pytest.raises(ValueError, match="contradicts the provider option"):
        vkml.InferenceSession(model, precision="f16", providers=[("VkmlExecutionProvider", {"precision": "f32"})])
    with pytest.raises(ValueError, match="valid"):  # an index past the devices: vkml's range message
        vkml.InferenceSession(model, providers=[("VkmlExecutionProvider", {"device_id": 99})])
    with pytest.raises(ValueError, match="precision must be"):
        vkml.InferenceSession(model, providers=[("VkmlExecutionProvider", {"precision": "int8"})])
    with pytest.raises(TypeError, match="does not take the model's bytes"):
        vkml.InferenceSession(model.read_bytes())


def test_session_options(fixtures, tmp_path, monkeypatch):
    model = fixtures / "conv_relu.onnx"
    so = vkml.SessionOptions()
    so.add_free_dimension_override_by_name("N", 1)
    so.add_free_dimension_override_by_name("H", 6)
    so.add_free_dimension_override_by_name("W", 5)
    so.graph_optimization_level = 99  # ONNX Runtime's CPU-side knobs: accepted, ignored
    so.intra_op_num_threads = 3
    so.enable_profiling = True
    so.profile_file_prefix = "ortstyle"
    sess = vkml.InferenceSession(model, so)
    assert sess.get_inputs()[0].shape == [1, 3, 6, 5]
    sess.run(None, {"x": rand((1, 3, 6, 5))})
    assert sess.last_profile is not None and sess._model_runs == 1
    monkeypatch.chdir(tmp_path)
    trace = sess.end_profiling()
    assert trace.startswith("ortstyle_") and trace.endswith(".json")
    assert json.loads((tmp_path / trace).read_text())
    # free_dims= and the options agree or it is an error.
    with pytest.raises(ValueError, match="free dimension 'N' is 2 in free_dims and 1 in sess_options"):
        vkml.InferenceSession(model, so, free_dims={"N": 2})
    with pytest.raises(ValueError, match="contradicts sess_options.enable_profiling"):
        vkml.InferenceSession(model, so, profile=False)
    bad = vkml.SessionOptions()
    bad.optimized_model_filepath = str(tmp_path / "opt.onnx")
    with pytest.raises(ValueError, match="does not write optimized models"):
        vkml.InferenceSession(model, bad)
    with pytest.raises(ValueError, match="positive int"):
        bad.add_free_dimension_override_by_denotation("DATA_BATCH", 0)
    with pytest.raises(TypeError, match="denotation is a str"):
        bad.add_free_dimension_override_by_denotation(1, 1)
    with pytest.raises(ValueError, match="positive int"):
        bad.add_free_dimension_override_by_name("N", 0)
    with pytest.raises(TypeError, match="sess_options is a vkml.SessionOptions"):
        vkml.InferenceSession(model, {"enable_profiling": True})


def test_free_dimension_override_by_denotation(fixtures):
    """ONNX Runtime's override by denotation (DirectML's documented way to fix the batch): denoted.onnx
    is y = x + z, x [B (DATA_BATCH), 2, L (DATA_FEATURE)], z [? (DATA_BATCH), 2, 1]."""
    model = fixtures / "denoted.onnx"
    so = vkml.SessionOptions()
    so.add_free_dimension_override_by_denotation("DATA_BATCH", 3)
    so.add_free_dimension_override_by_denotation("data_feature", 5)  # case does not matter, as in ORT
    sess = vkml.InferenceSession(model, so, precision="f32")
    assert [i.shape for i in sess.get_inputs()] == [[3, 2, 5], [3, 2, 1]]
    x, z = rand((3, 2, 5), 1), rand((3, 2, 1), 2)
    y, = sess.run(None, {"x": x, "z": z})
    np.testing.assert_array_equal(y, x + z)
    # The keyword form, and the two agreeing or an error.
    kw = vkml.InferenceSession(model, precision="f32", free_dim_denotations={"DATA_BATCH": 3, "DATA_FEATURE": 5})
    assert [i.shape for i in kw.get_inputs()] == [[3, 2, 5], [3, 2, 1]]
    with pytest.raises(ValueError, match="'DATA_BATCH' is 2 in free_dim_denotations and 3 in sess_options"):
        vkml.InferenceSession(model, so, free_dim_denotations={"DATA_BATCH": 2})
    with pytest.raises(vkml.Error, match="no input dimension of the model has the denotation 'DATA_TIME'"):
        vkml.InferenceSession(model, free_dim_denotations={"DATA_TIME": 2})


def test_run_options(fixtures):
    sess = vkml.InferenceSession(fixtures / "conv_relu.onnx", precision="f32")
    x = rand((1, 3, 4, 4))
    ro = vkml.RunOptions()
    ro.run_tag = "tagged"
    ro.log_severity_level = 0
    (y,) = sess.run(["y"], {"x": x}, ro)
    np.testing.assert_array_equal(y, sess.run(["y"], {"x": x})[0])
    ro.terminate = True
    with pytest.raises(RuntimeError, match="terminate is set"):
        sess.run(None, {"x": x}, ro)
    with pytest.raises(TypeError, match="run_options is a vkml.RunOptions"):
        sess.run(None, {"x": x}, {"terminate": False})
    # Keyword form, as ONNX Runtime names it.
    (y2,) = sess.run(output_names=["y"], input_feed={"x": x}, run_options=None)
    np.testing.assert_array_equal(y, y2)
