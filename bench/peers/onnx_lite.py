"""A small ONNX reader and graph interpreter, pure Python (no onnx, no numpy needed).

The reader decodes the protobuf wire format of the fields a model file needs (graph, nodes,
attributes, initializers, inputs/outputs). The interpreter walks the graph once, in topological
order, for a fixed input shape, folding shape arithmetic (Shape, Gather, Concat of constants) in
Python and calling a backend for every tensor op: `ShapeBackend` only propagates shapes,
`CodegenBackend` writes a straight-line PyTorch `forward` (torch_peers.py executes it, so eager
mode, CUDA graphs and torch.compile all see plain torch ops). Neither needs torch to run here.
"""

import math
import struct

# TensorProto.DataType -> (struct code, bytes per element, name)
DTYPES = {
    1: ("f", 4, "float32"), 2: ("B", 1, "uint8"), 3: ("b", 1, "int8"), 4: ("H", 2, "uint16"),
    5: ("h", 2, "int16"), 6: ("i", 4, "int32"), 7: ("q", 8, "int64"), 9: ("?", 1, "bool"),
    10: ("e", 2, "float16"), 11: ("d", 8, "float64"), 12: ("I", 4, "uint32"), 13: ("Q", 8, "uint64"),
}


# ---------------------------------------------------------------- protobuf wire format

def _varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf):
    """(field number, wire type, value) for every field of one message; value is an int for
    varints, bytes for fixed32/fixed64/length-delimited."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, pos = _varint(buf, pos)
        elif wt == 1:
            v, pos = buf[pos:pos + 8], pos + 8
        elif wt == 2:
            n, pos = _varint(buf, pos)
            v, pos = buf[pos:pos + n], pos + n
        elif wt == 5:
            v, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError("protobuf: unsupported wire type %d" % wt)
        yield num, wt, v


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _ints(wt, v):
    """A repeated int64 field's values, packed or not."""
    if wt == 0:
        return [_signed(v)]
    out, pos = [], 0
    while pos < len(v):
        x, pos = _varint(v, pos)
        out.append(_signed(x))
    return out


