// The tensor-core kernels' accumulator fragments (conv/coopmat_tile.glsl, conv/halo.comp): fp32 by
// default, f16 in the f16c variants (CM_ACC=16: ops::Accumulation::F16, half the accumulator
// registers, f16 rounding at every product sum). Epilogues read fp32 fragments either way
// (cm_acc_f32). Needs CM_L.
#ifndef VKML_CONV_COOPMAT_ACC_GLSL
#define VKML_CONV_COOPMAT_ACC_GLSL

#ifndef CM_ACC
#define CM_ACC 32
#endif
#if CM_ACC != 32 && CM_ACC != 16
#error "conv coopmat accumulators: CM_ACC is 32 or 16"
#endif
#define CM_ACC_MAT fcoopmatNV<CM_ACC, gl_ScopeSubgroup, CM_L, CM_L>
#if CM_ACC == 32
#define cm_acc_f32(x) (x)
#else
#define cm_acc_f32(x) fcoopmatNV<32, gl_ScopeSubgroup, CM_L, CM_L>(x)
#endif

#endif
