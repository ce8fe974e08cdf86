// The NV -> KHR cooperative-matrix rewrite and its checker; see coopmat_khr.hpp.
#include "coopmat_khr.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#define SPV_ENABLE_UTILITY_CODE
#include <glslang/SPIRV/spirv.hpp>

namespace vkml::coopmat_khr {
namespace {

// SPV_NV_cooperative_matrix (in bookworm's headers, named here so the code reads the same).
constexpr uint32_t OpTypeCooperativeMatrixNV = 5358;
constexpr uint32_t OpCooperativeMatrixLoadNV = 5359;
constexpr uint32_t OpCooperativeMatrixStoreNV = 5360;
constexpr uint32_t OpCooperativeMatrixMulAddNV = 5361;
constexpr uint32_t OpCooperativeMatrixLengthNV = 5362;
constexpr uint32_t CapabilityCooperativeMatrixNV = 5357;
constexpr const char* kNvExtension = "SPV_NV_cooperative_matrix";
constexpr const char* kKhrExtension = "SPV_KHR_cooperative_matrix";
constexpr std::array<const char*, 3> kUseNames = {"MatrixA", "MatrixB", "MatrixAccumulator"};

struct Inst {
    uint32_t op = 0;
    std::vector<uint32_t> w; // operands, without the opcode word
};

struct Module {
    std::array<uint32_t, 5> header{};
    std::vector<Inst> insts;
};

Module parse(std::span<const uint32_t> words) {
    if (words.size() < 5 || words[0] != 0x07230203u) throw RewriteError("not a SPIR-V module");
    Module m;
    std::copy_n(words.begin(), 5, m.header.begin());
    for (size_t i = 5; i < words.size();) {
        const uint32_t count = words[i] >> 16, op = words[i] & 0xffffu;
        if (count == 0 || i + count > words.size())
            throw RewriteError("malformed instruction at word " + std::to_string(i));
        m.insts.push_back({op, std::vector<uint32_t>(words.begin() + long(i) + 1, words.begin() + long(i + count))});
        i += count;
    }
    return m;
}

std::vector<uint32_t> serialize(const Module& m) {
    std::vector<uint32_t> out(m.header.begin(), m.header.end());
    for (const Inst& in : m.insts) {
        out.push_back(uint32_t(in.w.size() + 1) << 16 | in.op);
        out.insert(out.end(), in.w.begin(), in.w.end());
    }
    return out;
}

void result_info(uint32_t op, bool& has_result, bool& has_type) {
    switch (op) {
    case OpTypeCooperativeMatrixKHR:
        has_result = true, has_type = false;
        return;
    case OpCooperativeMatrixLoadKHR:
    case OpCooperativeMatrixMulAddKHR:
    case OpCooperativeMatrixLengthKHR:
        has_result = has_type = true;
        return;
    case OpCooperativeMatrixStoreKHR:
        has_result = has_type = false;
        return;
    default:
        spv::HasResultAndType(spv::Op(op), &has_result, &has_type);
    }
}

std::string literal_string(const std::vector<uint32_t>& w, size_t first) {
    std::string s;
    for (size_t i = first; i < w.size(); ++i)
        for (int b = 0; b < 4; ++b) {
            const char c = char((w[i] >> (8 * b)) & 0xffu);
            if (c == 0) return s;
            s += c;
        }
    return s;
}

std::vector<uint32_t> string_words(const std::string& s) {
    std::vector<uint32_t> w(s.size() / 4 + 1, 0u);
    std::memcpy(w.data(), s.data(), s.size());
    return w;
}

bool is_arith(uint32_t op) {
    switch (op) {
    case spv::OpFNegate:
    case spv::OpSNegate:
    case spv::OpFAdd:
    case spv::OpFSub:
    case spv::OpFMul:
    case spv::OpFDiv:
    case spv::OpIAdd:
    case spv::OpISub:
    case spv::OpIMul:
    case spv::OpSDiv:
    case spv::OpUDiv:
        return true;
    default:
        return false;
    }
}

bool is_conversion(uint32_t op) {
    switch (op) {
    case spv::OpConvertFToU:
    case spv::OpConvertFToS:
    case spv::OpConvertSToF:
    case spv::OpConvertUToF:
    case spv::OpUConvert:
    case spv::OpSConvert:
    case spv::OpFConvert:
    case spv::OpBitcast:
        return true;
    default:
        return false;
    }
}

bool is_access_chain(uint32_t op) {
    return op == spv::OpAccessChain || op == spv::OpInBoundsAccessChain || op == spv::OpPtrAccessChain ||
           op == spv::OpInBoundsPtrAccessChain;
}

// Instructions whose id operands are never values (labels, merges, literals): skipped by the
// conservative scan for unknown uses of cooperative matrices.
bool no_value_operands(uint32_t op) {
    switch (op) {
    case spv::OpLabel:
    case spv::OpBranch:
    case spv::OpLoopMerge:
    case spv::OpSelectionMerge:
    case spv::OpSwitch:
    case spv::OpLine:
    case spv::OpNoLine:
    case spv::OpReturn:
    case spv::OpKill:
    case spv::OpUnreachable:
    case spv::OpFunctionEnd:
        return true;
    default:
        return false;
    }
}

// Definitions and types of a parsed module.
struct Index {
    const Module& m;
    std::unordered_map<uint32_t, size_t> def;
    std::unordered_map<uint32_t, uint32_t> type_of;
    std::unordered_map<uint32_t, std::string> names;
    size_t first_function = 0;

