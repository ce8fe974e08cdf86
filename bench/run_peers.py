#!/usr/bin/env python3
"""One command for the side-by-side table of issue 13: vkml's model and operator benchmarks and
the PyTorch peers (bench/peers/torch_peers.py) on the same GPU, one after the other, merged into
one markdown table (bench/peers/README.md says how to run it on the lent GPU).

  python3 bench/run_peers.py [--vkml BIN] [--models DIR] [--assets DIR] [--out DIR]
                             [--only a,b] [--torch-modes eager,graph,compile] [--budget S]

Writes into --out: vkml-*.json / *.log (each vkml run), vkml.json (merged), torch.json (+ .log),
resnet18.onnx, table.md. A workload that fails shows its error in its row; nothing aborts the run.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = os.path.join(HERE, "peers")
sys.path.insert(0, PEERS)
import report  # noqa: E402
import workloads as W  # noqa: E402


def tail(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:]) if lines else "no output"


def python_env():
    """The environment for the Python children (torch): without the LD_LIBRARY_PATH that points
    into a device-pack bundle (Debian's libraries there are for vkml, not for the GPU machine's
    Python), which only vkml needs."""
    env = dict(os.environ)
    keep = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p and "/opt/vkml" not in p]
    if keep:
        env["LD_LIBRARY_PATH"] = ":".join(keep)
    else:
        env.pop("LD_LIBRARY_PATH", None)
    return env


def run(cmd, log_path, timeout, env=None):
    """(exit status or None on timeout, output) of cmd, its output also saved to log_path."""
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, env=env)
        out, code = p.stdout.decode(errors="replace"), p.returncode
    except subprocess.TimeoutExpired as e:
        out, code = (e.stdout or b"").decode(errors="replace") + "\n[timed out after %d s]" % timeout, None
    except OSError as e:
        out, code = "cannot run %s: %s" % (cmd[0], e), 127
    with open(log_path, "w") as f:
        f.write("$ %s\n%s\n[%.1f s, status %s]\n" % (" ".join(shlex.quote(c) for c in cmd), out, time.time() - t0, code))
    return code, out


def vkml_side(args, selected, paths):
    """Runs vkml's benchmarks; returns the merged vkml.json document."""
    doc = {"workloads": {}, "ops": None}
    ops = [w for w in selected if w.get("vkml_op")]
    if ops:  # all the --large cases (one process, seconds on a GPU): the ops table shows them all
        path = os.path.join(args.out, "vkml-ops.json")
        cmd = [args.vkml, "bench", "ops", "--large", "--runs", str(args.runs), "--json", path]
        print("vkml: %s" % " ".join(shlex.quote(c) for c in cmd), flush=True)
        code, out = run(cmd, os.path.join(args.out, "vkml-ops.log"), args.vkml_timeout)
        data = report.load(path) if os.path.exists(path) else None
        doc["ops"] = data
        if data:
            doc["device"] = data.get("device")
            doc["bandwidth_gbs"] = data.get("bandwidth_gbs")
        for w in ops:
            case = None
            for dtype in ("f16", "f32"):
                case = case or next((c for c in (data or {}).get("cases", [])
                                     if c.get("name") == w["vkml_op"] and c.get("dtype") == dtype and "median_us" in c), None)
            if case:
                doc["workloads"][w["name"]] = {"ms": case["median_us"] / 1000.0, "flops": case.get("flops"),
                                               "bytes": case.get("bytes"), "dtype": case["dtype"],
                                               "tflops": (case.get("gflops") or 0) / 1000.0}
            else:
                doc["workloads"][w["name"]] = {"error": "no '%s' case in vkml bench ops (status %s: %s)" % (
                    w["vkml_op"], code, tail(out, 2))}
            print("  %-20s %s" % (w["name"], fmt(doc["workloads"][w["name"]])), flush=True)
    for w in selected:
        if not w.get("vkml_model"):
            continue
        name = w["name"]
        model = W.expand(w["vkml_model"], **paths)
        if not os.path.exists(model):
            doc["workloads"][name] = {"error": "no model file %s" % model}
            print("  %-20s %s" % (name, fmt(doc["workloads"][name])), flush=True)
            continue
        path = os.path.join(args.out, "vkml-%s.json" % name)
        if os.path.exists(path):
            os.remove(path)
        h, wd = w["input"][2], w["input"][3]
        cmd = [args.vkml, "bench", "model", model, "--size", "%dx%d" % (wd, h), "--runs", str(args.runs), "--json", path]
        code, out = run(cmd, os.path.join(args.out, "vkml-%s.log" % name), args.vkml_timeout)
        data = report.load(path) if code == 0 and os.path.exists(path) else None
        if data and isinstance(data.get("median_ms"), (int, float)):
            doc["workloads"][name] = {"ms": data["median_ms"], "flops": data.get("flops"), "tflops": data.get("tflops"),
                                      "model": model, "steps": data.get("steps"), "storage": data.get("storage")}
            doc.setdefault("device", data.get("device"))
        else:
            doc["workloads"][name] = {"error": "status %s: %s" % (code, tail(out))}
        print("  %-20s %s" % (name, fmt(doc["workloads"][name])), flush=True)
    return doc


