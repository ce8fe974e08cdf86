#pragma once
// What the Vulkan loader offers before there is an instance: for hosts that create their own
// instance (the samples) as much as for Device::create.
namespace vkml::gpu {

bool layer_available(const char* name);
bool instance_extension_available(const char* name);

} // namespace vkml::gpu
