// Shared by every vkml compute shader. One GLSL source covers every storage variant (see
// shaders/CMakeLists.txt): `stype` is the storage type of the variant's main data and `ctype` the
// type arithmetic is done in; `sfloat`/`afloat` name them for float-only shaders. Load with
// ctype(x), store with stype(x). Workgroup size comes from specialization constants 100..102 so
// the C++ side picks it per pipeline; constants 0.. carry shapes (0 means "read the push constant").
#ifndef VKML_COMMON_GLSL
#define VKML_COMMON_GLSL

#if VKML_FP16
#extension GL_EXT_shader_16bit_storage : require
#if VKML_FP16_ARITH
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define ctype float16_t
#define ctype4 f16vec4
#else
#define ctype float
#define ctype4 vec4
#endif
#define stype float16_t
#define stype2 f16vec2
#define stype4 f16vec4
#elif VKML_I32
#define stype int
#define stype4 ivec4
#define ctype int
#define ctype4 ivec4
#elif VKML_U8
#extension GL_EXT_shader_8bit_storage : require
#define stype uint8_t
#define stype4 u8vec4
#define ctype uint
#define ctype4 uvec4
#else
#define stype float
#define stype2 vec2
#define stype4 vec4
#define ctype float
#define ctype4 vec4
#endif

// A zero of the storage type. Not stype(0) in f16 storage: without the float16 arithmetic
// extension bookworm's glslang folds float16_t(integer constant) to garbage (0 -> infinity).
#if VKML_FP16
#define stype_zero stype(0.0)
#else
#define stype_zero stype(0)
#endif

// Float-shader names (fp32 or fp16 storage, arithmetic in ctype).
#define sfloat stype
#define sfloat2 stype2
#define sfloat4 stype4
#define afloat ctype

// Put `VKML_LOCAL_SIZE;` before any code that uses gl_WorkGroupSize (shared array sizes, loops):
// glslang silently gives gl_WorkGroupSize the value 1 above the layout declaration.
#define VKML_LOCAL_SIZE layout(local_size_x_id = 100, local_size_y_id = 101, local_size_z_id = 102) in

// Total invocation index for 1-D kernels that may be dispatched as a 2-D grid when the element
// count exceeds maxComputeWorkGroupCount[0] groups (see CommandBuffer::groups_for). A macro, not a
// function: a function defined here would see gl_WorkGroupSize before VKML_LOCAL_SIZE, i.e. 1.
#define vkml_linear_id() (gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x)

#endif