    explicit Index(const Module& mod) : m(mod) {
        first_function = m.insts.size();
        for (size_t i = 0; i < m.insts.size(); ++i) {
            const Inst& in = m.insts[i];
            bool r = false, t = false;
            result_info(in.op, r, t);
            if (in.op == spv::OpFunction && first_function == m.insts.size()) first_function = i;
            if (in.op == spv::OpName && !in.w.empty()) names[in.w[0]] = literal_string(in.w, 1);
            if (!r) continue;
            const size_t ri = t ? 1 : 0;
            if (in.w.size() <= ri) throw RewriteError("instruction without its result id");
            def[in.w[ri]] = i;
            if (t) type_of[in.w[ri]] = in.w[0];
        }
    }
    const Inst* get(uint32_t id) const {
        auto it = def.find(id);
        return it == def.end() ? nullptr : &m.insts[it->second];
    }
    uint32_t type(uint32_t id) const {
        auto it = type_of.find(id);
        return it == type_of.end() ? 0 : it->second;
    }
    std::string name(uint32_t id) const {
        auto it = names.find(id);
        return "%" + std::to_string(id) + (it == names.end() ? "" : " (" + it->second + ")");
    }
    bool constant_u32(uint32_t id, uint32_t& v) const {
        const Inst* in = get(id);
        if (!in || in->op != spv::OpConstant || in->w.size() != 3) return false;
        v = in->w[2];
        return true;
    }
};

std::string op_name(uint32_t op) {
    switch (op) {
    case OpTypeCooperativeMatrixNV:
        return "OpTypeCooperativeMatrixNV";
    case OpCooperativeMatrixLoadNV:
        return "OpCooperativeMatrixLoadNV";
    case OpCooperativeMatrixStoreNV:
        return "OpCooperativeMatrixStoreNV";
    case OpCooperativeMatrixMulAddNV:
        return "OpCooperativeMatrixMulAddNV";
    case OpCooperativeMatrixLengthNV:
        return "OpCooperativeMatrixLengthNV";
    case OpTypeCooperativeMatrixKHR:
        return "OpTypeCooperativeMatrixKHR";
    case OpCooperativeMatrixLoadKHR:
        return "OpCooperativeMatrixLoadKHR";
    case OpCooperativeMatrixStoreKHR:
        return "OpCooperativeMatrixStoreKHR";
    case OpCooperativeMatrixMulAddKHR:
        return "OpCooperativeMatrixMulAddKHR";
    case OpCooperativeMatrixLengthKHR:
        return "OpCooperativeMatrixLengthKHR";
    default:
        return "opcode " + std::to_string(op);
    }
}

// ------------------------------------------------------------------------------------------------
// The rewrite.

class Rewriter {
public:
    explicit Rewriter(Module mod) : m_(std::move(mod)), ix_(m_) {}

    std::vector<uint32_t> run() {
        analyse();
        assign();
        return emit();
    }

private:
    Module m_;
    Index ix_;

    // The NV matrix type inside `type` (itself, or through arrays and pointers), 0 for none.
    std::unordered_map<uint32_t, uint32_t> cm_memo_;
    uint32_t cm_of(uint32_t type) {
        if (type == 0) return 0;
        if (auto it = cm_memo_.find(type); it != cm_memo_.end()) return it->second;
        uint32_t r = 0;
        if (const Inst* t = ix_.get(type)) {
            switch (t->op) {
            case OpTypeCooperativeMatrixNV:
                r = type;
                break;
            case spv::OpTypeArray:
            case spv::OpTypeRuntimeArray:
                r = cm_of(t->w[1]);
                break;
            case spv::OpTypePointer:
                r = cm_of(t->w[2]);
                break;
            case spv::OpTypeStruct:
                for (size_t k = 1; k < t->w.size(); ++k)
                    if (cm_of(t->w[k]))
                        throw RewriteError("struct " + ix_.name(type) +
                                           " holds a cooperative matrix: not supported by the rewrite");
                break;
            default:
                break;
            }
        }
        cm_memo_[type] = r;
        return r;
    }
    bool is_cm_value(uint32_t id) { return cm_of(ix_.type(id)) != 0; }
    bool is_cm_type(uint32_t type) { return cm_of(type) != 0; }

    // Union-find over the values (and constant uses) that carry a cooperative matrix: members of
    // a set must have one Use.
    std::vector<int> parent_, fixed_;
    std::vector<std::string> why_; // what fixed the set's Use, for messages
    std::unordered_map<uint32_t, int> value_node_;
    std::map<std::pair<size_t, size_t>, int> const_slot_; // (instruction, operand) -> node
    std::vector<size_t> lengths_;
    std::unordered_map<uint32_t, std::vector<uint32_t>> params_; // function -> parameters

    int new_node() {
        parent_.push_back(int(parent_.size()));
        fixed_.push_back(-1);
        why_.emplace_back();
        return parent_.back();
    }
    int find(int n) {
        while (parent_[n] != n) n = parent_[n] = parent_[parent_[n]];
        return n;
    }
    int node(uint32_t id) {
        auto it = value_node_.find(id);
        if (it != value_node_.end()) return it->second;
        const int n = new_node();
        value_node_[id] = n;
        return n;
    }
    bool is_cm_constant(uint32_t id) {
        auto it = ix_.def.find(id);
        if (it == ix_.def.end() || it->second >= ix_.first_function) return false;
        const uint32_t op = m_.insts[it->second].op;
        return (op == spv::OpConstantComposite || op == spv::OpConstantNull || op == spv::OpUndef ||
                op == spv::OpSpecConstantComposite) &&
               is_cm_value(id);
    }
    // The node of operand k of instruction i: a fresh one per use of a constant (a constant used
    // in two roles becomes two constants), else the value's.
    int slot(size_t i, size_t k) {
        const uint32_t id = m_.insts[i].w.at(k);
        if (is_cm_constant(id)) {
            const int n = new_node();
            const_slot_[{i, k}] = n;
            return n;
        }
        return node(id);
    }
    [[noreturn]] void conflict(int a_fixed, int b_fixed, const std::string& a_why, const std::string& b_why,
                               const std::string& where) {
        throw RewriteError("a cooperative-matrix value is used as both " + std::string(kUseNames[a_fixed]) + " (" +
                           a_why + ") and " + kUseNames[b_fixed] + " (" + b_why + "), joined by " + where +
                           "; a KHR matrix type has one Use");
    }
    void unite(int a, int b, const std::string& where) {
        a = find(a), b = find(b);
        if (a == b) return;
        if (fixed_[a] >= 0 && fixed_[b] >= 0 && fixed_[a] != fixed_[b])
            conflict(fixed_[a], fixed_[b], why_[a], why_[b], where);
        parent_[b] = a;
        if (fixed_[a] < 0) fixed_[a] = fixed_[b], why_[a] = why_[b];
    }
    void fix(int n, uint32_t use, const std::string& why) {
        n = find(n);
        if (fixed_[n] >= 0 && fixed_[n] != int(use)) conflict(fixed_[n], int(use), why_[n], why, why);
        if (fixed_[n] < 0) fixed_[n] = int(use), why_[n] = why;
    }
    uint32_t role(int n) {
        const int f = fixed_[find(n)];
        return f < 0 ? UseAccumulator : uint32_t(f);
    }

