#!/usr/bin/env python3
"""Check the hand-written topologies in specs.py against the model files vkml loads.

  python3 bench/peers/check_models.py [--models DIR]     (default $VKML_MODELS or ~/.cache/vkml/models)

Pure Python. Exit status 0 when every model present matches; models not in the cache are
reported as skipped.
"""

import argparse
import base64
import collections
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import specs  # noqa: E402


def check_esrgan(root, model):
    path = os.path.join(root, model, "models", "x2", "model.json")
    if not os.path.exists(path):
        return None, "no " + path
    d = json.load(open(path))
    layers = d["modelTopology"]["model_config"]["config"]["layers"]
    kernels = {w["name"]: w["shape"] for g in d["weightsManifest"] for w in g["weights"]}
    got = {}
    for l in layers:
        cfg = l["config"]
        ins = [i[0] for node in l["inbound_nodes"] for i in node]
        conf = {}
        if l["class_name"] == "Conv2D":
            kh, kw = cfg["kernel_size"]
            if kh != kw or cfg.get("strides", [1, 1]) != [1, 1] or cfg.get("dilation_rate", [1, 1]) != [1, 1]:
                return False, "%s: unexpected conv config %s" % (l["name"], cfg)
            if kh > 1 and cfg["padding"] != "same":
                return False, "%s: padding %s" % (l["name"], cfg["padding"])
            conf = {"filters": cfg["filters"], "kernel": kh}
        elif l["class_name"] == "Activation":
            conf = {"activation": cfg["activation"]}
        elif l["class_name"] == "UpSampling2D":
            if cfg.get("interpolation", "nearest") != "nearest":
                return False, "%s: interpolation %s" % (l["name"], cfg.get("interpolation"))
            conf = {"size": cfg["size"][0]}
        got[l["name"]] = (l["class_name"], ins, conf)
    want = {name: (kind, ins, conf) for name, kind, ins, conf in specs.esrgan_layers(model)}
    if got != want:
        diff = sorted(set(got.items()) ^ set(want.items())) if False else \
            [n for n in sorted(set(got) | set(want)) if got.get(n) != want.get(n)]
        return False, "layers differ: %s" % ", ".join("%s: file %s, spec %s" % (n, got.get(n), want.get(n)) for n in diff[:5])
    # Weight shapes: propagate channels through the spec.
    ch = {"LR": 3}
    for name, kind, ins, conf in specs.esrgan_layers(model):
        if kind == "Conv2D":
            cin = ch[ins[0]]
            k = conf["kernel"]
            if kernels.get(name + "/kernel") != [k, k, cin, conf["filters"]]:
                return False, "%s/kernel: file %s, spec %s" % (name, kernels.get(name + "/kernel"), [k, k, cin, conf["filters"]])
            ch[name] = conf["filters"]
        elif kind == "Concatenate":
            ch[name] = sum(ch[i] for i in ins)
        elif kind != "InputLayer":
            ch[name] = ch[ins[0]]
    return True, "%d layers, %d convs" % (len(want), sum(1 for v in want.values() if v[0] == "Conv2D"))


def check_anime4k(root, size):
    path = os.path.join(root, "websr", "weights", "anime4k", "cnn-2x-%s-rl.json" % size)
    if not os.path.exists(path):
        return None, "no " + path
    d = json.load(open(path))
    got = {}
    for key, l in d["layers"].items():
        got[l.get("name", key)] = (l["type"], list(l["inputs"]), len(l.get("weights", [])))
        if l["type"] == "conv" and len(l.get("bias", [])) != 4:
            return False, "%s: %d biases" % (key, len(l.get("bias", [])))
        if l.get("output", key) not in (key, l.get("name", key), "canvas"):
            return False, "%s: output %s" % (key, l.get("output"))
    want = {name: (t, ins, n) for name, t, ins, n in specs.anime4k_layers(size)}
    if got != want:
        diff = [n for n in sorted(set(got) | set(want)) if got.get(n) != want.get(n)]
        return False, "layers differ: %s" % ", ".join("%s: file %s, spec %s" % (n, got.get(n), want.get(n)) for n in diff[:5])
    return True, "%d layers" % len(want)


def _attr(node, key):
    a = node.get("attr", {}).get(key, {})
    if "list" in a:
        return [int(v) for v in a["list"].get("i", [])]
    if "s" in a:
        return base64.b64decode(a["s"]).decode()
    return a.get("f", a.get("i"))


