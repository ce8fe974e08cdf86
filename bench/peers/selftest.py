#!/usr/bin/env python3
"""Self-check of the peer harness where there is no GPU and no torch (CI-like machines):

  python3 bench/peers/selftest.py

1. the hand-written topologies against the model cache (check_models.py; skipped without it);
2. the ONNX reader/interpreter on the repository's ONNX models: output shapes, FLOPs, and the
   generated torch code run against a stand-in torch that only checks names and arity;
3. the orchestration of torch_peers.py with made-up timings (--fake), a hang, a crash, a failure
   and a spent budget;
4. bench/run_peers.py end to end with a stand-in vkml binary and --fake, and report.py's merge.
Exit status 0 when all pass.
"""

import json
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import check_models  # noqa: E402
import onnx_lite  # noqa: E402
import report  # noqa: E402
import workloads as W  # noqa: E402

FAILS = []


def check(cond, what):
    print("  %s %s" % ("ok  " if cond else "FAIL", what), flush=True)
    if not cond:
        FAILS.append(what)


class Fake:
    """A stand-in for torch, torch.nn.functional and tensors: any attribute, call, operator or
    index gives another Fake, so generated code runs through and misspelt names still fail."""
    KNOWN_F = {"conv1d", "conv2d", "conv3d", "relu", "leaky_relu", "pad", "max_pool2d", "avg_pool2d", "batch_norm",
               "instance_norm", "interpolate", "pixel_shuffle", "linear"}
    KNOWN_TORCH = {"sigmoid", "tanh", "exp", "sqrt", "clamp", "matmul", "cat", "split", "softmax", "full"}
    KNOWN_TENSOR = {"reshape", "permute", "mean", "t"}

    def __init__(self, kind="tensor"):
        self.kind = kind

    # torch.nn.functional's positional parameters, for the calls generated code makes
    SIGNATURES = {
        "conv2d": ["input", "weight", "bias", "stride", "padding", "dilation", "groups"],
        "max_pool2d": ["input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"],
        "avg_pool2d": ["input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"],
        "pad": ["input", "pad", "mode", "value"],
        "interpolate": ["input", "size", "scale_factor", "mode", "align_corners"],
        "batch_norm": ["input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps"],
        "instance_norm": ["input", "running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum", "eps"],
        "leaky_relu": ["input", "negative_slope"],
        "linear": ["input", "weight", "bias"],
        "pixel_shuffle": ["input", "upscale_factor"],
    }
    SIZES = {"kernel_size", "stride", "padding", "dilation", "size", "upscale_factor", "groups", "pad"}
    FLAGS = {"ceil_mode", "count_include_pad", "align_corners", "training", "return_indices"}

    def __getattr__(self, name):
        known = {"F": self.KNOWN_F, "torch": self.KNOWN_TORCH, "tensor": self.KNOWN_TENSOR, "self": None}[self.kind]
        if known is not None and name not in known:
            raise AttributeError("%s.%s is not expected in generated code" % (self.kind, name))
        sig = self.SIGNATURES.get(name) if self.kind == "F" else None

        def call(*a, **k):
            if sig:
                if len(a) > len(sig):
                    raise TypeError("F.%s: %d positional arguments" % (name, len(a)))
                named = dict(zip(sig, a))
                for key in k:
                    if key not in sig or key in named:
                        raise TypeError("F.%s: bad keyword %s" % (name, key))
                named.update(k)
                for key, v in named.items():
                    ints = lambda x: isinstance(x, int) and not isinstance(x, bool)  # noqa: E731
                    if key in self.SIZES and v is not None and not (ints(v) or (isinstance(v, tuple) and all(map(ints, v)))):
                        raise TypeError("F.%s: %s=%r is not an int or a tuple of ints" % (name, key, v))
                    if key in self.FLAGS and not isinstance(v, bool):
                        raise TypeError("F.%s: %s=%r is not a bool" % (name, key, v))
            return Fake()
        return call

    def __getitem__(self, key):
        return Fake()

    def _op(self, *other):
        return Fake()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __pow__ = __neg__ = _op


class FakeModule(Fake):
    def __init__(self, params):
        super().__init__("self")
        self.__dict__.update({name: Fake() for name, _ in params})


