#pragma once
// Build-time SPIR-V rewrite of SPV_NV_cooperative_matrix into SPV_KHR_cooperative_matrix, so the
// tensor-core shaders, written in GLSL_NV_cooperative_matrix (the only cooperative-matrix GLSL
// that Debian bookworm's glslang 12 compiles), also run on devices that expose only
// VK_KHR_cooperative_matrix (AMD, Intel). See docs/architecture.md, "Cooperative matrices: NV and
// KHR".
//
// What changes (SPV_NV_cooperative_matrix -> SPV_KHR_cooperative_matrix):
//   OpCapability CooperativeMatrixNV (5357)         -> CooperativeMatrixKHR (6022)
//   OpExtension "SPV_NV_cooperative_matrix"         -> "SPV_KHR_cooperative_matrix"
//   OpTypeCooperativeMatrixNV (5358) T C S R N      -> OpTypeCooperativeMatrixKHR (4456) T C S R N Use,
//       one KHR type per Use (MatrixA 0, MatrixB 1, MatrixAccumulator 2) the NV type's values are
//       put to; the Use of a value is inferred from the OpCooperativeMatrixMulAddNV operands it
//       reaches through loads, stores, access chains, phis, conversions, arithmetic and calls;
//       arrays, pointers, function types and constants of the type are split with it
//   OpCooperativeMatrixLoadNV (5359) RT R P Stride ColumnMajor [MemOp]
//                                                   -> OpCooperativeMatrixLoadKHR (4457) RT R P Layout Stride [MemOp]
//   OpCooperativeMatrixStoreNV (5360) P O Stride ColumnMajor [MemOp]
//                                                   -> OpCooperativeMatrixStoreKHR (4458) P O Layout Stride [MemOp]
//       Layout: RowMajorKHR 0 for ColumnMajor false, ColumnMajorKHR 1 for true (an OpConstant of
//       the module's 32-bit integer type); Stride keeps its unit, elements of the pointee type
//   OpCooperativeMatrixMulAddNV (5361) RT R A B C   -> OpCooperativeMatrixMulAddKHR (4459) RT R A B C [Operands],
//       Matrix{A,B,C,Result}SignedComponentsKHR set for each matrix whose component type is a
//       signed integer (NV takes signedness from the type, KHR from these operands)
//   OpCooperativeMatrixLengthNV (5362) RT R Type    -> OpCooperativeMatrixLengthKHR (4460) RT R Type
// Everything else is kept word for word; a module without CooperativeMatrixNV comes back unchanged.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace vkml::coopmat_khr {

// A module the rewrite cannot handle (a value used in two roles, a cooperative matrix inside a
// struct, an instruction on cooperative matrices it does not know): the message says which.
struct RewriteError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The KHR form of an NV module (SPIR-V words, header included).
std::vector<uint32_t> rewrite(std::span<const uint32_t> nv_module);

// The rules of SPV_KHR_cooperative_matrix (and the type agreement of every instruction that
// carries a cooperative matrix) that the rewrite must get right; empty when the module keeps them.
// Bookworm's spirv-val (SPIRV-Tools 2023.1) predates the KHR extension, so the build runs this on
// every KHR module, and spirv-val as well where it knows the extension.
std::vector<std::string> check(std::span<const uint32_t> khr_module);

// Opcodes and enumerants of SPV_KHR_cooperative_matrix (SPIRV-Registry,
// extensions/KHR/SPV_KHR_cooperative_matrix.asciidoc): bookworm's SPIR-V headers predate it.
inline constexpr uint32_t OpTypeCooperativeMatrixKHR = 4456;
inline constexpr uint32_t OpCooperativeMatrixLoadKHR = 4457;
inline constexpr uint32_t OpCooperativeMatrixStoreKHR = 4458;
inline constexpr uint32_t OpCooperativeMatrixMulAddKHR = 4459;
inline constexpr uint32_t OpCooperativeMatrixLengthKHR = 4460;
inline constexpr uint32_t CapabilityCooperativeMatrixKHR = 6022;
inline constexpr uint32_t UseMatrixA = 0, UseMatrixB = 1, UseAccumulator = 2;
inline constexpr uint32_t LayoutRowMajor = 0, LayoutColumnMajor = 1;
inline constexpr uint32_t MatrixASigned = 0x1, MatrixBSigned = 0x2, MatrixCSigned = 0x4, MatrixResultSigned = 0x8;

} // namespace vkml::coopmat_khr
