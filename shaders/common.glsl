// Shared by every vkml compute shader. One GLSL source covers fp32 and fp16 storage:
// `sfloat` is the storage type, arithmetic is done in `float` (afloat) unless a variant asks for
// fp16 arithmetic. Workgroup size comes from specialization constants 100..102 so the C++ side
// picks it per pipeline; constants 0.. carry shapes (0 means "read the push constant").
#ifndef VKML_COMMON_GLSL
#define VKML_COMMON_GLSL

#if VKML_FP16
#extension GL_EXT_shader_16bit_storage : require
#define sfloat float16_t
#define sfloat2 f16vec2
#define sfloat4 f16vec4
#else
#define sfloat float
#define sfloat2 vec2
#define sfloat4 vec4
#endif
#define afloat float

#define VKML_LOCAL_SIZE layout(local_size_x_id = 100, local_size_y_id = 101, local_size_z_id = 102) in

// Total invocation index for 1-D kernels that may be dispatched as a 2-D grid when the element
// count exceeds maxComputeWorkGroupCount[0] groups.
uint vkml_linear_id() {
    return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

#endif
