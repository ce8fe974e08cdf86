"""The workloads timed side by side: one name per row of the table, shared by torch_peers.py
(the PyTorch side), bench/run_peers.py (the vkml side) and report.py (the merge). No torch here.

vkml runs each one as `vkml bench model FILE --size WxH` or as a `vkml bench ops --large` case;
file paths are templates over {models} (the model cache, $VKML_MODELS), {assets} (the
repository's assets/) and {work} (the run's output folder, where resnet18.onnx is exported).
"""

WORKLOADS = [
    # name, label, kind (how torch builds it), arg, input NCHW, vkml side
    {"name": "conv3x3-64", "label": "Conv 3x3 64->64 + ReLU, 960x540", "kind": "conv", "arg": None,
     "input": [1, 64, 540, 960], "vkml_op": "Conv 3x3 64->64 @ 960x540"},
    {"name": "matmul-2048", "label": "MatMul 2048^3", "kind": "matmul", "arg": 2048,
     "input": [2048, 2048], "vkml_op": "MatMul 2048x2048x2048"},
    {"name": "esrgan-slim-540p", "label": "esrgan-slim x2, 960x540 -> 1080p", "kind": "esrgan", "arg": "esrgan-slim",
     "input": [1, 3, 540, 960], "vkml_model": "{models}/esrgan-slim/models/x2/model.json"},
    {"name": "esrgan-slim-1080p", "label": "esrgan-slim x2, 1080p -> 4K", "kind": "esrgan", "arg": "esrgan-slim",
     "input": [1, 3, 1080, 1920], "vkml_model": "{models}/esrgan-slim/models/x2/model.json"},
    {"name": "esrgan-medium-540p", "label": "esrgan-medium x2, 960x540", "kind": "esrgan", "arg": "esrgan-medium",
     "input": [1, 3, 540, 960], "vkml_model": "{models}/esrgan-medium/models/x2/model.json"},
    {"name": "anime4k-s-540p", "label": "Anime4K-S, 960x540", "kind": "anime4k", "arg": "s",
     "input": [1, 3, 540, 960], "vkml_model": "{models}/websr/weights/anime4k/cnn-2x-s-rl.json"},
    {"name": "anime4k-m-540p", "label": "Anime4K-M, 960x540", "kind": "anime4k", "arg": "m",
     "input": [1, 3, 540, 960], "vkml_model": "{models}/websr/weights/anime4k/cnn-2x-m-rl.json"},
    {"name": "anime4k-m-1080p", "label": "Anime4K-M, 1080p -> 4K", "kind": "anime4k", "arg": "m",
     "input": [1, 3, 1080, 1920], "vkml_model": "{models}/websr/weights/anime4k/cnn-2x-m-rl.json"},
    {"name": "anime4k-l-540p", "label": "Anime4K-L, 960x540", "kind": "anime4k", "arg": "l",
     "input": [1, 3, 540, 960], "vkml_model": "{models}/websr/weights/anime4k/cnn-2x-l-rl.json"},
    {"name": "style-1080p", "label": "style transfer, 1920x1080", "kind": "style", "arg": None,
     "input": [1, 3, 1080, 1920], "vkml_model": "{assets}/models/style/starry_night.onnx"},
    {"name": "nanodet-416", "label": "NanoDet 416x416 (network only)", "kind": "nanodet", "arg": None,
     "input": [1, 3, 416, 416], "vkml_model": "{models}/human-models/models/nanodet.json"},
    {"name": "yolov8n-640", "label": "YOLOv8n 640x640", "kind": "onnx", "arg": "{assets}/models/yolo/yolov8n.onnx",
     "input": [1, 3, 640, 640], "vkml_model": "{assets}/models/yolo/yolov8n.onnx"},
    {"name": "resnet18-224", "label": "resnet18 (torchvision), batch 1", "kind": "resnet18", "arg": None,
     "input": [1, 3, 224, 224], "vkml_model": "{work}/resnet18.onnx"},
]

BY_NAME = {w["name"]: w for w in WORKLOADS}


def select(only):
    """Workloads named in a comma-separated list (all when empty); unknown names raise."""
    if not only:
        return list(WORKLOADS)
    names = [n.strip() for n in only.split(",") if n.strip()]
    bad = [n for n in names if n not in BY_NAME]
    if bad:
        raise SystemExit("unknown workload(s) %s; known: %s" % (", ".join(bad), ", ".join(BY_NAME)))
    return [BY_NAME[n] for n in names]


def expand(template, **paths):
    return template.format(**paths) if template else template
