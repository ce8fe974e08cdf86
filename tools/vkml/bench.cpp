// `vkml bench ops`: per-operator GPU timings (bench/op_bench.cpp).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../../bench/op_bench.hpp"
#include "commands.hpp"

namespace vkml::tool {

int bench_main(Args args) {
    if (!args.empty() && args[0] == "model") return bench_model_main(args.subspan(1));
    const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h" ||
                                        (args[0] == "ops" && args.size() > 1 && (args[1] == "--help" || args[1] == "-h")));
    if (help || args.empty() || args[0] != "ops") {
        std::fprintf(help ? stdout : stderr, "usage: vkml bench ops [--large] [--filter TEXT] [--runs N] [--peak-tflops X] [--json FILE]\n"
                             "       vkml bench model MODEL [--size WxH] [--fp32] [--runs N] [--json FILE] [--profile]\n"
                             "                        [--no-fused-stack]\n"
                             "  --large          the real sizes (960x540 feature maps) instead of the small ones\n"
                             "  --filter TEXT    only cases whose name contains TEXT\n"
                             "  --runs N         timed records per case (median reported; default 25)\n"
                             "  --peak-tflops X  the device's compute peak, for the roofline share of compute-bound ops\n"
                             "  --json FILE      also write the results to FILE as JSON\n"
                             "  --profile        (model) also the GPU time of every step\n"
                             "  --no-fused-stack (model) Anime4K-shaped networks layer by layer, not as one FusedConvStack\n");
        return help ? 0 : 2;
    }
    bench::OpBenchOptions opt;
    for (size_t i = 1; i < args.size(); ++i) {
        const std::string_view a = args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "vkml bench: %.*s needs a value\n", int(a.size()), a.data());
                std::exit(2);
            }
            return std::string(args[++i]);
        };
        if (a == "--large") opt.large = true;
        else if (a == "--filter") opt.filter = value();
        else if (a == "--runs") opt.runs = std::max(1, std::atoi(value().c_str()));
        else if (a == "--peak-tflops") opt.peak_tflops = std::atof(value().c_str());
        else if (a == "--json") opt.json_path = value();
        else {
            std::fprintf(stderr, "vkml bench: unknown option '%.*s'\n", int(a.size()), a.data());
            return 2;
        }
    }
    auto device = gpu::Device::create();
    return bench::run_op_bench(*device, opt);
}

} // namespace vkml::tool