    void analyse() {
        uint32_t function = 0;
        for (const Inst& in : m_.insts)
            if (in.op == spv::OpFunction) function = in.w[1];
            else if (in.op == spv::OpFunctionParameter) params_[function].push_back(in.w[1]);
        function = 0;
        for (size_t i = 0; i < m_.insts.size(); ++i) {
            const Inst& in = m_.insts[i];
            bool has_r = false, has_t = false;
            result_info(in.op, has_r, has_t);
            const uint32_t rt = has_t ? in.w[0] : 0, res = has_r ? in.w[has_t ? 1 : 0] : 0;
            const bool rcm = has_t && is_cm_type(rt);
            const std::string where = op_name(in.op) + " " + (res ? ix_.name(res) : std::string());
            auto here = [&](const char* op) { return std::string(op) + (res ? " " + ix_.name(res) : ""); };
            switch (in.op) {
            case spv::OpVariable:
                if (rcm) {
                    const int n = node(res);
                    if (in.w.size() > 3) unite(n, slot(i, 3), here("OpVariable"));
                }
                break;
            case spv::OpFunction:
                function = res;
                if (rcm) node(res);
                break;
            case spv::OpFunctionParameter:
            case OpCooperativeMatrixLoadNV:
                if (rcm) node(res);
                break;
            case spv::OpUndef:
                if (rcm && i >= ix_.first_function) node(res);
                break;
            case spv::OpLoad:
            case spv::OpCopyObject:
            case spv::OpCopyLogical:
            case spv::OpCompositeExtract:
            case spv::OpMatrixTimesScalar:
                if (rcm) unite(node(res), slot(i, 2), here("OpLoad/OpCopyObject/OpCompositeExtract"));
                break;
            case spv::OpStore:
                if (is_cm_value(in.w[1])) unite(slot(i, 0), slot(i, 1), "OpStore to " + ix_.name(in.w[0]));
                break;
            case spv::OpPhi:
                if (rcm)
                    for (size_t k = 2; k < in.w.size(); k += 2) unite(node(res), slot(i, k), here("OpPhi"));
                break;
            case spv::OpSelect:
                if (rcm) {
                    unite(node(res), slot(i, 3), here("OpSelect"));
                    unite(node(res), slot(i, 4), here("OpSelect"));
                }
                break;
            case spv::OpCompositeInsert:
                if (rcm) {
                    unite(node(res), slot(i, 3), here("OpCompositeInsert"));
                    if (is_cm_value(in.w[2])) unite(node(res), slot(i, 2), here("OpCompositeInsert"));
                }
                break;
            case spv::OpCompositeConstruct:
                if (rcm) {
                    const int n = node(res);
                    if (ix_.get(rt)->op != OpTypeCooperativeMatrixNV)
                        for (size_t k = 2; k < in.w.size(); ++k) unite(n, slot(i, k), here("OpCompositeConstruct"));
                }
                break;
            case OpCooperativeMatrixStoreNV:
                slot(i, 1);
                break;
            case OpCooperativeMatrixMulAddNV: {
                const std::string w = "OpCooperativeMatrixMulAddNV " + ix_.name(res);
                fix(node(res), UseAccumulator, w + " result");
                fix(slot(i, 2), UseMatrixA, w + " operand A");
                fix(slot(i, 3), UseMatrixB, w + " operand B");
                fix(slot(i, 4), UseAccumulator, w + " operand C");
                break;
            }
            case OpCooperativeMatrixLengthNV:
                lengths_.push_back(i);
                break;
            case spv::OpFunctionCall: {
                const auto& ps = params_[in.w[2]];
                for (size_t k = 3; k < in.w.size() && k - 3 < ps.size(); ++k)
                    if (is_cm_value(in.w[k])) unite(slot(i, k), node(ps[k - 3]), here("OpFunctionCall"));
                if (rcm) unite(node(res), node(in.w[2]), here("OpFunctionCall"));
                break;
            }
            case spv::OpReturnValue:
                if (is_cm_value(in.w[0])) unite(slot(i, 0), node(function), "OpReturnValue in " + ix_.name(function));
                break;
            case spv::OpConstantComposite:
            case spv::OpConstantNull:
            case spv::OpSpecConstantComposite:
                if (rcm && ix_.get(rt)->op != OpTypeCooperativeMatrixNV)
                    throw RewriteError("constant " + ix_.name(res) +
                                       " is an aggregate of cooperative matrices: not supported by the rewrite");
                break;
            case spv::OpSpecConstantOp:
                if (in.w.size() > 2 && in.w[2] == OpCooperativeMatrixLengthNV)
                    throw RewriteError("OpSpecConstantOp OpCooperativeMatrixLengthNV " + ix_.name(res) +
                                       ": KHR has no specialization-constant length");
                break;
            default:
                if (is_access_chain(in.op)) {
                    if (rcm) unite(node(res), slot(i, 2), here("OpAccessChain"));
                    break;
                }
                if (is_arith(in.op) || is_conversion(in.op)) {
                    if (rcm) {
                        const int n = node(res);
                        for (size_t k = 2; k < in.w.size(); ++k)
                            if (is_cm_value(in.w[k])) unite(n, slot(i, k), where);
                    }
                    break;
                }
                if (i < ix_.first_function || no_value_operands(in.op)) break;
                if (rcm) throw RewriteError(where + " makes a cooperative matrix: not supported by the rewrite");
                for (size_t k = has_t ? 2 : (has_r ? 1 : 0); k < in.w.size(); ++k)
                    if (is_cm_value(in.w[k]) || is_cm_constant(in.w[k]))
                        throw RewriteError(where + " uses the cooperative matrix " + ix_.name(in.w[k]) +
                                           ": not supported by the rewrite");
                break;
            }
        }
    }