def default_vkml():
    for name in ("vkml", "vkml_perf"):  # vkml_perf: the same bench commands without FFmpeg
        if shutil.which(name):
            return shutil.which(name)
    for name in ("vkml", "vkml_perf"):
        if os.path.exists(os.path.join(ROOT, "build", "bin", name)):
            return os.path.join(ROOT, "build", "bin", name)
    return "vkml"


def default_models():
    if os.environ.get("VKML_MODELS"):
        return os.environ["VKML_MODELS"]
    home = os.path.expanduser("~/.cache/vkml/models")
    packed = os.path.join(os.environ.get("VKML_DATA", "/opt/vkml/data"), ".dev-stage", "models")
    return packed if not os.path.isdir(home) and os.path.isdir(packed) else home


def fmt(r):
    return "n/a (%s)" % r["error"] if "error" in r else "%.3f ms%s" % (
        r["ms"], ", %.1f TFLOP/s" % r["tflops"] if r.get("tflops") else "")


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vkml", default=default_vkml(),
                    help="the vkml binary, or vkml_perf (default: vkml, else vkml_perf, on PATH, else build/bin/)")
    ap.add_argument("--models", default=default_models(),
                    help="the model cache (default $VKML_MODELS, ~/.cache/vkml/models, else $VKML_DATA/.dev-stage/models)")
    ap.add_argument("--assets", default=os.path.join(ROOT, "assets"), help="the repository's assets/ folder")
    ap.add_argument("--out", default="peers-out", help="folder for the results")
    ap.add_argument("--only", default="", help="workloads (default all): " + ",".join(W.BY_NAME))
    ap.add_argument("--runs", type=int, default=50, help="timed runs per measurement (median reported)")
    ap.add_argument("--torch-modes", default="eager,graph,compile")
    ap.add_argument("--compile-limit", type=float, default=120, help="seconds per workload for torch.compile")
    ap.add_argument("--budget", type=float, default=560, help="seconds for the whole run (torch gets what vkml leaves)")
    ap.add_argument("--vkml-timeout", type=float, default=240, help="seconds per vkml benchmark process")
    ap.add_argument("--skip-vkml", action="store_true", help="no vkml runs (an earlier OUT/vkml.json is still used)")
    ap.add_argument("--skip-torch", action="store_true", help="no PyTorch runs")
    ap.add_argument("--fake", action="store_true", help="torch side with made-up numbers (self-check without torch)")
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    args.out = os.path.abspath(args.out)
    selected = W.select(args.only)
    paths = {"models": os.path.abspath(args.models), "assets": os.path.abspath(args.assets), "work": args.out}
    py = sys.executable or "python3"
    peers = os.path.join(PEERS, "torch_peers.py")
    print("== %s vkml peers: %d workloads, out %s" % (time.strftime("%Y-%m-%dT%H:%M:%S"), len(selected), args.out), flush=True)

    vkml_doc = None
    if not args.skip_vkml:
        if any(w["name"] == "resnet18-224" for w in selected) and not args.fake:
            code, out = run([py, peers, "--export-resnet18", os.path.join(args.out, "resnet18.onnx")],
                            os.path.join(args.out, "resnet18-export.log"), 300, env=python_env())
            print("resnet18 export: %s" % tail(out, 1), flush=True)
        print("== vkml (%s)" % args.vkml, flush=True)
        try:
            vkml_doc = vkml_side(args, selected, paths)
        except Exception as e:  # keep going: the torch side and the table still come
            vkml_doc = {"workloads": {w["name"]: {"error": "%s: %s" % (type(e).__name__, e)} for w in selected}}
        vkml_doc["seconds"] = time.time() - t0
        with open(os.path.join(args.out, "vkml.json"), "w") as f:
            json.dump(vkml_doc, f, indent=1)

    torch_json = os.path.join(args.out, "torch.json")
    if not args.skip_torch:
        budget = max(60.0, args.budget - (time.time() - t0) - 15)
        cmd = [py, peers, "--json", torch_json, "--modes", args.torch_modes, "--runs", str(args.runs),
               "--compile-limit", str(args.compile_limit), "--budget", "%.0f" % budget, "--models", paths["models"],
               "--assets", paths["assets"], "--work", args.out] + (["--only", args.only] if args.only else [])
        cmd += ["--fake"] if args.fake else []
        print("== PyTorch peers (budget %.0f s): %s" % (budget, " ".join(shlex.quote(c) for c in cmd)), flush=True)
        try:
            subprocess.run(cmd, timeout=budget + 120, env=python_env())
        except (subprocess.TimeoutExpired, OSError) as e:
            print("torch peers: %s" % e, flush=True)

    if vkml_doc is None and os.path.exists(os.path.join(args.out, "vkml.json")):
        print("vkml: --skip-vkml, so the table takes the earlier vkml results in %s" % os.path.join(args.out, "vkml.json"))
        vkml_doc = report.load(os.path.join(args.out, "vkml.json"))
    torch_doc = report.merge_torch([report.load(torch_json) if os.path.exists(torch_json) else None])
    command = "python3 bench/run_peers.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    text = report.table(vkml_doc, torch_doc, command.strip())
    extra = report.ops_table(vkml_doc, torch_doc)
    if extra:
        text += "\n" + extra
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text)
    print("\n== table (%s, %.0f s)\n" % (os.path.join(args.out, "table.md"), time.time() - t0))
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
