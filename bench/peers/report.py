#!/usr/bin/env python3
"""Merge vkml's and the PyTorch peers' JSON into the markdown table of bench/peers/README.md.

  python3 bench/peers/report.py --vkml OUT/vkml.json --torch OUT/torch.json [--torch MORE.json]

Several --torch files merge (the first that has a mode of a workload wins), so a compile-only
run can fill what an earlier run left n/a. Pure Python; missing pieces print as '-' or 'n/a'.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads as W  # noqa: E402

DEFAULT_PEAK_TFLOPS = 790.0  # H200 dense f16 tensor cores, used when the run measured none


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print("report: cannot read %s: %s" % (path, e), file=sys.stderr)
        return None


def merge_torch(docs):
    out = {"workloads": {}, "roofline": {}, "info": {}}
    for d in docs:
        if not d:
            continue
        if not out["roofline"].get("f16_tflops") and (d.get("roofline") or {}).get("f16_tflops"):
            out["roofline"] = d["roofline"]
        if not out["info"] and d.get("info"):
            out["info"] = d["info"]
        for name, w in (d.get("workloads") or {}).items():
            dst = out["workloads"].setdefault(name, {"modes": {}})
            for k in ("note", "label"):
                if w.get(k) and not dst.get(k):
                    dst[k] = w[k]
            for mode, res in (w.get("modes") or {}).items():
                old = dst["modes"].get(mode)
                if old is None or ("error" in old and "error" not in res):
                    dst["modes"][mode] = res
    return out


def ok(res):
    return bool(res) and "error" not in res and isinstance(res.get("ms"), (int, float))


def short(text, n=70):
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 3] + "..."


def na(res):
    return "n/a (%s)" % short(res["error"]) if res and "error" in res else "-"


def fms(ms):
    if ms is None:
        return "-"
    return "%.3f" % ms if ms < 10 else "%.2f" % ms if ms < 100 else "%.1f" % ms


def rows(vkml, torch):
    """One dict per workload with the table's numbers (None where unknown)."""
    vk = (vkml or {}).get("workloads", {})
    tw = torch["workloads"]
    rf = torch.get("roofline") or {}
    peak = rf.get("f16_tflops") or DEFAULT_PEAK_TFLOPS
    bw = rf.get("bandwidth_gbs") or (vkml or {}).get("bandwidth_gbs")
    out = []
    for w in W.WORKLOADS:
        name = w["name"]
        v = vk.get(name)
        t = tw.get(name, {"modes": {}})
        if v is None and name not in tw:
            continue
        m = t["modes"]
        eager, graph, comp = m.get("eager"), m.get("graph"), m.get("compile")
        peers = [r["ms"] for r in (eager, graph, comp) if ok(r)]
        best = min(peers) if peers else None
        vms = v.get("ms") if v and "error" not in v else None
        flops = (v or {}).get("flops") or (eager or {}).get("flops")
        nbytes = (v or {}).get("bytes") or (eager or {}).get("min_bytes")
        r = {"name": name, "label": w["label"], "vkml_ms": vms, "vkml_error": (v or {}).get("error"),
             "eager": eager, "graph": graph, "compile": comp, "best_peer_ms": best,
             "ratio": vms / best if vms and best else None, "flops": flops, "bytes": nbytes,
             "tflops": flops / (vms * 1e-3) / 1e12 if flops and vms else None,
             "note": t.get("note", "")}
        floors = []
        if flops:
            floors.append((flops / (peak * 1e12) * 1e3, "compute"))
        if nbytes and bw:
            floors.append((nbytes / (bw * 1e9) * 1e3, "memory"))
        if floors and vms:
            floor, bound = max(floors)
            r["roofline_pct"], r["bound"] = 100.0 * floor / vms, bound
            if best:
                r["peer_roofline_pct"] = 100.0 * floor / best
        out.append(r)
    return out, peak, bw


