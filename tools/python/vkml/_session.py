"""ONNX Runtime's spelling of a session on top of vkml's own (issue 17): the positional
sess_options, providers= and provider_options= of onnxruntime.InferenceSession, SessionOptions and
RunOptions. What maps onto vkml is mapped; what would change the results or cannot be honoured
raises an exception saying so; CPU-side tuning knobs that do not apply are accepted and ignored."""
import warnings as _warnings

from . import _vkml

VKML_PROVIDER = "VkmlExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"
# ONNX Runtime's GPU providers: code written for them runs on a vkml (Vulkan) device instead;
# their "device_id" option selects it, their other options (memory arenas, kernels, engines) are
# theirs alone and ignored with a warning.
GPU_PROVIDERS = (
    "CUDAExecutionProvider", "TensorrtExecutionProvider", "ROCMExecutionProvider",
    "MIGraphXExecutionProvider", "DmlExecutionProvider", "WebGpuExecutionProvider",
)
VKML_PROVIDER_OPTIONS = ("device_id", "precision")


class SessionOptions:
    """onnxruntime.SessionOptions, the part vkml uses (pass it as InferenceSession's second
    argument; an onnxruntime.SessionOptions works too, for its profiling settings).

    enable_profiling, profile_file_prefix: as profile=True; end_profiling() writes
        <prefix>_<date>_<time>.json.
    add_free_dimension_override_by_name(name, size): as free_dims={name: size}.
    add_free_dimension_override_by_denotation(denotation, size): as free_dim_denotations=
        {denotation: size}: every input dimension the model denotes so ("DATA_BATCH", compared
        without case as ONNX Runtime does).
    optimized_model_filepath: must stay empty (vkml does not write optimized models).
    graph_optimization_level, execution_mode, intra_op_num_threads, inter_op_num_threads,
    log_severity_level, log_verbosity_level, logid, enable_cpu_mem_arena, enable_mem_pattern,
    enable_mem_reuse: accepted and ignored (vkml always optimizes the graph; these tune ONNX
    Runtime's CPU side and do not change results).
    """

    def __init__(self):
        self.enable_profiling = False
        self.profile_file_prefix = "vkml_profile"
        self.optimized_model_filepath = ""
        self.graph_optimization_level = None
        self.execution_mode = None
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self._free_dims = {}
        self._free_dim_denotations = {}
        self._config = {}

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        if not isinstance(dim_name, str):
            raise TypeError(f"a free dimension's name is a str, not {type(dim_name).__name__}")
        if not isinstance(dim_value, int) or isinstance(dim_value, bool) or dim_value < 1:
            raise ValueError(f"free dimension '{dim_name}': the size must be a positive int, not {dim_value!r}")
        self._free_dims[dim_name] = dim_value

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        if not isinstance(dim_denotation, str):
            raise TypeError(f"a dimension denotation is a str, not {type(dim_denotation).__name__}")
        if not isinstance(dim_value, int) or isinstance(dim_value, bool) or dim_value < 1:
            raise ValueError(f"free dimension denotation '{dim_denotation}': the size must be a positive int, "
                             f"not {dim_value!r}")
        self._free_dim_denotations[dim_denotation] = dim_value

    def add_session_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        return self._config[key]

    def __repr__(self):
        return (f"vkml.SessionOptions(enable_profiling={self.enable_profiling}, "
                f"profile_file_prefix={self.profile_file_prefix!r}, free_dims={self._free_dims!r}, "
                f"free_dim_denotations={self._free_dim_denotations!r})")


class RunOptions:
    """onnxruntime.RunOptions, as vkml reads it: terminate=True refuses the run (RuntimeError);
    run_tag, log_severity_level, log_verbosity_level and only_execute_path_to_fetches are accepted
    and ignored (vkml runs what the outputs need and logs through VKML_LOG)."""

    def __init__(self):
        self.terminate = False
        self.run_tag = ""
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.only_execute_path_to_fetches = False
        self._config = {}

    def add_run_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        return self._config[key]