    // Which (type, Use) and (constant, Use) pairs the module needs, and their ids.
    std::map<uint32_t, std::set<uint32_t>> type_roles_, const_roles_;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> type_id_, const_id_;
    std::map<size_t, uint32_t> length_role_;
    std::map<uint32_t, std::vector<std::vector<uint32_t>>> fn_sigs_; // function type -> signatures (ret, params)
    std::map<std::pair<uint32_t, std::vector<uint32_t>>, uint32_t> fn_type_id_;
    std::map<uint32_t, uint32_t> small_; // 32-bit integer constants 0, 1, 2 for Use and layout
    std::set<uint32_t> layout_values_;
    uint32_t bound_ = 0;

    void need(uint32_t type, uint32_t use) {
        if (!is_cm_type(type) || !type_roles_[type].insert(use).second) return;
        const Inst* t = ix_.get(type);
        if (t->op == spv::OpTypeArray || t->op == spv::OpTypeRuntimeArray) need(t->w[1], use);
        if (t->op == spv::OpTypePointer) need(t->w[2], use);
    }
    uint32_t retype(uint32_t type, uint32_t use) {
        if (!is_cm_type(type)) return type;
        return type_id_.at({type, use});
    }

    void assign() {
        for (const auto& [id, n] : value_node_) need(ix_.type(id), role(n));
        for (const auto& [at, n] : const_slot_) {
            const uint32_t c = m_.insts[at.first].w[at.second];
            const_roles_[c].insert(role(n));
            need(ix_.type(c), role(n));
        }
        for (size_t i : lengths_) {
            const uint32_t t = m_.insts[i].w[2];
            const auto& roles = type_roles_[t];
            if (roles.size() > 1)
                throw RewriteError("OpCooperativeMatrixLengthNV " + ix_.name(m_.insts[i].w[1]) + " of " +
                                   ix_.name(t) + ", a type used in several roles: its KHR length is ambiguous");
            length_role_[i] = roles.empty() ? UseAccumulator : *roles.begin();
            need(t, length_role_[i]);
        }
        // Declarations nothing uses keep one (accumulator) variant, so names and decorations on
        // them stay valid.
        for (size_t i = 0; i < ix_.first_function; ++i) {
            const Inst& in = m_.insts[i];
            bool has_r = false, has_t = false;
            result_info(in.op, has_r, has_t);
            if (!has_r) continue;
            const uint32_t id = in.w[has_t ? 1 : 0];
            if (!has_t && is_cm_type(id) && type_roles_[id].empty()) need(id, UseAccumulator);
            if (is_cm_constant(id) && const_roles_[id].empty()) {
                const_roles_[id].insert(UseAccumulator);
                need(in.w[0], UseAccumulator);
            }
        }
        // Function signatures with cooperative matrices, one function type per distinct signature.
        for (const Inst& in : m_.insts) {
            if (in.op != spv::OpFunction) continue;
            std::vector<uint32_t> sig;
            if (!signature(in, sig)) continue;
            auto& sigs = fn_sigs_[in.w[3]];
            if (std::find(sigs.begin(), sigs.end(), sig) == sigs.end()) sigs.push_back(sig);
        }
        for (size_t i = 0; i < ix_.first_function; ++i) {
            const Inst& in = m_.insts[i];
            if (in.op != spv::OpTypeFunction) continue;
            bool any = false;
            for (size_t k = 1; k < in.w.size(); ++k) any |= is_cm_type(in.w[k]);
            if (any && fn_sigs_[in.w[0]].empty())
                fn_sigs_[in.w[0]].push_back(std::vector<uint32_t>(in.w.size() - 1, UseAccumulator));
            for (const auto& sig : fn_sigs_[in.w[0]])
                for (size_t k = 1; k < in.w.size(); ++k) need(in.w[k], sig[k - 1]);
        }
        for (const Inst& in : m_.insts) {
            if (in.op == OpCooperativeMatrixLoadNV) layout_values_.insert(layout_value(in.w[4]));
            if (in.op == OpCooperativeMatrixStoreNV) layout_values_.insert(layout_value(in.w[3]));
        }

        // Ids: a type's, constant's or function type's first variant keeps its id, further ones
        // get new ids; the Use and layout constants are new.
        bound_ = m_.header[3];
        for (const auto& [type, roles] : type_roles_) {
            bool first = true;
            for (uint32_t r : roles) type_id_[{type, r}] = first ? type : bound_++, first = false;
        }
        for (const auto& [c, roles] : const_roles_) {
            bool first = true;
            for (uint32_t r : roles) const_id_[{c, r}] = first ? c : bound_++, first = false;
        }
        for (const auto& [ft, sigs] : fn_sigs_)
            for (size_t s = 0; s < sigs.size(); ++s) fn_type_id_[{ft, sigs[s]}] = s == 0 ? ft : bound_++;
        std::set<uint32_t> values(layout_values_);
        for (const auto& [t, roles] : type_roles_) values.insert(roles.begin(), roles.end());
        for (uint32_t v : values) small_[v] = bound_++;
    }

    // The Use of a function's result and parameters (0 where not a matrix); false when its type
    // has no cooperative matrix.
    bool signature(const Inst& function, std::vector<uint32_t>& sig) {
        const Inst* ft = ix_.get(function.w[3]);
        bool any = false;
        for (size_t k = 1; k < ft->w.size(); ++k) any |= is_cm_type(ft->w[k]);
        if (!any) return false;
        const uint32_t f = function.w[1];
        sig.assign(1, is_cm_type(ft->w[1]) ? role(node(f)) : 0u);
        const auto& ps = params_[f];
        for (size_t k = 2; k < ft->w.size(); ++k)
            sig.push_back(is_cm_type(ft->w[k]) && k - 2 < ps.size() ? role(node(ps[k - 2])) : 0u);
        return true;
    }

    uint32_t layout_value(uint32_t column_major) {
        const Inst* b = ix_.get(column_major);
        if (b && b->op == spv::OpConstantTrue) return LayoutColumnMajor;
        if (b && b->op == spv::OpConstantFalse) return LayoutRowMajor;
        throw RewriteError("the ColumnMajor operand " + ix_.name(column_major) +
                           " is not an OpConstantTrue/False: KHR needs a constant layout");
    }