def table(vkml, torch, command=""):
    rs, peak, bw = rows(vkml, torch)
    lines = ["| workload | vkml ms | torch f16 ms (eager / CUDA graph) | torch.compile ms | vkml/best peer | TFLOP/s | % of roofline |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rs:
        vk = fms(r["vkml_ms"]) if r["vkml_ms"] is not None else (
            "n/a (%s)" % short(r["vkml_error"]) if r["vkml_error"] else "-")
        eg = "%s / %s" % (fms(r["eager"]["ms"]) if ok(r["eager"]) else na(r["eager"]),
                          fms(r["graph"]["ms"]) if ok(r["graph"]) else na(r["graph"]))
        cp = fms(r["compile"]["ms"]) if ok(r["compile"]) else na(r["compile"])
        ratio = "%.2fx" % r["ratio"] if r["ratio"] else "-"
        tf = "%.1f" % r["tflops"] if r["tflops"] else "-"
        pct = "%.1f%% (%s)" % (r["roofline_pct"], r["bound"]) if r.get("roofline_pct") is not None else "-"
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (r["label"], vk, eg, cp, ratio, tf, pct))
    info = torch.get("info") or {}
    notes = []
    dev = (vkml or {}).get("device") or info.get("device")
    if dev:
        notes.append("device: %s" % dev)
    if info.get("torch"):
        notes.append("PyTorch %s (CUDA %s, cuDNN %s)" % (info["torch"], info.get("cuda"), info.get("cudnn")))
    rf = torch.get("roofline") or {}
    notes.append("roofline: %.0f TFLOP/s f16 (%s), %s GB/s (%s)" % (
        peak, "torch.matmul 8192^3 in this run" if rf.get("f16_tflops") else "assumed, not measured",
        "%.0f" % bw if bw else "-", "1 GiB device copy in this run" if rf.get("bandwidth_gbs") else
        "vkml copy kernel" if bw else "not measured"))
    text = "\n".join(lines) + "\n\n" + "; ".join(notes) + ".\n"
    text += ("vkml/best peer: vkml's time over the fastest of the three PyTorch modes (> 1: vkml is slower). "
             "TFLOP/s and % of roofline are vkml's: the time floor max(FLOPs / f16 peak, bytes / bandwidth) "
             "over vkml's time (bytes: inputs, outputs and weights once).\n")
    if command:
        text += "Command: `%s`\n" % command
    return text


def ops_table(vkml, torch):
    """All of `vkml bench ops --large`, f16 and f32, against this run's rooflines."""
    ops = (vkml or {}).get("ops") or {}
    cases = ops.get("cases") or []
    if not cases:
        return ""
    rf = torch.get("roofline") or {}
    peak = rf.get("f16_tflops") or DEFAULT_PEAK_TFLOPS
    bw = rf.get("bandwidth_gbs") or ops.get("bandwidth_gbs")
    lines = ["| op (vkml bench ops --large) | dtype | median us | GFLOP/s | GB/s | % of roofline |",
             "| --- | --- | --- | --- | --- | --- |"]
    for c in cases:
        if "skipped" in c:
            lines.append("| %s | %s | skipped: %s | | | |" % (c["name"], c["dtype"], short(c["skipped"])))
            continue
        t = c["median_us"] * 1e-6
        floors = []
        if c.get("flops"):
            floors.append((c["flops"] / (peak * 1e12), "compute"))
        if c.get("bytes") and bw:
            floors.append((c["bytes"] / (bw * 1e9), "memory"))
        pct = "-"
        if floors and t > 0:
            f, bound = max(floors)
            pct = "%.1f%% (%s)" % (100 * f / t, bound)
        lines.append("| %s | %s | %.1f | %.0f | %.0f | %s |" % (c["name"], c["dtype"], c["median_us"], c.get("gflops") or 0,
                                                          c.get("gbs") or 0, pct))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vkml", help="vkml.json written by bench/run_peers.py")
    ap.add_argument("--torch", action="append", default=[], help="torch_peers.py --json output (repeatable)")
    ap.add_argument("--command", default="", help="the command line to quote under the table")
    ap.add_argument("--out", help="also write the markdown here")
    args = ap.parse_args()
    vkml = load(args.vkml) if args.vkml else None
    torch = merge_torch([load(p) for p in args.torch])
    text = table(vkml, torch, args.command)
    extra = ops_table(vkml, torch)
    if extra:
        text += "\n" + extra
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
