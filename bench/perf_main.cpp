// vkml_perf: `vkml info`, `vkml bench ops` and `vkml bench model` without the media libraries
// (FFmpeg and its codecs are most of what `vkml` loads), so a build carried to another machine
// for timing stays small. Same options and output as those subcommands.
#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include "../tools/vkml/commands.hpp"
#include "vkml/error.hpp"

int main(int argc, char** argv) {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    const vkml::tool::Args all(args);
    try {
        if (!args.empty() && args[0] == "info") return vkml::tool::info_main(all.subspan(1));
        if (!args.empty() && args[0] == "bench") return vkml::tool::bench_main(all.subspan(1));
        std::fprintf(args.empty() || args[0] == "--help" ? stdout : stderr,
                     "usage: vkml_perf info [--json]\n"
                     "       vkml_perf bench ops [--large] [--filter TEXT] [--runs N] [--peak-tflops X] [--json FILE]\n"
                     "       vkml_perf bench model MODEL [--size WxH] [--fp32] [--runs N] [--json FILE] [--profile]\n"
                     "                        [--no-fused-stack] [--f16-accumulate]\n");
        return !args.empty() && args[0] == "--help" ? 0 : 2;
    } catch (const vkml::Error& e) {
        std::fprintf(stderr, "vkml_perf: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkml_perf: internal error: %s\n", e.what());
        return 1;
    }
}