def nanodet_graph_convs(d):
    """conv name -> (k, cin, cout, stride, leaky, producer convs), read off the TF graph."""
    nodes = {n["name"]: n for n in d["modelTopology"]["node"]}
    shapes = {w["name"]: w["shape"] for g in d["weightsManifest"] for w in g["weights"]}
    consumers = collections.defaultdict(list)
    for n in nodes.values():
        for i in n.get("input", []):
            consumers[i.split(":")[0].lstrip("^")].append(n["name"])
    convs = {}
    for name, n in nodes.items():
        if n["op"] != "Conv2D":
            continue
        w = n["input"][1].split(":")[0]
        while nodes[w]["op"] == "Identity":
            w = nodes[w]["input"][0].split(":")[0]
        kh, kw, cin, cout = shapes[w]
        stride = _attr(n, "strides")[1]
        # producers: nearest Conv2D nodes upstream of the data input
        prods, stack, seen = set(), [n["input"][0].split(":")[0]], set()
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            m = nodes[s]
            if m["op"] == "Conv2D":
                prods.add(s)
            elif m["op"] not in ("Const", "Placeholder"):
                stack += [i.split(":")[0].lstrip("^") for i in m.get("input", [])]
        # activation: conv -> Add(bias) -> [Transpose/Identity] -> LeakyRelu
        leaky, cur = False, name
        for _ in range(4):
            nxt = [c for c in consumers[cur] if nodes[c]["op"] in ("Add", "AddV2", "BiasAdd", "Transpose", "Identity", "LeakyRelu")]
            if not nxt:
                break
            cur = nxt[0]
            if nodes[cur]["op"] == "LeakyRelu":
                leaky = abs(float(_attr(nodes[cur], "alpha")) - 0.1) < 1e-6
                break
        convs[name] = (kh, cin, cout, stride, leaky, prods)
        if kh != kw:
            raise ValueError("%s: %dx%d kernel" % (name, kh, kw))
    ops = collections.Counter(n["op"] for n in nodes.values())
    return convs, ops


def _signatures(convs):
    """A Merkle-style signature per conv (its shape plus its producers' signatures), so two conv
    DAGs compare equal exactly when they are isomorphic."""
    memo = {}

    def sig(name):
        if name not in memo:
            k, cin, cout, stride, leaky, prods = convs[name]
            text = "%d,%d,%d,%d,%d|%s" % (k, cin, cout, stride, leaky, ",".join(sorted(sig(p) for p in prods)))
            memo[name] = hashlib.sha1(text.encode()).hexdigest()[:16]
        return memo[name]

    return {n: sig(n) for n in convs}


def check_nanodet(root):
    path = os.path.join(root, "human-models", "models", "nanodet.json")
    if not os.path.exists(path):
        return None, "no " + path
    d = json.load(open(path))
    got, ops = nanodet_graph_convs(d)
    want = {name: (k, cin, cout, stride, leaky, set(ins)) for name, cin, cout, k, stride, leaky, ins in specs.nanodet_convs()}
    if len(got) != len(want):
        return False, "%d convs in the file, %d in the spec" % (len(got), len(want))
    gs, ws = _signatures(got), _signatures(want)
    gc, wc = collections.Counter(gs.values()), collections.Counter(ws.values())
    if gc != wc:
        describe = lambda convs, sigs, extra: ["%s %s" % (n, convs[n][:5]) for n in convs if sigs[n] in extra][:3]
        return False, "conv DAGs differ; file only: %s; spec only: %s" % (
            describe(got, gs, gc - wc), describe(want, ws, wc - gc))
    expect = {"MaxPool": 1, "ResizeBilinear": 4, "Sigmoid": 3, "SplitV": 3}
    for op, n in expect.items():
        if ops.get(op, 0) != n:
            return False, "%d %s nodes in the file, the torch module has %d" % (ops.get(op, 0), op, n)
    shape = [int(x["size"]) for x in d["signature"]["inputs"]["input_1:0"]["tensorShape"]["dim"]]
    if shape != [1, 3, specs.NANODET_SIZE, specs.NANODET_SIZE]:
        return False, "input %s" % shape
    return True, "%d convs, same conv DAG; MaxPool/ResizeBilinear/Sigmoid/SplitV counts match" % len(got)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=os.environ.get("VKML_MODELS") or os.path.expanduser("~/.cache/vkml/models"))
    args = ap.parse_args()
    checks = [("esrgan-slim", lambda: check_esrgan(args.models, "esrgan-slim")),
              ("esrgan-medium", lambda: check_esrgan(args.models, "esrgan-medium"))]
    checks += [("anime4k-" + s, (lambda s=s: check_anime4k(args.models, s))) for s in "sml"]
    checks.append(("nanodet", lambda: check_nanodet(args.models)))
    failed = 0
    for name, fn in checks:
        try:
            ok, msg = fn()
        except Exception as e:  # a malformed file is a failed check, not a crash
            ok, msg = False, "%s: %s" % (type(e).__name__, e)
        print("%-14s %s  %s" % (name, {True: "ok  ", False: "FAIL", None: "skip"}[ok], msg))
        failed += ok is False
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
