// `vkml ops`: the operators this build supports, from the code's own registry.
#include <cstdio>

#include "commands.hpp"
#include "vkml/ops/registry.hpp"

namespace vkml::tool {

int ops_main(Args args) {
    bool markdown = false;
    for (std::string_view a : args) {
        if (a == "--markdown") {
            markdown = true;
        } else if (a == "--help" || a == "-h") {
            std::printf("usage: vkml ops [--markdown]\n"
                        "  Lists the supported operators, their dtypes and limits (--markdown: docs/ops.md).\n");
            return 0;
        } else {
            std::fprintf(stderr, "vkml ops: unknown option '%.*s' (try --markdown)\n", int(a.size()), a.data());
            return 2;
        }
    }
    if (markdown) {
        std::fputs(ops::registry_markdown().c_str(), stdout);
        return 0;
    }
    std::string family;
    for (const ops::OpInfo& op : ops::registry()) {
        if (op.family != family) {
            family = op.family;
            std::printf("%s\n", family.c_str());
        }
        std::printf("  %-26s %-16s %s\n", op.type.c_str(), op.dtypes.c_str(), op.notes.c_str());
    }
    std::printf("%zu operators\n", ops::registry().size());
    return 0;
}

} // namespace vkml::tool
