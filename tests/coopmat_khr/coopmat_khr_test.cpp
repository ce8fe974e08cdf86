// The NV -> KHR cooperative-matrix rewrite (tools/coopmat_khr): small NV modules assembled with
// SPIRV-Tools (and validated by it, so the inputs are sound), rewritten, checked by the rewrite's
// KHR checker and inspected instruction by instruction; then every KHR twin embedded in the
// library. (Bookworm's SPIRV-Tools cannot read the KHR output, hence the hand inspection.)
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <spirv-tools/libspirv.hpp>

#include "coopmat_khr.hpp"
#include "vkml/shader_ids.hpp"

namespace {

using namespace vkml::coopmat_khr;

constexpr uint32_t OpTypeCooperativeMatrixNV = 5358;
constexpr uint32_t OpConstant = 43, OpConstantComposite = 44, OpTypeArray = 28, OpTypePointer = 32,
                   OpTypeFunction = 33, OpCapability = 17, OpExtension = 10, OpTypeInt = 21;

std::vector<uint32_t> assemble(const std::string& text) {
    spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
    std::string diag;
    tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos, const char* msg) {
        diag += "line " + std::to_string(pos.line) + ": " + msg + "\n";
    });
    std::vector<uint32_t> words;
    EXPECT_TRUE(tools.Assemble(text, &words, SPV_TEXT_TO_BINARY_OPTION_NONE)) << diag;
    EXPECT_TRUE(tools.Validate(words)) << "the NV test module is not valid:\n" << diag;
    return words;
}

struct Inst {
    uint32_t op;
    std::vector<uint32_t> w;
};

std::vector<Inst> instructions(const std::vector<uint32_t>& words) {
    std::vector<Inst> out;
    for (size_t i = 5; i < words.size();) {
        const uint32_t n = words[i] >> 16;
        out.push_back({words[i] & 0xffffu, std::vector<uint32_t>(words.begin() + long(i) + 1, words.begin() + long(i + n))});
        i += n;
    }
    return out;
}

struct Khr {
    std::vector<Inst> insts;
    std::map<uint32_t, const Inst*> def;
    std::map<uint32_t, uint32_t> constant; // OpConstant id -> value

    explicit Khr(const std::vector<uint32_t>& words) : insts(instructions(words)) {
        for (const Inst& in : insts) {
            if (in.op == OpConstant) constant[in.w[1]] = in.w[2];
            if (in.op == OpTypeCooperativeMatrixKHR || in.op == OpTypeArray || in.op == OpTypePointer ||
                in.op == OpTypeFunction || in.op == OpTypeInt)
                def[in.w[0]] = &in;
            else if (in.op == OpConstant || in.op == OpConstantComposite)
                def[in.w[1]] = &in;
        }
    }
    std::vector<const Inst*> all(uint32_t op) const {
        std::vector<const Inst*> r;
        for (const Inst& in : insts)
            if (in.op == op) r.push_back(&in);
        return r;
    }
    // The Use of a KHR matrix type.
    uint32_t use(uint32_t type) const { return constant.at(def.at(type)->w[5]); }
    // The Use of the matrix inside a type (through arrays and pointers).
    uint32_t use_inside(uint32_t type) const {
        const Inst* t = def.at(type);
        if (t->op == OpTypeArray) return use_inside(t->w[1]);
        if (t->op == OpTypePointer) return use_inside(t->w[2]);
        return use(type);
    }
};

std::string to_string(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& e : v) s += e + "\n";
    return s;
}