    std::vector<uint32_t> emit() {
        Module out;
        out.header = m_.header;
        bool small_emitted = false;
        for (size_t i = 0; i < m_.insts.size(); ++i) {
            const Inst& in = m_.insts[i];
            bool has_r = false, has_t = false;
            result_info(in.op, has_r, has_t);
            switch (in.op) {
            case spv::OpCapability:
                out.insts.push_back(in);
                if (in.w[0] == CapabilityCooperativeMatrixNV) out.insts.back().w[0] = CapabilityCooperativeMatrixKHR;
                continue;
            case spv::OpExtension:
                out.insts.push_back(in);
                if (literal_string(in.w, 0) == kNvExtension) out.insts.back().w = string_words(kKhrExtension);
                continue;
            case OpTypeCooperativeMatrixNV: {
                if (!small_emitted) {
                    // Rows is a constant of a 32-bit integer type declared before this type.
                    const uint32_t int_type = ix_.type(in.w[3]);
                    for (const auto& [v, id] : small_) out.insts.push_back({spv::OpConstant, {int_type, id, v}});
                    small_emitted = true;
                }
                for (uint32_t r : type_roles_[in.w[0]])
                    out.insts.push_back({OpTypeCooperativeMatrixKHR,
                                         {type_id_.at({in.w[0], r}), in.w[1], in.w[2], in.w[3], in.w[4], small_.at(r)}});
                continue;
            }
            case spv::OpTypeArray:
            case spv::OpTypeRuntimeArray:
            case spv::OpTypePointer:
                if (is_cm_type(in.w[0])) {
                    const size_t elem = in.op == spv::OpTypePointer ? 2 : 1;
                    for (uint32_t r : type_roles_[in.w[0]]) {
                        Inst t = in;
                        t.w[0] = type_id_.at({in.w[0], r});
                        t.w[elem] = retype(in.w[elem], r);
                        out.insts.push_back(std::move(t));
                    }
                    continue;
                }
                break;
            case spv::OpTypeFunction:
                if (auto it = fn_sigs_.find(in.w[0]); it != fn_sigs_.end() && !it->second.empty()) {
                    for (const auto& sig : it->second) {
                        Inst t = in;
                        t.w[0] = fn_type_id_.at({in.w[0], sig});
                        for (size_t k = 1; k < in.w.size(); ++k) t.w[k] = retype(in.w[k], sig[k - 1]);
                        out.insts.push_back(std::move(t));
                    }
                    continue;
                }
                break;
            default:
                break;
            }
            if (has_r && has_t && is_cm_constant(in.w[1])) {
                for (uint32_t r : const_roles_[in.w[1]]) {
                    Inst c = in;
                    c.w[0] = retype(in.w[0], r);
                    c.w[1] = const_id_.at({in.w[1], r});
                    out.insts.push_back(std::move(c));
                }
                continue;
            }

            Inst o = in;
            if (has_t && is_cm_type(in.w[0])) o.w[0] = retype(in.w[0], role(node(in.w[1])));
            for (auto it = const_slot_.lower_bound({i, 0}); it != const_slot_.end() && it->first.first == i; ++it) {
                const uint32_t c = in.w[it->first.second];
                o.w[it->first.second] = const_id_.at({c, role(it->second)});
            }
            switch (in.op) {
            case spv::OpFunction: {
                std::vector<uint32_t> sig;
                if (signature(in, sig)) o.w[3] = fn_type_id_.at({in.w[3], sig});
                break;
            }
            case OpCooperativeMatrixLoadNV: {
                // RT R P Stride ColumnMajor [MemOp...] -> RT R P Layout Stride [MemOp...]
                std::vector<uint32_t> w{o.w[0], o.w[1], o.w[2], small_.at(layout_value(o.w[4])), o.w[3]};
                w.insert(w.end(), o.w.begin() + 5, o.w.end());
                o = {OpCooperativeMatrixLoadKHR, std::move(w)};
                break;
            }
            case OpCooperativeMatrixStoreNV: {
                // P O Stride ColumnMajor [MemOp...] -> P O Layout Stride [MemOp...]
                std::vector<uint32_t> w{o.w[0], o.w[1], small_.at(layout_value(o.w[3])), o.w[2]};
                w.insert(w.end(), o.w.begin() + 4, o.w.end());
                o = {OpCooperativeMatrixStoreKHR, std::move(w)};
                break;
            }
            case OpCooperativeMatrixMulAddNV: {
                // Signedness came from the component types in NV; KHR takes it from operands.
                uint32_t flags = 0;
                const std::array<uint32_t, 4> bits{MatrixResultSigned, MatrixASigned, MatrixBSigned, MatrixCSigned};
                const std::array<uint32_t, 4> types{in.w[0], ix_.type(in.w[2]), ix_.type(in.w[3]), ix_.type(in.w[4])};
                for (size_t k = 0; k < 4; ++k) {
                    const Inst* comp = ix_.get(ix_.get(cm_of(types[k]))->w[1]);
                    if (comp->op == spv::OpTypeInt && comp->w[2] == 1) flags |= bits[k];
                }
                o.op = OpCooperativeMatrixMulAddKHR;
                if (flags) o.w.push_back(flags);
                break;
            }
            case OpCooperativeMatrixLengthNV:
                o.op = OpCooperativeMatrixLengthKHR;
                o.w[2] = retype(in.w[2], length_role_.at(i));
                break;
            default:
                break;
            }
            out.insts.push_back(std::move(o));
        }
        out.header[3] = bound_;
        return serialize(out);
    }

};

} // namespace

std::vector<uint32_t> rewrite(std::span<const uint32_t> nv_module) {
    Module m = parse(nv_module);
    bool nv = false;
    for (const Inst& in : m.insts)
        nv |= (in.op == spv::OpCapability && in.w.at(0) == CapabilityCooperativeMatrixNV) ||
              (in.op >= OpTypeCooperativeMatrixNV && in.op <= OpCooperativeMatrixLengthNV);
    if (!nv) return {nv_module.begin(), nv_module.end()};
    return Rewriter(std::move(m)).run();
}

// ------------------------------------------------------------------------------------------------
// The checker.

namespace {

class Checker {
public:
    explicit Checker(const Module& m) : m_(m), ix_(m) {}

