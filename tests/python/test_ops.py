"""vkml.ops: conv through the operator API, any op through vkml.ops.run, against NumPy."""
import numpy as np
import pytest

import vkml


def rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


def conv_ref(x, w, b=None, stride=1, pad=0, group=1):
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i:i + stride * oh:stride, j:j + stride * ow:stride]
                y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
    if b is not None:
        y += b[None, :, None, None]
    return y


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float16, 2e-2)])
def test_conv(dtype, tol):
    x, w, b = rand((1, 5, 9, 7), 1, dtype), rand((6, 5, 3, 3), 2, dtype), rand((6,), 3, dtype)
    y = vkml.ops.conv(x, w, b, pads=[1, 1, 1, 1], activation="relu")
    assert y.dtype == dtype and y.shape == (1, 6, 9, 7)
    np.testing.assert_allclose(y, np.maximum(conv_ref(x, w, b, pad=1), 0), atol=tol, rtol=tol)
    # strides, groups, a residual and a parameterized activation
    w2 = rand((4, 1, 3, 3), 4, dtype)
    r = rand((1, 4, 4, 3), 5, dtype)
    x2 = rand((1, 4, 9, 7), 6, dtype)
    y2 = vkml.ops.conv(x2, w2, strides=[2, 2], group=4, residual=r, activation="leaky_relu", alpha=0.5)
    ref = conv_ref(x2, w2, stride=2, group=4) + r
    np.testing.assert_allclose(y2, np.where(ref > 0, ref, 0.5 * ref), atol=tol, rtol=tol)


def test_conv_errors():
    x, w = rand((1, 2, 5, 5)), rand((3, 2, 3, 3))
    with pytest.raises(TypeError, match="every array must have x's dtype"):
        vkml.ops.conv(x, w.astype(np.float16))
    with pytest.raises(TypeError, match="float32 or float16"):
        vkml.ops.conv(x.astype(np.float64), w)
    with pytest.raises(ValueError, match="unknown activation 'swishy'"):
        vkml.ops.conv(x, w, activation="swishy")
    with pytest.raises(vkml.InvalidArgument, match="Conv"):
        vkml.ops.conv(x, rand((3, 4, 3, 3)))  # 4 input channels in W, 2 in X
    with pytest.raises(vkml.InvalidArgument, match="residual"):
        vkml.ops.conv(x, w, residual=rand((1, 3, 5, 5)))


def test_generic_ops():
    x = rand((2, 3, 4), 7)
    s = vkml.ops.run("Softmax", x, axis=1)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(s, e / e.sum(axis=1, keepdims=True), atol=1e-6)
    y = rand((4,), 8)
    np.testing.assert_allclose(vkml.ops.run("Add", x, y), x + y, atol=1e-6)
    np.testing.assert_allclose(vkml.ops.run("Mul", x, 2.5), 2.5 * x, atol=1e-6)  # a Python float: float32
    np.testing.assert_array_equal(vkml.ops.run("Transpose", x, perm=[2, 0, 1]), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(vkml.ops.run("Reshape", x, np.array([6, 4])), x.reshape(6, 4))
    values, indices = vkml.ops.run("TopK", x, np.array([2]), outputs=2, axis=-1)
    order = np.argsort(-x, axis=-1, kind="stable")[..., :2]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_allclose(values, np.take_along_axis(x, order, axis=-1), atol=0)
    h = x.astype(np.float16)
    r = vkml.ops.run("Relu", h)
    assert r.dtype == np.float16
    np.testing.assert_array_equal(r, np.maximum(h, 0))
    img = rand((1, 1, 2, 3), 9)
    up = vkml.ops.run("Resize", img, None, np.array([1, 1, 2, 2], np.float32), constants=[2], mode="nearest")
    np.testing.assert_array_equal(up, img.repeat(2, axis=2).repeat(2, axis=3))
    assert any(o["type"] == "Conv" for o in vkml.ops.supported())


def test_generic_op_errors():
    x = rand((2, 3), 1)
    with pytest.raises(vkml.Error, match="NoSuchOp"):
        vkml.ops.run("NoSuchOp", x)
    with pytest.raises(TypeError, match="attribute 'axis' is a dict"):
        vkml.ops.run("Softmax", x, axis={})
    with pytest.raises(TypeError, match="float64 is not one vkml runs"):
        vkml.ops.run("Relu", x.astype(np.float64))
    with pytest.raises(ValueError, match="nothing for the GPU to run"):
        vkml.ops.run("Neg", np.array([1, 2]))
    with pytest.raises(ValueError, match="constants lists input 3"):
        vkml.ops.run("Relu", x, constants=[3])