const char* kHeader = R"(
OpCapability Shader
OpCapability Float16
OpCapability VulkanMemoryModel
OpCapability CooperativeMatrixNV
OpExtension "SPV_NV_cooperative_matrix"
OpMemoryModel Logical Vulkan
OpEntryPoint GLCompute %main "main" %sh
OpExecutionMode %main LocalSize 32 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%uint = OpTypeInt 32 0
%half = OpTypeFloat 16
%float = OpTypeFloat 32
%v4uint = OpTypeVector %uint 4
%u0 = OpConstant %uint 0
%u2 = OpConstant %uint 2
%u3 = OpConstant %uint 3
%u9 = OpConstant %uint 9
%u16 = OpConstant %uint 16
%u64 = OpConstant %uint 64
%false = OpConstantFalse %bool
%true = OpConstantTrue %bool
%f0 = OpConstant %float 0
%h0 = OpConstant %half 0
%mh = OpTypeCooperativeMatrixNV %half %u3 %u16 %u16
%mf = OpTypeCooperativeMatrixNV %float %u3 %u16 %u16
%arr = OpTypeArray %v4uint %u64
%ptr_wg_arr = OpTypePointer Workgroup %arr
%ptr_wg_v4 = OpTypePointer Workgroup %v4uint
%sh = OpVariable %ptr_wg_arr Workgroup
)";

// The tile loop of conv/coopmat_tile.glsl in small: one f16 type for both A and B fragments, held
// in function-local arrays, an fp32 accumulator from a constant, element-wise arithmetic on it.
const std::string kTile = std::string(kHeader) + R"(
%zero = OpConstantComposite %mf %f0
%arr_mh = OpTypeArray %mh %u2
%ptr_fn_arr_mh = OpTypePointer Function %arr_mh
%ptr_fn_mh = OpTypePointer Function %mh
%main = OpFunction %void None %fn
%entry = OpLabel
%fa = OpVariable %ptr_fn_arr_mh Function
%fb = OpVariable %ptr_fn_arr_mh Function
%p0 = OpAccessChain %ptr_wg_v4 %sh %u0
%a = OpCooperativeMatrixLoadNV %mh %p0 %u9 %false
%pa = OpAccessChain %ptr_fn_mh %fa %u0
OpStore %pa %a
%b = OpCooperativeMatrixLoadNV %mh %p0 %u9 %true MakePointerVisible|NonPrivatePointer %u2
%pb = OpAccessChain %ptr_fn_mh %fb %u0
OpStore %pb %b
%a2 = OpLoad %mh %pa
%b2 = OpLoad %mh %pb
%c = OpCooperativeMatrixMulAddNV %mf %a2 %b2 %zero
%d = OpFAdd %mf %c %zero
OpCooperativeMatrixStoreNV %p0 %d %u9 %false MakePointerAvailable|NonPrivatePointer %u2
OpReturn
OpFunctionEnd
)";

TEST(CoopmatKhr, SplitsATypeUsedAsAAndBAndRetypesLoadsStoresAndArrays) {
    const std::vector<uint32_t> khr = rewrite(assemble(kTile));
    EXPECT_EQ(to_string(check(khr)), "");
    const Khr m(khr);

    // One NV f16 type became a MatrixA and a MatrixB type; the f32 one an accumulator.
    const auto types = m.all(OpTypeCooperativeMatrixKHR);
    ASSERT_EQ(types.size(), 3u);
    std::vector<uint32_t> uses;
    for (const Inst* t : types) uses.push_back(m.use(t->w[0]));
    std::sort(uses.begin(), uses.end());
    EXPECT_EQ(uses, (std::vector<uint32_t>{UseMatrixA, UseMatrixB, UseAccumulator}));
    EXPECT_TRUE(m.all(OpTypeCooperativeMatrixNV).empty());

    // The arrays of fragments and their pointers were split with it: fa holds A, fb holds B.
    const auto arrays = m.all(OpTypeArray);
    size_t matrix_arrays = 0;
    for (const Inst* a : arrays)
        if (m.def.count(a->w[1]) && m.def.at(a->w[1])->op == OpTypeCooperativeMatrixKHR) ++matrix_arrays;
    EXPECT_EQ(matrix_arrays, 2u);

    // Loads: A row-major, B column-major with its memory operands kept; both retyped.
    const auto loads = m.all(OpCooperativeMatrixLoadKHR);
    ASSERT_EQ(loads.size(), 2u);
    EXPECT_EQ(m.use(loads[0]->w[0]), UseMatrixA);
    EXPECT_EQ(m.constant.at(loads[0]->w[3]), LayoutRowMajor);
    EXPECT_EQ(m.constant.at(loads[0]->w[4]), 9u); // Stride follows the layout
    EXPECT_EQ(loads[0]->w.size(), 5u);
    EXPECT_EQ(m.use(loads[1]->w[0]), UseMatrixB);
    EXPECT_EQ(m.constant.at(loads[1]->w[3]), LayoutColumnMajor);
    EXPECT_EQ(m.constant.at(loads[1]->w[4]), 9u);
    ASSERT_EQ(loads[1]->w.size(), 7u);
    EXPECT_EQ(loads[1]->w[5], 0x10u | 0x20u); // MakePointerVisible | NonPrivatePointer
    EXPECT_EQ(m.constant.at(loads[1]->w[6]), 2u);

    const auto stores = m.all(OpCooperativeMatrixStoreKHR);
    ASSERT_EQ(stores.size(), 1u);
    EXPECT_EQ(m.constant.at(stores[0]->w[2]), LayoutRowMajor);
    EXPECT_EQ(m.constant.at(stores[0]->w[3]), 9u);
    EXPECT_EQ(stores[0]->w[4], 0x8u | 0x20u); // MakePointerAvailable | NonPrivatePointer

    const auto muladds = m.all(OpCooperativeMatrixMulAddKHR);
    ASSERT_EQ(muladds.size(), 1u);
    EXPECT_EQ(muladds[0]->w.size(), 5u); // floats: no Cooperative Matrix Operands
    EXPECT_EQ(m.use(muladds[0]->w[0]), UseAccumulator);

    // The capability and the extension.
    bool cap = false, ext = false;
    for (const Inst* c : m.all(OpCapability)) cap |= c->w[0] == CapabilityCooperativeMatrixKHR;
    for (const Inst* e : m.all(OpExtension))
        ext |= std::string(reinterpret_cast<const char*>(e->w.data())) == "SPV_KHR_cooperative_matrix";
    EXPECT_TRUE(cap);
    EXPECT_TRUE(ext);
}