    std::vector<std::string> run() {
        bool cap_khr = false, cap_vmm = false, ext_khr = false, any_khr = false;
        for (const Inst& in : m_.insts) {
            if (in.op == spv::OpCapability) {
                cap_khr |= in.w[0] == CapabilityCooperativeMatrixKHR;
                cap_vmm |= in.w[0] == spv::CapabilityVulkanMemoryModel;
                if (in.w[0] == CapabilityCooperativeMatrixNV) fail("OpCapability CooperativeMatrixNV remains");
            }
            if (in.op == spv::OpExtension) {
                ext_khr |= literal_string(in.w, 0) == kKhrExtension;
                if (literal_string(in.w, 0) == kNvExtension) fail("OpExtension SPV_NV_cooperative_matrix remains");
            }
            if (in.op >= OpTypeCooperativeMatrixNV && in.op <= OpCooperativeMatrixLengthNV)
                fail(op_name(in.op) + " remains");
            any_khr |= in.op >= OpTypeCooperativeMatrixKHR && in.op <= OpCooperativeMatrixLengthKHR;
        }
        if (any_khr && !cap_khr) fail("KHR cooperative-matrix instructions without OpCapability CooperativeMatrixKHR");
        if (cap_khr && !ext_khr) fail("OpCapability CooperativeMatrixKHR without OpExtension SPV_KHR_cooperative_matrix");
        if (cap_khr && !cap_vmm) fail("OpCapability CooperativeMatrixKHR without OpCapability VulkanMemoryModel");

        check_ids();
        std::set<std::array<uint32_t, 5>> seen_types;
        uint32_t function_ret = 0;
        for (size_t i = 0; i < m_.insts.size(); ++i) {
            const Inst& in = m_.insts[i];
            bool has_r = false, has_t = false;
            result_info(in.op, has_r, has_t);
            const uint32_t rt = has_t ? in.w[0] : 0;
            const std::string at = op_name_of(in) + (has_r ? " " + ix_.name(in.w[has_t ? 1 : 0]) : "") + ": ";
            auto t = [&](size_t k) { return ix_.type(in.w.at(k)); };
            auto same = [&](uint32_t a, uint32_t b, const char* what) {
                if (a != b) fail(at + what + " types differ (" + ix_.name(a) + " vs " + ix_.name(b) + ")");
            };
            switch (in.op) {
            case OpTypeCooperativeMatrixKHR:
                check_type(in, at, seen_types);
                break;
            case OpCooperativeMatrixLoadKHR:
                if (!is_khr(rt)) fail(at + "result is not a KHR cooperative matrix");
                check_memory(in.w.at(2), in.w.at(3), in.w.size() > 4 ? in.w[4] : 0, in.w.size() > 5 ? in.w[5] : 0,
                             true, at);
                break;
            case OpCooperativeMatrixStoreKHR:
                if (!is_khr(t(1))) fail(at + "object is not a KHR cooperative matrix");
                check_memory(in.w.at(0), in.w.at(2), in.w.size() > 3 ? in.w[3] : 0, in.w.size() > 4 ? in.w[4] : 0,
                             false, at);
                break;
            case OpCooperativeMatrixMulAddKHR:
                check_muladd(in, at);
                break;
            case OpCooperativeMatrixLengthKHR: {
                const Inst* r = ix_.get(rt);
                if (!r || r->op != spv::OpTypeInt || r->w[1] != 32 || r->w[2] != 0)
                    fail(at + "result type must be a 32-bit unsigned integer");
                if (!is_khr(in.w.at(2))) fail(at + "operand is not a KHR cooperative-matrix type");
                break;
            }
            case spv::OpFunction:
                function_ret = rt;
                if (const Inst* ft = ix_.get(in.w[3]); !ft || ft->w.at(1) != rt)
                    fail(at + "result type differs from its function type's");
                break;
            case spv::OpFunctionParameter:
                break; // matched against the calls below
            case spv::OpFunctionCall: {
                const Inst* f = ix_.get(in.w[2]);
                const Inst* ft = f ? ix_.get(f->w[3]) : nullptr;
                if (!ft) break;
                same(rt, ft->w[1], "result and callee return");
                for (size_t k = 3; k < in.w.size(); ++k)
                    if (k - 1 < ft->w.size()) same(t(k), ft->w[k - 1], "argument and parameter");
                break;
            }
            case spv::OpReturnValue:
                if (touches(t(0))) same(t(0), function_ret, "returned value and function return");
                break;
            case spv::OpVariable:
                if (touches(rt)) {
                    const Inst* p = ix_.get(rt);
                    if (p->w[1] != spv::StorageClassFunction && p->w[1] != spv::StorageClassPrivate)
                        fail(at + "cooperative matrices live only in Function or Private variables");
                    if (in.w.size() > 3) same(t(3), p->w[2], "initializer and variable");
                }
                break;
            case spv::OpLoad:
                if (touches(rt) || touches(t(2))) same(rt, pointee(t(2)), "result and pointee");
                break;
            case spv::OpStore:
                if (touches(t(1)) || touches(t(0))) same(t(1), pointee(t(0)), "object and pointee");
                break;
            case spv::OpAccessChain:
            case spv::OpInBoundsAccessChain:
                if (touches(rt) || touches(t(2))) same(pointee(rt), walk(pointee(t(2)), in, 3, true), "result and walked");
                break;
            case spv::OpCopyObject:
            case spv::OpCopyLogical:
                if (touches(rt)) same(rt, t(2), "result and operand");
                break;
            case spv::OpCompositeExtract:
                if (touches(rt) || touches(t(2))) same(rt, walk(t(2), in, 3, false), "result and extracted");
                break;
            case spv::OpCompositeInsert:
                if (touches(rt)) {
                    same(rt, t(3), "result and composite");
                    same(t(2), walk(t(3), in, 4, false), "object and element");
                }
                break;
            case spv::OpCompositeConstruct:
            case spv::OpConstantComposite:
            case spv::OpSpecConstantComposite:
                if (is_khr(rt)) {
                    if (in.w.size() != 3) fail(at + "a cooperative matrix is constructed from one scalar");
                    else same(t(2), ix_.get(rt)->w[1], "constituent and component");
                } else if (touches(rt)) {
                    for (size_t k = 2; k < in.w.size(); ++k) same(t(k), ix_.get(rt)->w[1], "constituent and element");
                }
                break;
            case spv::OpPhi:
                if (touches(rt))
                    for (size_t k = 2; k < in.w.size(); k += 2) same(rt, t(k), "result and incoming");
                break;
            case spv::OpSelect:
                if (touches(rt)) {
                    same(rt, t(3), "result and operand");
                    same(rt, t(4), "result and operand");
                }
                break;
            case spv::OpMatrixTimesScalar:
                if (touches(rt)) {
                    same(rt, t(2), "result and matrix");
                    if (is_khr(rt)) same(t(3), ix_.get(rt)->w[1], "scalar and component");
                }
                break;
            default:
                if (is_arith(in.op)) {
                    if (touches(rt))
                        for (size_t k = 2; k < in.w.size(); ++k) same(rt, t(k), "result and operand");
                    break;
                }
                if (is_conversion(in.op)) {
                    if (touches(rt) || touches(t(2))) {
                        if (!is_khr(rt) || !is_khr(t(2))) fail(at + "converts between a matrix and a non-matrix");
                        else if (shape(rt) != shape(t(2)))
                            fail(at + "result and operand differ in scope, rows, columns or Use");
                    }
                    break;
                }
                if (i < ix_.first_function || no_value_operands(in.op) || in.op == spv::OpUndef ||
                    in.op == spv::OpConstantNull)
                    break;
                if (touches(rt)) fail(at + "unexpected instruction making a cooperative matrix");
                for (size_t k = has_t ? 2 : (has_r ? 1 : 0); k < in.w.size(); ++k)
                    if (touches(ix_.type(in.w[k])))
                        fail(at + "unexpected instruction using the cooperative matrix " + ix_.name(in.w[k]));
                break;
            }
        }
        return errors_;
    }

private:
    const Module& m_;
    Index ix_;
    std::vector<std::string> errors_;

