// `vkml detect INPUT... [-o OUT] [--model nanodet|PATH] [--format ...] [--score S] [--iou T]
// [--json FILE]`: the detection application (detect_app.hpp), also behind samples/detect.
#include "commands.hpp"
#include "detect_app.hpp"

namespace vkml::tool {

int detect_main(Args args) {
    const auto options = detect_app::parse_args(args, "vkml detect");
    if (!options) return 0;
    return detect_app::run(*options);
}

} // namespace vkml::tool