TEST(CoopmatKhr, AModuleWithoutCooperativeMatricesIsUntouched) {
    const std::vector<uint32_t> in = assemble(R"(
OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 64 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%main = OpFunction %void None %fn
%entry = OpLabel
OpReturn
OpFunctionEnd
)");
    EXPECT_EQ(rewrite(in), in);
    EXPECT_EQ(to_string(check(in)), "");
}

TEST(CoopmatKhr, AConstantUsedInTwoRolesBecomesTwoConstants) {
    const std::vector<uint32_t> khr = rewrite(assemble(std::string(kHeader) + R"(
%hz = OpConstantComposite %mh %h0
%main = OpFunction %void None %fn
%entry = OpLabel
%p0 = OpAccessChain %ptr_wg_v4 %sh %u0
%b = OpCooperativeMatrixLoadNV %mh %p0 %u9 %false
%c = OpCooperativeMatrixMulAddNV %mh %hz %b %hz
OpCooperativeMatrixStoreNV %p0 %c %u9 %true
OpReturn
OpFunctionEnd
)"));
    EXPECT_EQ(to_string(check(khr)), "");
    const Khr m(khr);
    std::vector<uint32_t> uses;
    for (const Inst* c : m.all(OpConstantComposite)) uses.push_back(m.use(c->w[0]));
    std::sort(uses.begin(), uses.end());
    EXPECT_EQ(uses, (std::vector<uint32_t>{UseMatrixA, UseAccumulator}));
    const Inst* mad = m.all(OpCooperativeMatrixMulAddKHR).at(0);
    EXPECT_NE(mad->w[2], mad->w[4]); // A and C are different constants now
    EXPECT_EQ(m.constant.at(m.all(OpCooperativeMatrixStoreKHR).at(0)->w[2]), LayoutColumnMajor);
}

TEST(CoopmatKhr, AValueUsedInTwoRolesIsAnError) {
    const std::vector<uint32_t> nv = assemble(std::string(kHeader) + R"(
%main = OpFunction %void None %fn
%entry = OpLabel
%p0 = OpAccessChain %ptr_wg_v4 %sh %u0
%a = OpCooperativeMatrixLoadNV %mh %p0 %u9 %false
%c = OpCooperativeMatrixMulAddNV %mh %a %a %a
OpReturn
OpFunctionEnd
)");
    try {
        rewrite(nv);
        FAIL() << "expected a RewriteError";
    } catch (const RewriteError& e) {
        EXPECT_NE(std::string(e.what()).find("MatrixA"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("MatrixB"), std::string::npos) << e.what();
    }
}

TEST(CoopmatKhr, SignedIntegerComponentsBecomeMulAddOperands) {
    const std::vector<uint32_t> khr = rewrite(assemble(R"(
OpCapability Shader
OpCapability Int8
OpCapability StorageBuffer8BitAccess
OpCapability VulkanMemoryModel
OpCapability CooperativeMatrixNV
OpExtension "SPV_NV_cooperative_matrix"
OpMemoryModel Logical Vulkan
OpEntryPoint GLCompute %main "main" %sh
OpExecutionMode %main LocalSize 32 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%uint = OpTypeInt 32 0
%int = OpTypeInt 32 1
%char = OpTypeInt 8 1
%uchar = OpTypeInt 8 0
%u0 = OpConstant %uint 0
%u3 = OpConstant %uint 3
%u16 = OpConstant %uint 16
%u64 = OpConstant %uint 64
%false = OpConstantFalse %bool
%i0 = OpConstant %int 0
%ma = OpTypeCooperativeMatrixNV %char %u3 %u16 %u16
%mb = OpTypeCooperativeMatrixNV %uchar %u3 %u16 %u16
%mc = OpTypeCooperativeMatrixNV %int %u3 %u16 %u16
%zero = OpConstantComposite %mc %i0
%arr = OpTypeArray %uint %u64
%ptr_wg_arr = OpTypePointer Workgroup %arr
%ptr_wg_u = OpTypePointer Workgroup %uint
%sh = OpVariable %ptr_wg_arr Workgroup
%main = OpFunction %void None %fn
%entry = OpLabel
%p0 = OpAccessChain %ptr_wg_u %sh %u0
%a = OpCooperativeMatrixLoadNV %ma %p0 %u16 %false
%b = OpCooperativeMatrixLoadNV %mb %p0 %u16 %false
%c = OpCooperativeMatrixMulAddNV %mc %a %b %zero
OpCooperativeMatrixStoreNV %p0 %c %u16 %false
OpReturn
OpFunctionEnd
)"));
    EXPECT_EQ(to_string(check(khr)), "");
    const Khr m(khr);
    const Inst* mad = m.all(OpCooperativeMatrixMulAddKHR).at(0);
    ASSERT_EQ(mad->w.size(), 6u);
    // A (int8) and C and Result (int32) are signed, B (uint8) is not.
    EXPECT_EQ(mad->w[5], MatrixASigned | MatrixCSigned | MatrixResultSigned);
}

TEST(CoopmatKhr, FunctionParametersAndResultsTakeTheirUse) {
    const std::vector<uint32_t> khr = rewrite(assemble(std::string(kHeader) + R"(
%zero = OpConstantComposite %mf %f0
%fn_mh = OpTypeFunction %mh %mh
%main = OpFunction %void None %fn
%entry = OpLabel
%p0 = OpAccessChain %ptr_wg_v4 %sh %u0
%a = OpCooperativeMatrixLoadNV %mh %p0 %u9 %false
%b = OpCooperativeMatrixLoadNV %mh %p0 %u9 %true
%b2 = OpFunctionCall %mh %id %b
%c = OpCooperativeMatrixMulAddNV %mf %a %b2 %zero
%n = OpFNegate %mf %c
OpCooperativeMatrixStoreNV %p0 %n %u9 %false
OpReturn
OpFunctionEnd
%id = OpFunction %mh None %fn_mh
%x = OpFunctionParameter %mh
%body = OpLabel
OpReturnValue %x
OpFunctionEnd
)"));
    EXPECT_EQ(to_string(check(khr)), "");
    const Khr m(khr);
    // %id passes a B matrix through: its function type is (B) -> B.
    const Inst* ft = nullptr;
    for (const Inst* f : m.all(OpTypeFunction))
        if (f->w.size() == 3) ft = f;
    ASSERT_NE(ft, nullptr);
    EXPECT_EQ(m.use(ft->w[1]), UseMatrixB);
    EXPECT_EQ(m.use(ft->w[2]), UseMatrixB);
}

TEST(CoopmatKhr, TheCheckerCatchesAWrongUse) {
    std::vector<uint32_t> khr = rewrite(assemble(kTile));
    ASSERT_EQ(to_string(check(khr)), "");
    // Turn the MatrixB type into a second MatrixA type: the MulAdd's B operand is then wrong.
    const Khr m(khr);
    uint32_t use_a = 0;
    for (const Inst* t : m.all(OpTypeCooperativeMatrixKHR))
        if (m.use(t->w[0]) == UseMatrixA) use_a = t->w[5];
    ASSERT_NE(use_a, 0u);
    for (size_t i = 5; i < khr.size(); i += khr[i] >> 16)
        if ((khr[i] & 0xffffu) == OpTypeCooperativeMatrixKHR && m.constant.at(khr[i + 6]) == UseMatrixB)
            khr[i + 6] = use_a;
    const std::string errors = to_string(check(khr));
    EXPECT_NE(errors.find("B has Use 0"), std::string::npos) << errors;
}

TEST(CoopmatKhr, TheCheckerCatchesIdsOutOfOrderOrPastTheBound) {
    std::vector<uint32_t> khr = rewrite(assemble(kTile));
    ASSERT_EQ(to_string(check(khr)), "");
    std::vector<uint32_t> low = khr;
    low[3] = 2; // the bound
    EXPECT_NE(to_string(check(low)).find("not below the bound"), std::string::npos);
    // Move the first matrix type to the end of the module: its Use constant and the arrays of
    // it are then out of order.
    for (size_t i = 5; i < khr.size(); i += khr[i] >> 16) {
        if ((khr[i] & 0xffffu) != OpTypeCooperativeMatrixKHR) continue;
        const std::vector<uint32_t> type(khr.begin() + long(i), khr.begin() + long(i + (khr[i] >> 16)));
        khr.erase(khr.begin() + long(i), khr.begin() + long(i + type.size()));
        khr.insert(khr.end(), type.begin(), type.end());
        break;
    }
    EXPECT_NE(to_string(check(khr)).find("not declared before it"), std::string::npos);
}

TEST(CoopmatKhr, TheCheckerCatchesLeftoverNvAndMissingCapability) {
    const std::vector<uint32_t> nv = assemble(kTile);
    const std::string errors = to_string(check(nv));
    EXPECT_NE(errors.find("CooperativeMatrixNV remains"), std::string::npos) << errors;
    EXPECT_NE(errors.find("OpCooperativeMatrixMulAddNV remains"), std::string::npos) << errors;
}

// Every +coopmat shader of shaders/*.list carries a KHR twin that the checker accepts and that is
// exactly what the rewrite makes of its NV code; no other shader carries one.
TEST(CoopmatKhr, EveryEmbeddedTensorCoreShaderHasACheckedKhrTwin) {
    size_t twins = 0;
    for (uint32_t i = 0; i < vkml::gpu::shader_count; ++i) {
        const vkml::gpu::ShaderInfo& info = vkml::gpu::shader_info(vkml::gpu::ShaderId(i));
        if (!(info.requires_bits & vkml::gpu::shader_requires_coopmat_nv)) {
            EXPECT_TRUE(info.code_khr.empty()) << info.id;
            continue;
        }
        ++twins;
        ASSERT_FALSE(info.code_khr.empty()) << info.id;
        EXPECT_EQ(to_string(check(info.code_khr)), "") << info.id;
        const std::vector<uint32_t> again = rewrite(info.code);
        EXPECT_TRUE(std::equal(again.begin(), again.end(), info.code_khr.begin(), info.code_khr.end())) << info.id;
        size_t muladds = 0;
        for (const Inst& in : instructions({info.code_khr.begin(), info.code_khr.end()}))
            muladds += in.op == OpCooperativeMatrixMulAddKHR;
        EXPECT_GT(muladds, 0u) << info.id;
    }
    EXPECT_GE(twins, 1u);
}

} // namespace
