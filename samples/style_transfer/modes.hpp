#pragma once
// The sample's two ways to run: over files (--input: an image, a folder of images, or a video) or
// over the rendered scene in a frame graph (window, or --headless for tests).
namespace vkml::style_sample {

int run_files(int argc, char** argv);
int run_scene(int argc, char** argv);

} // namespace vkml::style_sample
