// vkml: one command line with subcommands, in the style of ffmpeg's and ncnn's tools.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "vkml/error.hpp"
#include "vkml/version.hpp"

namespace {

void usage(FILE* out) {
    std::fprintf(out,
                 "vkml %s - machine learning on Vulkan\n\n"
                 "usage: vkml [COMMAND] [OPTIONS]\n\n"
                 "commands:\n"
                 "  info [--json]       list Vulkan devices, queues, capabilities and memory\n"
                 "  selftest            run compute dispatches on the selected device and check them\n"
                 "  ops [--markdown]    list the supported operators with their dtypes and limits\n"
                 "  bench ops [...]     time each operator on the GPU (vkml bench --help)\n"
                 "  bench model MODEL   time a whole model on the GPU (vkml bench model --help)\n"
                 "  run MODEL [...]     run a model on image or .npy inputs (vkml run --help)\n"
                 "  upscale [INPUT]     upscale a video, image or folder (vkml upscale --help)\n"
                 "  detect INPUT... [...] detect objects in images, folders, videos (vkml detect --help)\n"
                 "  help                show this text\n"
                 "  version             print the version\n\n"
                 "With no command, vkml runs `info` and then `selftest`.\n\n"
                 "environment:\n"
                 "  VKML_DEVICE=N|NAME  pick a device by index or name substring\n"
                 "  VKML_VALIDATION=1   enable the Khronos validation layer (synchronization too)\n"
                 "  VKML_CACHE_DIR=DIR  where the pipeline cache lives (default ~/.cache/vkml)\n"
                 "  VKML_MEMORY_LIMIT=N cap vkml's device memory (bytes, or with K/M/G)\n"
                 "  VKML_MODELS=DIR     the model packages (default ~/.cache/vkml/models)\n"
                 "  VKML_COOPMAT=nv|khr|off  the cooperative-matrix extension for the tensor cores\n"
                 "                      (default: NV where offered, else KHR)\n"
                 "  VKML_DISABLE_COOPMAT=1  no cooperative matrices (tensor cores): the scalar kernels\n"
                 "  VKML_COOP_TILE=T, VKML_COOP_MIN_ROWS=N, VKML_DIRECT_OB=N, VKML_DIRECT_PX=N,\n"
                 "  VKML_SPLIT_TARGET=N  convolution tuning\n"
                 "  VKML_WAIT_TIMEOUT=S seconds without GPU progress before a wait gives up (default\n"
                 "                      600; 0: no limit)\n"
                 "  VKML_FAULT_ALLOC=N  a test switch: the N-th device memory allocation fails (N+: it\n"
                 "                      and every later one)\n",
                 VKML_VERSION_STRING);
}

// What to try when the device ran out of memory, for the command that did.
std::string out_of_memory_hint(std::string_view cmd) {
    std::string hint;
    if (cmd == "upscale")
        hint = "use smaller tiles (--tile 256, or lower), a smaller model (-m anime4k-s, esrgan-slim) or "
               "fewer frames in flight (-j 0:1:0)";
    else if (cmd == "run")
        hint = "vkml run takes each input whole: use a smaller input (--resize WxH) or a smaller model; "
               "`vkml upscale --tile N` works through large images in tiles";
    else if (cmd == "detect")
        hint = "use a smaller network input (--size 320x320) or a smaller model";
    else if (cmd == "bench")
        hint = "use a smaller --size or a smaller model";
    else
        hint = "free device memory or use a smaller model";
    if (const char* limit = std::getenv("VKML_MEMORY_LIMIT"); limit && *limit)
        hint += ", or raise VKML_MEMORY_LIMIT (now " + std::string(limit) + ")";
    return hint;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    try {
        if (args.empty()) {
            const int rc = vkml::tool::info_main({});
            if (rc != 0) return rc;
            std::printf("\n");
            return vkml::tool::selftest_main({});
        }
        const std::string_view cmd = args[0];
        const vkml::tool::Args rest(args.data() + 1, args.size() - 1);
        if (cmd == "info") return vkml::tool::info_main(rest);
        if (cmd == "selftest") return vkml::tool::selftest_main(rest);
        if (cmd == "ops") return vkml::tool::ops_main(rest);
        if (cmd == "bench") return vkml::tool::bench_main(rest);
        if (cmd == "run") return vkml::tool::run_main(rest);
        if (cmd == "upscale") return vkml::tool::upscale_main(rest);
        if (cmd == "detect") return vkml::tool::detect_main(rest);
        if (cmd == "version" || cmd == "--version") {
            std::printf("vkml %s\n", VKML_VERSION_STRING);
            return 0;
        }
        if (cmd == "help" || cmd == "--help" || cmd == "-h") {
            usage(stdout);
            return 0;
        }
        std::fprintf(stderr, "vkml: unknown command '%.*s'\n\n", int(cmd.size()), cmd.data());
        usage(stderr);
        return 2;
    } catch (const vkml::Error& e) {
        std::fprintf(stderr, "vkml: %s\n", e.what());
        if (e.code() == vkml::ErrorCode::OutOfDeviceMemory)
            std::fprintf(stderr, "vkml: out of device memory: %s\n",
                         out_of_memory_hint(args.empty() ? "" : args[0]).c_str());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkml: internal error: %s\n", e.what());
        return 1;
    }
}