def onnx_checks():
    print("ONNX reader and interpreter")
    cases = [("assets/models/yolo/yolov8n.onnx", [1, 3, 640, 640], [[1, 84, 8400]], (8.0e9, 9.5e9)),
             ("assets/models/yolo/yolov5n.onnx", [1, 3, 640, 640], [[1, 25200, 85]], (4.0e9, 5.0e9)),
             ("assets/models/style/starry_night.onnx", [1, 3, 1080, 1920], [[1, 3, 1080, 1920]], (5e11, 8e11)),
             ("tests/fixtures/conv_relu.onnx", [1, 3, 13, 17], None, None)]
    for rel, shape, want, flop_range in cases:
        path = os.path.join(ROOT, rel)
        if not os.path.exists(path):
            print("  skip %s (absent)" % rel)
            continue
        try:
            m = onnx_lite.Model(path)
            src, params, outs = onnx_lite.torch_source(m, shape)
            if want:
                check(outs == want, "%s: outputs %s" % (rel, outs))
            if flop_range:
                fl = onnx_lite.conv_flops(m, shape)
                check(flop_range[0] <= fl <= flop_range[1], "%s: %.2f GFLOP" % (rel, fl / 1e9))
            ns = {"torch": Fake("torch"), "F": Fake("F")}
            exec(compile(src, rel, "exec"), ns)
            ns["forward"](FakeModule(params), Fake())
            check(True, "%s: generated forward (%d lines, %d buffers) runs on the stand-in" % (
                rel, src.count("\n"), len(params)))
        except Exception as e:
            check(False, "%s: %s: %s" % (rel, type(e).__name__, e))