def get_available_providers():
    """The providers InferenceSession(providers=...) accepts on this machine, in ONNX Runtime's
    spelling: VkmlExecutionProvider (any Vulkan device), and CPUExecutionProvider where a CPU
    Vulkan driver (lavapipe) is there to run it. ONNX Runtime's GPU provider names are accepted
    too, meaning a vkml device."""
    names = [VKML_PROVIDER] if _vkml.device_count() else []
    if any(d["type"] == "cpu" for d in _vkml._device_infos()):
        names.append(CPU_PROVIDER)
    return names


def _provider_list(providers, provider_options):
    """[(name, options dict)] from ONNX Runtime's two forms: names with a parallel
    provider_options list, or (name, options) tuples."""
    if isinstance(providers, (str, bytes)):
        raise TypeError(f"providers is a list of provider names, e.g. ['{VKML_PROVIDER}'], not a str")
    try:
        entries = list(providers)
    except TypeError:
        raise TypeError(f"providers is a list of provider names, not {type(providers).__name__}") from None
    if provider_options is not None:
        provider_options = list(provider_options)
        if len(provider_options) != len(entries):
            raise ValueError(f"provider_options has {len(provider_options)} entries for {len(entries)} providers "
                             "(one dict per provider)")
    result = []
    for i, entry in enumerate(entries):
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[0], str) or not isinstance(entry[1], dict):
                raise TypeError(f"providers[{i}]: a (name, options dict) tuple, not {entry!r}")
            if provider_options is not None:
                raise ValueError("give provider options either in (name, options) tuples or as provider_options, "
                                 "not both")
            name, options = entry
        elif isinstance(entry, str):
            name = entry
            options = provider_options[i] if provider_options is not None else {}
            if not isinstance(options, dict):
                raise TypeError(f"provider_options[{i}] is a dict, not {type(options).__name__}")
        else:
            raise TypeError(f"providers[{i}] is a provider name or a (name, options) tuple, "
                            f"not {type(entry).__name__}")
        result.append((name, dict(options)))
    if not result:
        raise ValueError(f"providers is empty: give at least one, e.g. ['{VKML_PROVIDER}']")
    return result


def _device_from_providers(providers, provider_options):
    """(device, precision or None) the providers list asks for. The first provider vkml can serve
    decides, as ONNX Runtime takes the first one available; a CPUExecutionProvider after a GPU one
    is the usual fallback and needs nothing (every op of a vkml session runs on its device)."""
    known = (VKML_PROVIDER,) + GPU_PROVIDERS + (CPU_PROVIDER,)
    entries = _provider_list(providers, provider_options)
    for name, _ in entries:
        if name not in known:
            raise ValueError(f"unknown execution provider '{name}': vkml accepts {', '.join(known)} "
                             "(vkml.get_available_providers() lists those usable here)")
    name, options = entries[0]
    precision = None
    if name == CPU_PROVIDER:
        cpus = [d for d in _vkml._device_infos() if d["type"] == "cpu"]
        if options:
            _warnings.warn(f"vkml: {CPU_PROVIDER} options {sorted(options)} ignored", stacklevel=4)
        if not cpus:
            raise ValueError(f"{CPU_PROVIDER}: vkml runs models on Vulkan devices and this machine has no CPU Vulkan "
                             f"driver (mesa-vulkan-drivers' lavapipe); ask for {VKML_PROVIDER} (a GPU) instead, or "
                             "use ONNX Runtime for CPU runs")
        return cpus[0]["index"], None
    if name == VKML_PROVIDER:
        unknown = sorted(set(options) - set(VKML_PROVIDER_OPTIONS))
        if unknown:
            raise ValueError(f"{VKML_PROVIDER} has no option {', '.join(repr(k) for k in unknown)}; "
                             f"its options are {', '.join(VKML_PROVIDER_OPTIONS)}")
        precision = options.get("precision")
    else:
        ignored = sorted(set(options) - {"device_id"})
        if ignored:
            _warnings.warn(f"vkml: {name} runs on a vkml Vulkan device; its options {ignored} do not apply and "
                           "are ignored", stacklevel=4)
    device = options.get("device_id")
    if isinstance(device, str) and device.strip().lstrip("-").isdigit():
        device = int(device)  # ONNX Runtime's provider options are strings
    return device, precision


