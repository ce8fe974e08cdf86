// The 1-D invocation index, for the layout shaders, included after VKML_LOCAL_SIZE. common.glsl's
// vkml_linear_id() comes before the layout declaration, where glslang folds gl_WorkGroupSize.x
// to 1, so dispatches folded into y (more than maxComputeWorkGroupCount[0] groups) would repeat
// indices. Declared here, after the layout, the spec-constant workgroup size is used.
#ifndef VKML_LAYOUT_LINEAR_ID_GLSL
#define VKML_LAYOUT_LINEAR_ID_GLSL
uint layout_linear_id() {
    return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
#endif