def run_py(args, env=None, timeout=300):
    p = subprocess.run([sys.executable] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       env=dict(os.environ, **(env or {})), timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace")


def orchestration_checks(tmp):
    print("torch_peers.py orchestration (--fake)")
    out = os.path.join(tmp, "fake.json")
    code, text = run_py([os.path.join(HERE, "torch_peers.py"), "--fake", "--json", out, "--mode-limit", "3",
                         "--compile-limit", "3"],
                        env={"FAKE_HANG": "anime4k-s-540p:graph", "FAKE_CRASH": "nanodet-416:compile",
                             "FAKE_FAIL": "style-1080p:eager"})
    check(code == 0, "exit status 0 (got %s)" % code)
    d = report.load(out) or {}
    ws = d.get("workloads", {})
    check(set(ws) == set(W.BY_NAME), "every workload has a row")
    m = lambda n, mode: ws.get(n, {}).get("modes", {}).get(mode, {})  # noqa: E731
    check("did not finish in 3 s" in m("anime4k-s-540p", "graph").get("error", ""), "a hang becomes n/a")
    check("worker died" in m("nanodet-416", "compile").get("error", ""), "a crash becomes n/a")
    check("fake failure" in m("style-1080p", "eager").get("error", ""), "an exception becomes n/a")
    check(isinstance(m("anime4k-m-540p", "graph").get("ms"), float), "the workloads after a hang still run")
    check(isinstance(m("yolov8n-640", "compile").get("ms"), float), "the workloads after a crash still run")
    check((d.get("roofline") or {}).get("f16_tflops") == 700.0, "the roofline is recorded")
    check("| anime4k-s-540p |" in text, "the human table is printed")
    out2 = os.path.join(tmp, "fake-budget.json")
    code, text = run_py([os.path.join(HERE, "torch_peers.py"), "--fake", "--json", out2, "--budget", "0"])
    d2 = report.load(out2) or {}
    errs = [r.get("error", "") for w in d2.get("workloads", {}).values() for r in w["modes"].values()]
    check(code == 0 and errs and all("time budget" in e for e in errs), "a spent budget marks the rest n/a")
    return out


FAKE_VKML = r'''#!/usr/bin/env python3
# A stand-in vkml for the self-check: `bench ops` and `bench model` with --json, made-up numbers.
import json, sys
a = sys.argv[1:]
out = a[a.index("--json") + 1]
if a[:2] == ["bench", "ops"]:
    cases = [{"name": n, "dtype": t, "median_us": us * (2 if t == "f32" else 1), "flops": fl, "bytes": by,
              "gflops": fl / us / 1e3, "gbs": by / us / 1e3, "roofline": None}
             for n, us, fl, by in [("Conv 3x3 64->64 @ 960x540", 2030.0, 2 * 64 * 64 * 9 * 518400.0, 1.3e8),
                                   ("MatMul 2048x2048x2048", 3310.0, 2 * 2048.0 ** 3, 2.5e7),
                                   ("Sigmoid [1, 64, 540, 960]", 280.0, 0.0, 1.3e8)] for t in ("f32", "f16")]
    cases.append({"name": "Softmax 4096x1000", "dtype": "f16", "skipped": "not on this device"})
    json.dump({"tool": "vkml bench ops", "device": "Fake GPU", "runs": 50, "bandwidth_gbs": 4181.0,
               "peak_tflops": None, "cases": cases}, open(out, "w"))
    print("ops done")
elif a[:2] == ["bench", "model"]:
    model = a[2]
    if "anime4k/cnn-2x-l" in model:
        print("vkml: error: Conv 'conv2d_1_tf': something broke"); sys.exit(1)
    w, h = map(int, a[a.index("--size") + 1].split("x"))
    ms = w * h / 518400.0 * (16.7 if "esrgan" in model else 2.3)
    json.dump({"tool": "vkml bench model", "model": model, "name": "m", "device": "Fake GPU", "shape": [1, 3, h, w],
               "storage": "f16", "runs": 50, "median_ms": ms, "min_ms": ms, "max_ms": ms, "flops": 2.3e11 * w * h / 518400,
               "tflops": 2.3e11 * w * h / 518400 / ms / 1e9, "steps": 30}, open(out, "w"))
    print("GPU time: %.3f ms" % ms)
else:
    sys.exit(2)
'''


def end_to_end_checks(tmp, torch_json):
    print("bench/run_peers.py end to end (stand-in vkml, --fake torch)")
    vk = os.path.join(tmp, "vkml")
    with open(vk, "w") as f:
        f.write(FAKE_VKML)
    os.chmod(vk, 0o755)
    models = os.path.join(tmp, "models")
    for w in W.WORKLOADS:  # empty stand-in model files, all but esrgan-medium's
        if w.get("vkml_model", "").startswith("{models}") and "esrgan-medium" not in w["vkml_model"]:
            p = W.expand(w["vkml_model"], models=models, assets="", work="")
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "w").close()
    out = os.path.join(tmp, "out")
    code, text = run_py([os.path.join(ROOT, "bench", "run_peers.py"), "--vkml", vk, "--models", models, "--out", out,
                         "--fake", "--budget", "120"], env={"FAKE_FAIL": "style-1080p:compile"})
    check(code == 0, "exit status 0 (got %s)" % code)
    table = open(os.path.join(out, "table.md")).read() if os.path.exists(os.path.join(out, "table.md")) else ""
    rows = [l for l in table.splitlines() if l.startswith("| ") and "---" not in l]
    check(len([r for r in rows if "vkml bench ops" not in r]) >= len(W.WORKLOADS) + 1, "a row per workload (%d rows)" % len(rows))
    row = lambda label: next((r for r in rows if r.startswith("| " + label + " |")), "")  # noqa: E731
    r = row(W.BY_NAME["esrgan-slim-540p"]["label"]).split(" | ")
    check(len(r) == 7 and r[1] == "16.70" and r[4].endswith("x") and "%" in r[6], "esrgan-slim row: %s" % " | ".join(r))
    check("n/a (status 1" in row(W.BY_NAME["anime4k-l-540p"]["label"]), "a failing vkml model shows its error")
    check("n/a (no model file" in row(W.BY_NAME["esrgan-medium-540p"]["label"]), "a missing model file shows")
    check("n/a (RuntimeError: fake failure)" in row(W.BY_NAME["style-1080p"]["label"]), "a failing compile shows")
    conv = row(W.BY_NAME["conv3x3-64"]["label"])
    check("| 2.030 |" in conv, "the conv row takes vkml's f16 op time: %s" % conv)
    check("| Softmax 4096x1000 | f16 | skipped" in table, "the ops table lists skipped cases")
    check("Command: `python3 bench/run_peers.py" in table, "the command is quoted")
    # Merge: a second torch file fills the compile row that the first left n/a.
    d = report.load(torch_json)
    d["workloads"]["nanodet-416"]["modes"]["compile"] = {"ms": 0.5, "compile_s": 3.0}
    second = os.path.join(tmp, "second.json")
    json.dump(d, open(second, "w"))
    merged = report.merge_torch([report.load(torch_json), report.load(second)])
    check(merged["workloads"]["nanodet-416"]["modes"]["compile"].get("ms") == 0.5, "report merges a later run's compile")
    check(merged["workloads"]["anime4k-m-540p"]["modes"]["eager"] == report.load(torch_json)["workloads"]["anime4k-m-540p"]["modes"]["eager"],
          "report keeps the first file's results")


def main():
    print("model topologies (check_models.py)")
    c, text = run_py([os.path.join(HERE, "check_models.py")])
    print(textwrap.indent(text.rstrip(), "    "))
    check(c == 0, "check_models.py")
    onnx_checks()
    with tempfile.TemporaryDirectory() as tmp:
        torch_json = orchestration_checks(tmp)
        end_to_end_checks(tmp, torch_json)
    print("\n%s" % ("all checks passed" if not FAILS else "%d FAILED: %s" % (len(FAILS), "; ".join(FAILS))))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
