#pragma once
// The `vkml` command line's subcommands, each taking the arguments after its name.
#include <span>
#include <string_view>

namespace vkml::tool {

using Args = std::span<const std::string_view>;

int info_main(Args args);
int selftest_main(Args args);
int ops_main(Args args);
int bench_main(Args args);
int bench_model_main(Args args);
int run_main(Args args);
int upscale_main(Args args);
int detect_main(Args args);

} // namespace vkml::tool