    void fail(std::string msg) { errors_.push_back(std::move(msg)); }

    // Result ids are unique and below the header's bound, and the declarations the rewrite makes
    // or retypes (matrix, array, pointer and function types, constants) only refer to ids
    // declared before them.
    void check_ids() {
        std::set<uint32_t> seen;
        for (size_t i = 0; i < m_.insts.size(); ++i) {
            const Inst& in = m_.insts[i];
            bool has_r = false, has_t = false;
            result_info(in.op, has_r, has_t);
            if (!has_r) continue;
            const uint32_t id = in.w[has_t ? 1 : 0];
            if (id == 0 || id >= m_.header[3]) fail("result id %" + std::to_string(id) + " is not below the bound");
            if (!seen.insert(id).second) fail("result id %" + std::to_string(id) + " is defined twice");
            if (i >= ix_.first_function) continue;
            std::vector<uint32_t> refs;
            switch (in.op) {
            case OpTypeCooperativeMatrixKHR:
            case spv::OpTypeFunction:
            case spv::OpTypeStruct:
                refs.assign(in.w.begin() + 1, in.w.end());
                break;
            case spv::OpTypeArray:
                refs = {in.w[1], in.w[2]};
                break;
            case spv::OpTypeRuntimeArray:
            case spv::OpTypeVector:
                refs = {in.w[1]};
                break;
            case spv::OpTypePointer:
                refs = {in.w[2]};
                break;
            case spv::OpConstant:
            case spv::OpConstantTrue:
            case spv::OpConstantFalse:
            case spv::OpConstantNull:
            case spv::OpUndef:
                refs = {in.w[0]};
                break;
            case spv::OpConstantComposite:
            case spv::OpSpecConstantComposite:
                refs.assign(in.w.begin(), in.w.end());
                refs.erase(refs.begin() + 1);
                break;
            default:
                break;
            }
            for (uint32_t r : refs)
                if (!seen.count(r) || r == id)
                    fail(ix_.name(id) + " refers to %" + std::to_string(r) + ", which is not declared before it");
        }
    }
    static std::string op_name_of(const Inst& in) {
        const std::string n = op_name(in.op);
        return n.rfind("opcode", 0) == 0 ? "Op" + std::to_string(in.op) : n;
    }
    bool is_khr(uint32_t type) const {
        const Inst* t = ix_.get(type);
        return t && t->op == OpTypeCooperativeMatrixKHR;
    }
    bool touches(uint32_t type) const {
        const Inst* t = ix_.get(type);
        if (!t) return false;
        switch (t->op) {
        case OpTypeCooperativeMatrixKHR:
        case OpTypeCooperativeMatrixNV:
            return true;
        case spv::OpTypeArray:
        case spv::OpTypeRuntimeArray:
            return touches(t->w[1]);
        case spv::OpTypePointer:
            return touches(t->w[2]);
        case spv::OpTypeStruct:
            for (size_t k = 1; k < t->w.size(); ++k)
                if (touches(t->w[k])) return true;
            return false;
        default:
            return false;
        }
    }
    uint32_t pointee(uint32_t ptr_type) const {
        const Inst* p = ix_.get(ptr_type);
        return p && p->op == spv::OpTypePointer ? p->w[2] : 0;
    }
    // The type reached from `type` through the indices of `in` from operand `first` (ids for
    // access chains, literals for composite instructions).
    uint32_t walk(uint32_t type, const Inst& in, size_t first, bool ids) const {
        for (size_t k = first; k < in.w.size() && type; ++k) {
            const Inst* t = ix_.get(type);
            if (!t) return 0;
            switch (t->op) {
            case spv::OpTypeArray:
            case spv::OpTypeRuntimeArray:
            case spv::OpTypeVector:
            case spv::OpTypeMatrix:
            case OpTypeCooperativeMatrixKHR:
                type = t->w[1];
                break;
            case spv::OpTypeStruct: {
                uint32_t member = in.w[k];
                if (ids && !ix_.constant_u32(in.w[k], member)) return 0;
                type = member + 1 < t->w.size() ? t->w[member + 1] : 0;
                break;
            }
            default:
                return 0;
            }
        }
        return type;
    }
    // (scope, rows, columns, Use) as values where they are OpConstants, else as ids.
    std::array<uint32_t, 4> shape(uint32_t type) const {
        const Inst* t = ix_.get(type);
        std::array<uint32_t, 4> s{};
        for (size_t k = 0; k < 4; ++k) {
            const uint32_t id = t->w.at(2 + k);
            if (!ix_.constant_u32(id, s[k])) s[k] = 0x80000000u | id;
        }
        return s;
    }
    void check_type(const Inst& in, const std::string& at, std::set<std::array<uint32_t, 5>>& seen) {
        if (in.w.size() != 6) {
            fail(at + "wrong operand count");
            return;
        }
        const Inst* comp = ix_.get(in.w[1]);
        if (!comp || (comp->op != spv::OpTypeInt && comp->op != spv::OpTypeFloat))
            fail(at + "component type is not a scalar numerical type");
        static const char* what[4] = {"Scope", "Rows", "Columns", "Use"};
        for (size_t k = 0; k < 4; ++k) {
            const Inst* c = ix_.get(in.w[2 + k]);
            const bool constant = c && (c->op == spv::OpConstant || c->op == spv::OpSpecConstant ||
                                        c->op == spv::OpSpecConstantOp);
            const Inst* ct = c ? ix_.get(c->w[0]) : nullptr;
            if (!constant || !ct || ct->op != spv::OpTypeInt || ct->w[1] != 32)
                fail(at + what[k] + " is not a constant instruction of a 32-bit integer type");
        }
        uint32_t use = 0;
        if (!ix_.constant_u32(in.w[5], use) || use > UseAccumulator)
            fail(at + "Use is not an OpConstant MatrixAKHR, MatrixBKHR or MatrixAccumulatorKHR");
        if (!seen.insert({in.w[1], in.w[2], in.w[3], in.w[4], in.w[5]}).second)
            fail(at + "declares a type identical to an earlier one");
    }
    void check_memory(uint32_t ptr, uint32_t layout, uint32_t stride, uint32_t memop, bool load,
                      const std::string& at) {
        const Inst* p = ix_.get(ix_.type(ptr));
        if (!p || p->op != spv::OpTypePointer) {
            fail(at + "Pointer is not a pointer");
            return;
        }
        const Inst* e = ix_.get(p->w[2]);
        if (!e || !(e->op == spv::OpTypeInt || e->op == spv::OpTypeFloat || e->op == spv::OpTypeVector))
            fail(at + "Pointer does not point to a scalar or vector");
        const uint32_t sc = p->w[1];
        if (sc != spv::StorageClassWorkgroup && sc != spv::StorageClassStorageBuffer &&
            sc != spv::StorageClassPhysicalStorageBuffer)
            fail(at + "Pointer is not in Workgroup, StorageBuffer or PhysicalStorageBuffer memory");
        uint32_t v = 0;
        const Inst* lt = ix_.get(ix_.type(layout));
        if (!ix_.constant_u32(layout, v) || !lt || lt->op != spv::OpTypeInt || lt->w[1] != 32 ||
            (v != LayoutRowMajor && v != LayoutColumnMajor))
            fail(at + "MemoryLayout is not a 32-bit OpConstant RowMajorKHR or ColumnMajorKHR");
        const Inst* st = ix_.get(ix_.type(stride));
        if (!stride || !st || st->op != spv::OpTypeInt) fail(at + "Stride is missing or not an integer scalar");
        if (load && (memop & spv::MemoryAccessMakePointerAvailableKHRMask))
            fail(at + "MakePointerAvailable is not valid on a load");
        if (!load && (memop & spv::MemoryAccessMakePointerVisibleKHRMask))
            fail(at + "MakePointerVisible is not valid on a store");
    }
    void check_muladd(const Inst& in, const std::string& at) {
        const std::array<uint32_t, 4> types{in.w.at(0), ix_.type(in.w.at(2)), ix_.type(in.w.at(3)),
                                            ix_.type(in.w.at(4))};
        static const char* what[4] = {"Result Type", "A", "B", "C"};
        static const uint32_t uses[4] = {UseAccumulator, UseMatrixA, UseMatrixB, UseAccumulator};
        std::array<std::array<uint32_t, 4>, 4> s{};
        for (size_t k = 0; k < 4; ++k) {
            if (!is_khr(types[k])) {
                fail(at + what[k] + " is not a KHR cooperative matrix");
                return;
            }
            s[k] = shape(types[k]);
            if (s[k][3] != uses[k])
                fail(at + what[k] + " has Use " + std::to_string(s[k][3]) + ", not " + kUseNames[uses[k]]);
        }
        // Result and C are M x N, A is M x K, B is K x N.
        if (s[0][1] != s[1][1] || s[0][1] != s[3][1]) fail(at + "M differs between Result, A and C");
        if (s[0][2] != s[2][2] || s[0][2] != s[3][2]) fail(at + "N differs between Result, B and C");
        if (s[1][2] != s[2][1]) fail(at + "K differs between A and B");
        if (s[0][0] != s[1][0] || s[0][0] != s[2][0] || s[0][0] != s[3][0]) fail(at + "scopes differ");
        const uint32_t flags = in.w.size() > 5 ? in.w[5] : 0;
        static const uint32_t bits[4] = {MatrixResultSigned, MatrixASigned, MatrixBSigned, MatrixCSigned};
        for (size_t k = 0; k < 4; ++k) {
            const Inst* comp = ix_.get(ix_.get(types[k])->w[1]);
            if ((flags & bits[k]) && (!comp || comp->op != spv::OpTypeInt))
                fail(at + "signedness operand on the non-integer matrix " + what[k]);
        }
        if (flags & ~0x1fu) fail(at + "unknown Cooperative Matrix Operands bits");
    }
};

} // namespace

std::vector<std::string> check(std::span<const uint32_t> khr_module) {
    try {
        const Module m = parse(khr_module);
        return Checker(m).run();
    } catch (const RewriteError& e) {
        return {e.what()};
    }
}

} // namespace vkml::coopmat_khr
