// style_transfer: fast-neural-style models on images, folders, videos, or the rendered scene of
// the samples in real time (keys cycle the styles and move the strength). `--help` lists it all.
#include <string_view>

#include "modes.hpp"

int main(int argc, char** argv) {
    // --input selects the file mode; everything else (including --help) is the scene's host.
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) == "--input") return vkml::style_sample::run_files(argc, argv);
    return vkml::style_sample::run_scene(argc, argv);
}