def _floats(wt, v):
    if wt == 5:
        return [struct.unpack("<f", v)[0]]
    return list(struct.unpack("<%df" % (len(v) // 4), v))


# ---------------------------------------------------------------- model structure

class Tensor:
    """An initializer or constant: dims, dtype and the raw little-endian bytes (decoded on demand)."""

    def __init__(self, name="", dims=(), dtype=1, raw=b"", values=None):
        self.name, self.dims, self.dtype, self.raw, self._values = name, list(dims), dtype, raw, values

    @property
    def size(self):
        return math.prod(self.dims) if self.dims else 1

    def values(self):
        """Flat list of Python numbers (for small tensors: shapes, scales, indices)."""
        if self._values is None:
            code, width, _ = DTYPES[self.dtype]
            n = len(self.raw) // width
            self._values = list(struct.unpack("<%d%s" % (n, code), self.raw[:n * width]))
        return self._values

    def nbytes(self):
        return self.size * DTYPES[self.dtype][1]


def _tensor(buf):
    t = Tensor()
    typed = []
    for num, wt, v in _fields(buf):
        if num == 1:
            t.dims += _ints(wt, v)
        elif num == 2:
            t.dtype = v
        elif num == 8:
            t.name = bytes(v).decode()
        elif num == 9:
            t.raw = bytes(v)
        elif num == 4:
            typed += _floats(wt, v)
        elif num in (5, 7):  # int32_data / int64_data (int32_data also carries f16/bool/int8 bits)
            typed += _ints(wt, v)
        elif num == 10:
            typed += list(struct.unpack("<%dd" % (len(v) // 8), v)) if wt == 2 else [struct.unpack("<d", v)[0]]
        elif num == 13 or (num == 14 and v == 1):
            raise ValueError("tensor %s: external data is not supported" % t.name)
    if not t.raw and typed:
        if t.dtype == 10:  # float16 bits in int32_data
            t.raw = struct.pack("<%dH" % len(typed), *typed)
        else:
            t._values = typed
            code, _, _ = DTYPES[t.dtype]
            t.raw = struct.pack("<%d%s" % (len(typed), code), *typed)
    return t


class Node:
    def __init__(self):
        self.inputs, self.outputs, self.name, self.op, self.domain, self.attrs = [], [], "", "", "", {}

    def attr(self, key, default=None):
        return self.attrs.get(key, default)

    def __repr__(self):
        return "%s(%s -> %s)" % (self.op, ",".join(self.inputs), ",".join(self.outputs))


def _attribute(buf):
    name, value, kind = "", None, 0
    ints, floats, strings = [], [], []
    for num, wt, v in _fields(buf):
        if num == 1:
            name = bytes(v).decode()
        elif num == 2:
            value = struct.unpack("<f", v)[0]
        elif num == 3:
            value = _signed(v)
        elif num == 4:
            value = bytes(v).decode(errors="replace")
        elif num == 5:
            value = _tensor(v)
        elif num == 6:
            value = _graph(v)
        elif num == 7:
            floats += _floats(wt, v)
        elif num == 8:
            ints += _ints(wt, v)
        elif num == 9:
            strings.append(bytes(v).decode(errors="replace"))
        elif num == 20:
            kind = v
    if kind == 6 or (value is None and floats):
        value = floats
    elif kind == 7 or (value is None and ints):
        value = ints
    elif kind == 8 or (value is None and strings):
        value = strings
    return name, value


def _node(buf):
    n = Node()
    for num, wt, v in _fields(buf):
        if num == 1:
            n.inputs.append(bytes(v).decode())
        elif num == 2:
            n.outputs.append(bytes(v).decode())
        elif num == 3:
            n.name = bytes(v).decode()
        elif num == 4:
            n.op = bytes(v).decode()
        elif num == 7:
            n.domain = bytes(v).decode()
        elif num == 5:
            k, val = _attribute(v)
            n.attrs[k] = val
    return n


def _value_info(buf):
    name, elem, dims = "", 0, []
    for num, wt, v in _fields(buf):
        if num == 1:
            name = bytes(v).decode()
        elif num == 2:  # TypeProto
            for n2, _, v2 in _fields(v):
                if n2 != 1:  # tensor_type
                    continue
                for n3, _, v3 in _fields(v2):
                    if n3 == 1:
                        elem = v3
                    elif n3 == 2:  # TensorShapeProto
                        for n4, _, v4 in _fields(v3):
                            if n4 != 1:
                                continue
                            d = None
                            for n5, _, v5 in _fields(v4):
                                if n5 == 1:
                                    d = _signed(v5)
                                elif n5 == 2:
                                    d = bytes(v5).decode()
                            dims.append(d)
    return name, elem, dims


class Graph:
    def __init__(self):
        self.nodes, self.initializers, self.inputs, self.outputs, self.name = [], {}, [], [], ""


def _graph(buf):
    g = Graph()
    for num, wt, v in _fields(buf):
        if num == 1:
            g.nodes.append(_node(v))
        elif num == 2:
            g.name = bytes(v).decode()
        elif num == 5:
            t = _tensor(v)
            g.initializers[t.name] = t
        elif num == 11:
            g.inputs.append(_value_info(v))
        elif num == 12:
            g.outputs.append(_value_info(v))
    return g


class Model:
    def __init__(self, path):
        with open(path, "rb") as f:
            buf = f.read()
        self.path, self.graph, self.opset = path, None, 0
        for num, wt, v in _fields(memoryview(buf)):
            if num == 7:
                self.graph = _graph(v)
            elif num == 8:
                domain, version = "", 0
                for n2, _, v2 in _fields(v):
                    if n2 == 1:
                        domain = bytes(v2).decode()
                    elif n2 == 2:
                        version = v2
                if domain in ("", "ai.onnx"):
                    self.opset = version
        if self.graph is None:
            raise ValueError("%s: no graph" % path)
        g = self.graph
        # Graph inputs that are not initializers are the real inputs.
        self.inputs = [(n, e, d) for n, e, d in g.inputs if n not in g.initializers]
        self.outputs = [n for n, _, _ in g.outputs]
        self.order = _topological(g)

    def op_counts(self):
        counts = {}
        for n in self.graph.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts


def _topological(g):
    produced = {o: i for i, n in enumerate(g.nodes) for o in n.outputs}
    order, state = [], {}
    for root in range(len(g.nodes)):
        stack = [(root, False)]
        while stack:
            i, done = stack.pop()
            if done:
                if state.get(i) != 2:
                    state[i] = 2
                    order.append(g.nodes[i])
                continue
            if state.get(i):
                continue
            state[i] = 1
            stack.append((i, True))
            for name in g.nodes[i].inputs:
                if name in produced and not state.get(produced[name]):
                    stack.append((produced[name], False))
    return order


# ---------------------------------------------------------------- interpreter

class Const(list):
    """A value known while walking the graph (shapes, indices): a flat list plus its dims. The
    interpreter folds ops on these in Python, the way exporters leave Shape->Gather->Concat
    chains in front of Reshape; only tensor data goes to the backend."""

    def __init__(self, values, dims=None):
        super().__init__(values)
        self.dims = list(dims) if dims is not None else [len(values)]


def _norm_axis(axis, rank):
    return axis + rank if axis < 0 else axis


def _conv_out(size, k, stride, dil, pad0, pad1):
    return (size + pad0 + pad1 - ((k - 1) * dil + 1)) // stride + 1


def _pool_out(size, k, stride, pad0, pad1, ceil_mode):
    f = math.ceil if ceil_mode else math.floor
    return int(f((size + pad0 + pad1 - k) / stride)) + 1


def _auto_pads(node, spatial, kernel, strides, dilations):
    pads = list(node.attr("pads", [0] * (2 * len(spatial))))
    mode = node.attr("auto_pad", "NOTSET")
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * len(spatial))
        for i, s in enumerate(spatial):
            out = math.ceil(s / strides[i])
            total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - s, 0)
            small, big = total // 2, total - total // 2
            pads[i], pads[i + len(spatial)] = (small, big) if mode == "SAME_UPPER" else (big, small)
    elif mode == "VALID":
        pads = [0] * (2 * len(spatial))
    return pads


class Interpreter:
    """Runs a Model with a backend. Backends implement the tensor ops listed in `OPS`; the
    interpreter handles attributes, constant folding and the shape bookkeeping."""

    def __init__(self, model, backend):
        self.model, self.b = model, backend
        self.params = {}  # initializer name -> backend tensor (weights) or Const (small ints)
        g = model.graph
        for name, t in g.initializers.items():
            self.params[name] = self._const_or_param(t)

    def _const_or_param(self, t):
        if t.dtype in (6, 7, 9) or (t.size <= 8 and t.dtype in (1, 10, 11) and len(t.dims) <= 1):
            return Const(t.values(), t.dims)
        return self.b.param(t)

    def run(self, *inputs):
        env = dict(self.params)
        for (name, _, _), x in zip(self.model.inputs, inputs):
            env[name] = x
        for node in self.model.order:
            args = [env[i] if i else None for i in node.inputs]
            outs = self.step(node, args)
            if not isinstance(outs, (list, tuple)) or isinstance(outs, Const):
                outs = [outs]
            for name, v in zip(node.outputs, outs):
                env[name] = v
        res = [env[o] for o in self.model.outputs]
        return res[0] if len(res) == 1 else res

    # Every op: (node, args) -> value or list of values.
    def step(self, node, a):
        op = node.op
        b = self.b
        fn = getattr(self, "op_" + op, None)
        if fn is None:
            raise NotImplementedError("ONNX op %s (node %s) is not supported by the peer interpreter" % (op, node.name))
        return fn(node, a, b)

    # ---- tensor ops
    def op_Conv(self, n, a, b):
        x, w = a[0], b.tensor(a[1])
        bias = b.tensor(a[2]) if len(a) > 2 and a[2] is not None else None
        ws = b.shape(w)
        k = list(n.attr("kernel_shape", ws[2:]))
        strides = list(n.attr("strides", [1] * len(k)))
        dil = list(n.attr("dilations", [1] * len(k)))
        pads = _auto_pads(n, b.shape(x)[2:], k, strides, dil)
        return b.conv(x, w, bias, strides, pads, dil, n.attr("group", 1))

    def op_Relu(self, n, a, b):
        return b.unary("relu", a[0])

    def op_Sigmoid(self, n, a, b):
        return b.unary("sigmoid", a[0])

    def op_Tanh(self, n, a, b):
        return b.unary("tanh", a[0])

    def op_Exp(self, n, a, b):
        return b.unary("exp", a[0])

    def op_Sqrt(self, n, a, b):
        return b.unary("sqrt", a[0])

    def op_Neg(self, n, a, b):
        if isinstance(a[0], Const):
            return Const([-v for v in a[0]], a[0].dims)
        return b.unary("neg", a[0])

    def op_LeakyRelu(self, n, a, b):
        return b.unary("leaky_relu", a[0], n.attr("alpha", 0.01))

    def op_HardSigmoid(self, n, a, b):
        return b.unary("hard_sigmoid", a[0], (n.attr("alpha", 0.2), n.attr("beta", 0.5)))

    def op_Clip(self, n, a, b):
        lo = a[1][0] if len(a) > 1 and a[1] is not None else n.attr("min", None)
        hi = a[2][0] if len(a) > 2 and a[2] is not None else n.attr("max", None)
        return b.unary("clip", a[0], (lo, hi))

    def _binary(self, kind, n, a, b):
        x, y = a[0], a[1]
        if isinstance(x, Const) and isinstance(y, Const):
            f = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
                 "div": lambda p, q: p // q if isinstance(p, int) and isinstance(q, int) else p / q}[kind]
            if len(x) == len(y):
                return Const([f(p, q) for p, q in zip(x, y)], x.dims)
            if len(y) == 1:
                return Const([f(p, y[0]) for p in x], x.dims)
            if len(x) == 1:
                return Const([f(x[0], q) for q in y], y.dims)
        return b.binary(kind, x, y)

    def op_Add(self, n, a, b):
        return self._binary("add", n, a, b)

    def op_Sub(self, n, a, b):
        return self._binary("sub", n, a, b)

    def op_Mul(self, n, a, b):
        return self._binary("mul", n, a, b)

    def op_Div(self, n, a, b):
        return self._binary("div", n, a, b)

    def op_Pow(self, n, a, b):
        return b.binary("pow", a[0], a[1])

    def op_MatMul(self, n, a, b):
        return b.matmul(b.tensor(a[0]), b.tensor(a[1]))

    def op_Gemm(self, n, a, b):
        return b.gemm(a[0], b.tensor(a[1]), a[2] if len(a) > 2 else None, n.attr("alpha", 1.0), n.attr("beta", 1.0),
                      n.attr("transA", 0), n.attr("transB", 0))

    def op_Concat(self, n, a, b):
        if all(isinstance(v, Const) for v in a):
            out = []
            for v in a:
                out += list(v)
            return Const(out)
        rank = len(b.shape(next(v for v in a if not isinstance(v, Const))))
        return b.concat([v for v in a], _norm_axis(n.attr("axis"), rank))

    def op_Split(self, n, a, b):
        x = a[0]
        shape = b.shape(x)
        axis = _norm_axis(n.attr("axis", 0), len(shape))
        sizes = list(a[1]) if len(a) > 1 and a[1] is not None else n.attr("split", None)
        if sizes is None:
            parts = n.attr("num_outputs", len(n.outputs))
            size = math.ceil(shape[axis] / parts)
            sizes = [min(size, shape[axis] - i * size) for i in range(parts)]
        return b.split(x, [int(s) for s in sizes], axis)

    def op_Slice(self, n, a, b):
        x = a[0]
        if len(a) > 1:
            starts, ends = list(a[1]), list(a[2])
            axes = list(a[3]) if len(a) > 3 and a[3] is not None else list(range(len(starts)))
            steps = list(a[4]) if len(a) > 4 and a[4] is not None else [1] * len(starts)
        else:
            starts, ends = n.attr("starts"), n.attr("ends")
            axes = n.attr("axes", list(range(len(starts))))
            steps = [1] * len(starts)
        if isinstance(x, Const):
            assert len(axes) == 1 and len(x.dims) == 1, "Slice on a constant: 1-D only"
            return Const(list(x)[slice(starts[0], ends[0], steps[0])])
        rank = len(b.shape(x))
        return b.slice(x, [int(v) for v in starts], [int(v) for v in ends],
                       [_norm_axis(int(v), rank) for v in axes], [int(v) for v in steps])

    def op_Reshape(self, n, a, b):
        x, target = a[0], list(a[1])
        shape = b.shape(x) if not isinstance(x, Const) else x.dims
        out = []
        for i, d in enumerate(target):
            out.append(shape[i] if d == 0 and not n.attr("allowzero", 0) else int(d))
        if -1 in out:
            known = math.prod(d for d in out if d != -1)
            out[out.index(-1)] = math.prod(shape) // known
        if isinstance(x, Const):
            return Const(list(x), out)
        return b.reshape(x, out)

    def op_Flatten(self, n, a, b):
        shape = b.shape(a[0])
        axis = _norm_axis(n.attr("axis", 1), len(shape))
        return b.reshape(a[0], [math.prod(shape[:axis]), math.prod(shape[axis:])])

    def op_Transpose(self, n, a, b):
        rank = len(b.shape(a[0]))
        return b.transpose(a[0], list(n.attr("perm", list(reversed(range(rank))))))

    def op_Softmax(self, n, a, b):
        rank = len(b.shape(a[0]))
        return b.softmax(a[0], _norm_axis(n.attr("axis", -1), rank))

    def op_MaxPool(self, n, a, b):
        k = list(n.attr("kernel_shape"))
        strides = list(n.attr("strides", [1] * len(k)))
        pads = _auto_pads(n, b.shape(a[0])[2:], k, strides, [1] * len(k))
        return b.maxpool(a[0], k, strides, pads, n.attr("ceil_mode", 0))

    def op_AveragePool(self, n, a, b):
        k = list(n.attr("kernel_shape"))
        strides = list(n.attr("strides", [1] * len(k)))
        pads = _auto_pads(n, b.shape(a[0])[2:], k, strides, [1] * len(k))
        return b.avgpool(a[0], k, strides, pads, n.attr("ceil_mode", 0), n.attr("count_include_pad", 0))

    def op_GlobalAveragePool(self, n, a, b):
        return b.global_avgpool(a[0])

    def op_BatchNormalization(self, n, a, b):
        return b.batchnorm(a[0], *[b.tensor(v) for v in a[1:5]], n.attr("epsilon", 1e-5))

    def op_InstanceNormalization(self, n, a, b):
        return b.instancenorm(a[0], b.tensor(a[1]), b.tensor(a[2]), n.attr("epsilon", 1e-5))

    def op_Pad(self, n, a, b):
        pads = list(a[1]) if len(a) > 1 and a[1] is not None else n.attr("pads")
        value = a[2][0] if len(a) > 2 and a[2] is not None else n.attr("value", 0.0)
        return b.pad(a[0], [int(p) for p in pads], n.attr("mode", "constant"), value)

    def op_Resize(self, n, a, b):
        x = a[0]
        shape = b.shape(x)
        scales = a[2] if len(a) > 2 and a[2] is not None and len(a[2]) else None
        sizes = a[3] if len(a) > 3 and a[3] is not None and len(a[3]) else None
        if sizes is not None:
            out = [int(s) for s in sizes]
        else:
            out = [int(math.floor(d * s)) for d, s in zip(shape, scales)]
        return b.resize(x, out, n.attr("mode", "nearest"), n.attr("coordinate_transformation_mode", "half_pixel"),
                        n.attr("nearest_mode", "round_prefer_floor"))

    def op_Upsample(self, n, a, b):
        shape = b.shape(a[0])
        scales = list(a[1]) if len(a) > 1 else n.attr("scales")
        out = [int(math.floor(d * s)) for d, s in zip(shape, scales)]
        return b.resize(a[0], out, n.attr("mode", "nearest"), "asymmetric", "floor")

    def op_DepthToSpace(self, n, a, b):
        return b.depth_to_space(a[0], n.attr("blocksize"), n.attr("mode", "DCR"))

    def op_ReduceMean(self, n, a, b):
        rank = len(b.shape(a[0]))
        axes = list(a[1]) if len(a) > 1 and a[1] is not None else n.attr("axes", list(range(rank)))
        return b.reduce_mean(a[0], [_norm_axis(v, rank) for v in axes], n.attr("keepdims", 1))

    def op_Identity(self, n, a, b):
        return a[0]

    def op_Cast(self, n, a, b):
        return a[0]  # f16 throughout; constants stay Python numbers

    # ---- shape ops: folded in Python
    def op_Shape(self, n, a, b):
        return Const(list(b.shape(a[0])))

    def op_Constant(self, n, a, b):
        t = n.attr("value")
        if isinstance(t, Tensor):
            return self._const_or_param(t)
        for key in ("value_ints", "value_floats"):
            if n.attr(key) is not None:
                return Const(list(n.attr(key)))
        for key in ("value_int", "value_float"):
            if n.attr(key) is not None:
                return Const([n.attr(key)], [])
        raise NotImplementedError("Constant %s: unsupported value" % n.name)

    def op_Gather(self, n, a, b):
        data, idx = a[0], a[1]
        if isinstance(data, Const) and isinstance(idx, Const):
            out = [data[int(i)] for i in idx]
            return Const(out, idx.dims)
        raise NotImplementedError("Gather on tensors (node %s)" % n.name)

    def op_Unsqueeze(self, n, a, b):
        x = a[0]
        if isinstance(x, Const):
            return Const(list(x), [1] + x.dims if x.dims == [] else [len(x)])
        axes = list(a[1]) if len(a) > 1 else n.attr("axes")
        shape = list(b.shape(x))
        for ax in sorted(_norm_axis(v, len(shape) + len(axes)) for v in axes):
            shape.insert(ax, 1)
        return b.reshape(x, shape)

    def op_Squeeze(self, n, a, b):
        x = a[0]
        shape = list(b.shape(x))
        axes = list(a[1]) if len(a) > 1 else n.attr("axes", [i for i, d in enumerate(shape) if d == 1])
        axes = {_norm_axis(v, len(shape)) for v in axes}
        return b.reshape(x, [d for i, d in enumerate(shape) if i not in axes])

    def op_ConstantOfShape(self, n, a, b):
        t = n.attr("value")
        v = t.values()[0] if isinstance(t, Tensor) else 0.0
        return b.full([int(d) for d in a[0]], v)


class ShapeBackend:
    """Shape-only execution: tensors are shape lists. Checks that a graph walks end to end with the
    interpreter's attribute handling, without torch."""

    class T:
        def __init__(self, shape):
            self.s = [int(d) for d in shape]

        def __repr__(self):
            return "T%s" % self.s

    def input(self, shape):
        return self.T(shape)

    def param(self, t):
        return self.T(t.dims)

    def shape(self, x):
        return list(x.dims) if isinstance(x, Const) else list(x.s)

    def tensor(self, x):
        """A backend tensor for an operand that must be one (weights, biases), constants included."""
        return self.T(x.dims) if isinstance(x, Const) else x

    def _t(self, x):
        return x if isinstance(x, self.T) else self.T(x.dims)

    def conv(self, x, w, bias, strides, pads, dil, group):
        xs, ws = x.s, w.s
        assert xs[1] == ws[1] * group, "conv channels %s vs weight %s group %d" % (xs, ws, group)
        k = ws[2:]
        sp = [_conv_out(xs[2 + i], k[i], strides[i], dil[i], pads[i], pads[i + len(k)]) for i in range(len(k))]
        return self.T([xs[0], ws[0]] + sp)

    def unary(self, kind, x, arg=None):
        return self._t(x)

    def binary(self, kind, x, y):
        xs, ys = self.shape(x), self.shape(y)
        r = max(len(xs), len(ys))
        xs, ys = [1] * (r - len(xs)) + xs, [1] * (r - len(ys)) + ys
        out = []
        for p, q in zip(xs, ys):
            assert p == q or p == 1 or q == 1, "broadcast %s vs %s" % (xs, ys)
            out.append(max(p, q))
        return self.T(out)

    def matmul(self, x, y):
        xs, ys = x.s, y.s
        assert xs[-1] == ys[-2]
        return self.T(xs[:-1] + ys[-1:])

    def gemm(self, x, y, c, alpha, beta, ta, tb):
        m = x.s[1] if ta else x.s[0]
        k = x.s[0] if ta else x.s[1]
        kk, nn = (y.s[1], y.s[0]) if tb else (y.s[0], y.s[1])
        assert k == kk, "gemm %s x %s" % (x.s, y.s)
        return self.T([m, nn])

    def concat(self, xs, axis):
        shapes = [self.shape(x) for x in xs]
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        for s in shapes:
            assert all(p == q for i, (p, q) in enumerate(zip(s, out)) if i != axis), "concat %s" % shapes
        return self.T(out)

    def split(self, x, sizes, axis):
        assert sum(sizes) == x.s[axis], "split %s of %s" % (sizes, x.s)
        outs = []
        for s in sizes:
            o = list(x.s)
            o[axis] = s
            outs.append(self.T(o))
        return outs

    def slice(self, x, starts, ends, axes, steps):
        out = list(x.s)
        for s, e, ax, st in zip(starts, ends, axes, steps):
            out[ax] = len(range(*slice(s, e, st).indices(out[ax])))
        return self.T(out)

    def reshape(self, x, shape):
        assert math.prod(shape) == math.prod(self.shape(x)), "reshape %s -> %s" % (self.shape(x), shape)
        return self.T(shape)

    def transpose(self, x, perm):
        return self.T([x.s[p] for p in perm])

    def softmax(self, x, axis):
        return self._t(x)

    def maxpool(self, x, k, strides, pads, ceil_mode):
        n = len(k)
        sp = [_pool_out(x.s[2 + i], k[i], strides[i], pads[i], pads[i + n], ceil_mode) for i in range(n)]
        return self.T(x.s[:2] + sp)

    def avgpool(self, x, k, strides, pads, ceil_mode, count_include_pad):
        return self.maxpool(x, k, strides, pads, ceil_mode)

    def global_avgpool(self, x):
        return self.T(x.s[:2] + [1] * (len(x.s) - 2))

    def batchnorm(self, x, scale, bias, mean, var, eps):
        return x

    def instancenorm(self, x, scale, bias, eps):
        return x

    def pad(self, x, pads, mode, value):
        r = len(x.s)
        return self.T([d + pads[i] + pads[i + r] for i, d in enumerate(x.s)])

    def resize(self, x, sizes, mode, coord, nearest_mode):
        assert len(sizes) == len(x.s)
        return self.T(sizes)

    def depth_to_space(self, x, bs, mode):
        n, c, h, w = x.s
        return self.T([n, c // (bs * bs), h * bs, w * bs])

    def reduce_mean(self, x, axes, keepdims):
        out = [1 if i in axes else d for i, d in enumerate(x.s)]
        if not keepdims:
            out = [d for i, d in enumerate(x.s) if i not in axes]
        return self.T(out)

    def full(self, shape, value):
        return self.T(shape)


def conv_flops(model, input_shape):
    """2 x multiply-adds of every Conv / Gemm / MatMul in the graph (shape-propagated)."""
    class Counting(ShapeBackend):
        flops = 0

        def conv(self, x, w, bias, strides, pads, dil, group):
            y = super().conv(x, w, bias, strides, pads, dil, group)
            Counting.flops += 2 * math.prod(y.s) * math.prod(w.s[1:])
            return y

        def gemm(self, x, y, c, alpha, beta, ta, tb):
            out = super().gemm(x, y, c, alpha, beta, ta, tb)
            Counting.flops += 2 * math.prod(out.s) * (x.s[0] if ta else x.s[1])
            return out

        def matmul(self, x, y):
            out = super().matmul(x, y)
            Counting.flops += 2 * math.prod(out.s) * x.s[-1]
            return out

    Counting.flops = 0
    be = Counting()
    Interpreter(model, be).run(be.input(input_shape))
    return Counting.flops


class CodegenBackend(ShapeBackend):
    """Emits the torch code of each op while propagating shapes. Parameters (initializers and
    non-scalar constants) become module buffers named p0, p1, ...; source() gives the forward."""

    def __init__(self):
        self.lines, self.params, self._n = [], [], 0

    def _emit(self, shape, expr):
        var = "v%d" % self._n
        self._n += 1
        self.lines.append("%s = %s" % (var, expr))
        t = self.T(shape)
        t.var = var
        return t

    def input(self, shape):
        t = self.T(shape)
        t.var = "x"
        return t

    def param(self, t):
        name = "p%d" % len(self.params)
        self.params.append((name, t))
        out = self.T(t.dims)
        out.var = "self." + name
        return out

    def tensor(self, x):
        if not isinstance(x, Const):
            return x
        t = Tensor("const%d" % len(self.params), x.dims, 1, values=[float(v) for v in x])
        t.raw = struct.pack("<%df" % len(x), *t._values)
        return self.param(t)

    def ref(self, x):
        """The expression for an operand: a tensor's variable, a scalar constant's literal, or a
        buffer holding a constant vector."""
        if isinstance(x, Const) and len(x) == 1 and len(x.dims) <= 1:
            return repr(float(x[0]) if isinstance(x[0], float) else x[0])
        return self.tensor(x).var

    def source(self, outputs):
        outs = outputs if isinstance(outputs, list) else [outputs]
        body = ["def forward(self, x):"] + ["    " + l for l in self.lines]
        body.append("    return " + (outs[0].var if len(outs) == 1 else "(" + ", ".join(o.var for o in outs) + ",)"))
        return "\n".join(body) + "\n"

    @staticmethod
    def _torch_pads(pads):
        """ONNX [x1_begin, x2_begin, ..., x1_end, x2_end, ...] -> F.pad's (last_begin, last_end, ...)."""
        n = len(pads) // 2
        out = []
        for i in reversed(range(n)):
            out += [pads[i], pads[i + n]]
        return tuple(out)

    def conv(self, x, w, bias, strides, pads, dil, group):
        y = ShapeBackend.conv(self, x, w, bias, strides, pads, dil, group)
        n = len(strides)
        src = x.var
        if pads[:n] != pads[n:]:
            src = "F.pad(%s, %s)" % (src, self._torch_pads(pads))
            pad = (0,) * n
        else:
            pad = tuple(pads[:n])
        fn = {1: "F.conv1d", 2: "F.conv2d", 3: "F.conv3d"}[n]
        return self._emit(y.s, "%s(%s, %s, %s, %s, %s, %s, %d)" % (
            fn, src, w.var, bias.var if bias is not None else "None", tuple(strides), pad, tuple(dil), group))

    def unary(self, kind, x, arg=None):
        v = self.ref(x)
        expr = {
            "relu": "F.relu(%s)" % v, "sigmoid": "torch.sigmoid(%s)" % v, "tanh": "torch.tanh(%s)" % v,
            "exp": "torch.exp(%s)" % v, "sqrt": "torch.sqrt(%s)" % v, "neg": "(-%s)" % v,
        }.get(kind)
        if kind == "leaky_relu":
            expr = "F.leaky_relu(%s, %r)" % (v, float(arg))
        elif kind == "hard_sigmoid":
            expr = "torch.clamp(%s * %r + %r, 0.0, 1.0)" % (v, float(arg[0]), float(arg[1]))
        elif kind == "clip":
            expr = "torch.clamp(%s, %r, %r)" % (v, arg[0], arg[1])
        return self._emit(self.shape(x), expr)

    def binary(self, kind, x, y):
        out = ShapeBackend.binary(self, kind, x, y)
        op = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}[kind]
        return self._emit(out.s, "%s %s %s" % (self.ref(x), op, self.ref(y)))

    def matmul(self, x, y):
        return self._emit(ShapeBackend.matmul(self, x, y).s, "torch.matmul(%s, %s)" % (x.var, y.var))

    def gemm(self, x, y, c, alpha, beta, ta, tb):
        out = ShapeBackend.gemm(self, x, y, c, alpha, beta, ta, tb)
        a = x.var + (".t()" if ta else "")
        if tb and alpha == 1 and (c is None or beta == 1):
            return self._emit(out.s, "F.linear(%s, %s, %s)" % (a, y.var, self.ref(c) if c is not None else "None"))
        expr = "torch.matmul(%s, %s)" % (a, y.var + (".t()" if tb else ""))
        if alpha != 1:
            expr = "%r * %s" % (float(alpha), expr)
        if c is not None and beta != 0:
            expr += " + %s" % (self.ref(c) if beta == 1 else "%r * %s" % (float(beta), self.ref(c)))
        return self._emit(out.s, expr)

    def concat(self, xs, axis):
        out = ShapeBackend.concat(self, xs, axis)
        return self._emit(out.s, "torch.cat([%s], %d)" % (", ".join(self.ref(v) for v in xs), axis))

    def split(self, x, sizes, axis):
        outs = ShapeBackend.split(self, x, sizes, axis)
        base = self._emit(x.s, "torch.split(%s, %s, %d)" % (x.var, list(sizes), axis))
        for i, o in enumerate(outs):
            o.var = "%s[%d]" % (base.var, i)
        return outs

    def slice(self, x, starts, ends, axes, steps):
        out = ShapeBackend.slice(self, x, starts, ends, axes, steps)
        idx = [":"] * len(x.s)
        for s, e, ax, st in zip(starts, ends, axes, steps):
            dim = x.s[ax]
            s = max(-dim, min(s, dim))
            e = None if (st > 0 and e >= dim) or (st < 0 and e < -dim) else max(-dim - 1, min(e, dim))
            idx[ax] = "%d:%s%s" % (s, "" if e is None else e, "" if st == 1 else ":%d" % st)
        return self._emit(out.s, "%s[%s]" % (x.var, ", ".join(idx)))

    def reshape(self, x, shape):
        out = ShapeBackend.reshape(self, x, shape)
        return self._emit(out.s, "%s.reshape(%s)" % (self.ref(x), tuple(shape)))

    def transpose(self, x, perm):
        out = ShapeBackend.transpose(self, x, perm)
        return self._emit(out.s, "%s.permute(%s)" % (x.var, tuple(perm)))

    def softmax(self, x, axis):
        return self._emit(x.s, "torch.softmax(%s, %d)" % (x.var, axis))

    def _pool(self, fn, x, k, strides, pads, ceil_mode, extra, pad_value):
        n = len(k)
        src = x.var
        sym = pads[:n] == pads[n:] and all(p <= kk // 2 for p, kk in zip(pads[:n], k))
        if not sym:
            src = "F.pad(%s, %s, value=%s)" % (src, self._torch_pads(pads), pad_value)
            pad = (0,) * n
        else:
            pad = tuple(pads[:n])
        return "%s(%s, %s, %s, %s, ceil_mode=%s%s)" % (fn, src, tuple(k), tuple(strides), pad, bool(ceil_mode), extra)

    def maxpool(self, x, k, strides, pads, ceil_mode):
        out = ShapeBackend.maxpool(self, x, k, strides, pads, ceil_mode)
        return self._emit(out.s, self._pool("F.max_pool2d", x, k, strides, pads, ceil_mode, "", "float('-inf')"))

    def avgpool(self, x, k, strides, pads, ceil_mode, count_include_pad):
        out = ShapeBackend.avgpool(self, x, k, strides, pads, ceil_mode, count_include_pad)
        return self._emit(out.s, self._pool("F.avg_pool2d", x, k, strides, pads, ceil_mode,
                                            ", count_include_pad=%s" % bool(count_include_pad), "0.0"))

    def global_avgpool(self, x):
        out = ShapeBackend.global_avgpool(self, x)
        return self._emit(out.s, "%s.mean(%s, keepdim=True)" % (x.var, tuple(range(2, len(x.s)))))

    def batchnorm(self, x, scale, bias, mean, var, eps):
        return self._emit(x.s, "F.batch_norm(%s, %s, %s, %s, %s, False, 0.0, %r)" % (
            x.var, mean.var, var.var, scale.var, bias.var, float(eps)))

    def instancenorm(self, x, scale, bias, eps):
        return self._emit(x.s, "F.instance_norm(%s, weight=%s, bias=%s, eps=%r)" % (
            x.var, self.ref(scale), self.ref(bias), float(eps)))

    def pad(self, x, pads, mode, value):
        out = ShapeBackend.pad(self, x, pads, mode, value)
        tmode = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}[mode]
        tp = self._torch_pads(pads)
        while len(tp) > 2 and tp[-1] == 0 and tp[-2] == 0:  # F.pad takes trailing dims only
            tp = tp[:-2]
        extra = ", value=%r" % float(value) if tmode == "constant" else ""
        return self._emit(out.s, "F.pad(%s, %s, mode=%r%s)" % (x.var, tp, tmode, extra))

    def resize(self, x, sizes, mode, coord, nearest_mode):
        out = ShapeBackend.resize(self, x, sizes, mode, coord, nearest_mode)
        assert sizes[:2] == x.s[:2], "Resize over batch or channels"
        if mode == "nearest":
            tmode, ac = ("nearest" if coord == "asymmetric" else "nearest-exact"), ""
        elif mode == "linear":
            tmode = {3: "linear", 4: "bilinear", 5: "trilinear"}[len(x.s)]
            ac = ", align_corners=%s" % (coord == "align_corners")
        else:
            tmode = {4: "bicubic"}[len(x.s)]
            ac = ", align_corners=%s" % (coord == "align_corners")
        return self._emit(out.s, "F.interpolate(%s, size=%s, mode=%r%s)" % (x.var, tuple(sizes[2:]), tmode, ac))

    def depth_to_space(self, x, bs, mode):
        out = ShapeBackend.depth_to_space(self, x, bs, mode)
        if mode == "CRD":
            return self._emit(out.s, "F.pixel_shuffle(%s, %d)" % (x.var, bs))
        n, c, h, w = x.s
        return self._emit(out.s, "%s.reshape(%d, %d, %d, %d, %d, %d).permute(0, 3, 4, 1, 5, 2).reshape(%s)" % (
            x.var, n, bs, bs, c // (bs * bs), h, w, tuple(out.s)))

    def reduce_mean(self, x, axes, keepdims):
        out = ShapeBackend.reduce_mean(self, x, axes, keepdims)
        return self._emit(out.s, "%s.mean(%s, keepdim=%s)" % (x.var, tuple(axes), bool(keepdims)))

    def full(self, shape, value):
        return self._emit(shape, "torch.full(%s, %r, dtype=self.dtype, device=self.device)" % (tuple(shape), value))


def torch_source(model, input_shape):
    """(forward source, [(buffer name, Tensor)], output shapes) for a fixed input shape."""
    cg = CodegenBackend()
    out = Interpreter(model, cg).run(cg.input(input_shape))
    outs = out if isinstance(out, list) else [out]
    return cg.source(outs), cg.params, [o.s for o in outs]