class InferenceSession(_vkml.InferenceSession):
    __doc__ = _vkml.InferenceSession.__doc__ + """

ONNX Runtime's arguments work too: InferenceSession(path, sess_options, providers, provider_options)
with vkml.SessionOptions (or onnxruntime.SessionOptions: its profiling settings), providers such as
["VkmlExecutionProvider"], [("VkmlExecutionProvider", {"device_id": 1, "precision": "f32"})],
["CUDAExecutionProvider", "CPUExecutionProvider"] (ONNX Runtime's GPU providers mean a vkml
device, their device_id its index) or ["CPUExecutionProvider"] (a CPU Vulkan driver, lavapipe);
run(output_names, input_feed, run_options) takes a vkml.RunOptions. What vkml cannot honour raises
ValueError or TypeError saying why."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, *,
                 device=None, precision=None, free_dims=None, free_dim_denotations=None, sequence_inputs=None,
                 absent_inputs=None, profile=None, profile_file=None):
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            raise TypeError("vkml.InferenceSession loads a model file (ONNX, TF.js model.json, Anime4K JSON); "
                            "it does not take the model's bytes: write them to a file and pass its path")
        free = dict(free_dims or {})
        denoted = dict(free_dim_denotations or {})
        prefix = "vkml_profile"
        if sess_options is not None:
            if not hasattr(sess_options, "enable_profiling"):
                raise TypeError("sess_options is a vkml.SessionOptions (or onnxruntime.SessionOptions), not "
                                f"{type(sess_options).__name__}")
            if getattr(sess_options, "optimized_model_filepath", ""):
                raise ValueError("sess_options.optimized_model_filepath is set: vkml does not write optimized models "
                                 "(leave it empty)")
            for name, size in getattr(sess_options, "_free_dims", {}).items():
                if name in free and free[name] != size:
                    raise ValueError(f"free dimension '{name}' is {free[name]} in free_dims and {size} in sess_options")
                free[name] = size
            for name, size in getattr(sess_options, "_free_dim_denotations", {}).items():
                if name in denoted and denoted[name] != size:
                    raise ValueError(f"free dimension denotation '{name}' is {denoted[name]} in free_dim_denotations "
                                     f"and {size} in sess_options")
                denoted[name] = size
            if sess_options.enable_profiling:
                if profile is False:
                    raise ValueError("profile=False contradicts sess_options.enable_profiling=True")
                profile = True
            prefix = getattr(sess_options, "profile_file_prefix", prefix) or prefix
        if providers is not None:
            wanted_device, wanted_precision = _device_from_providers(providers, provider_options)
            if device is not None and wanted_device is not None:
                raise ValueError("the device is given twice (device= and a provider's device_id): give one")
            if wanted_device is not None:
                device = wanted_device
            if wanted_precision is not None:
                if precision is not None and precision != wanted_precision:
                    raise ValueError(f"precision={precision!r} contradicts the provider option "
                                     f"precision={wanted_precision!r}")
                precision = wanted_precision
        elif provider_options is not None:
            raise ValueError("provider_options without providers: give providers=[...] with one options dict each")
        precision = "f16" if precision is None else precision
        super().__init__(path_or_bytes, device=device, precision=precision, free_dims=free,
                         free_dim_denotations=denoted,
                         sequence_inputs=dict(sequence_inputs or {}), absent_inputs=list(absent_inputs or []),
                         profile=bool(profile), profile_file=profile_file, profile_prefix=prefix)
        self._sess_options = sess_options if sess_options is not None else SessionOptions()

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model: output_names (None: all) in that order, input_feed {name: array};
        run_options a vkml.RunOptions (terminate=True refuses the run)."""
        if run_options is not None:
            if not hasattr(run_options, "terminate"):
                raise TypeError("run_options is a vkml.RunOptions (or onnxruntime.RunOptions), not "
                                f"{type(run_options).__name__}")
            if run_options.terminate:
                raise RuntimeError("run_options.terminate is set: the run was not started")
        return super().run(output_names, input_feed)

    def get_providers(self):
        return [VKML_PROVIDER]

    def get_provider_options(self):
        device = self._device
        return {VKML_PROVIDER: {"device_id": str(device["index"]), "device_name": device["name"],
                                "precision": self.precision}}

    def get_session_options(self):
        return self._sess_options
