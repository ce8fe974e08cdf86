// The table of operator types (ml/graph/op_types.inc) against what reads it: the lowering, the host
// evaluator, the expansions, the registry `vkml ops` prints, and the operators' own kind tables.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "graph/lower.hpp"
#include "graph/op_types.hpp"
#include "graph/passes.hpp"
#include "vkml/ops/elementwise.hpp"
#include "vkml/ops/reduce.hpp"
#include "vkml/ops/registry.hpp"

namespace {

using namespace vkml;
using graph::detail::Expand;
using graph::detail::HostEval;
using graph::detail::OpType;

graph::Node node(std::string_view domain, std::string_view type) {
    graph::Node n;
    n.domain = std::string(domain);
    n.op_type = std::string(type);
    return n;
}

// Each line answers for its own type, and only its.
TEST(OpTypes, EveryLineIsWhatTheGraphCodeSays) {
    size_t lines = 0;
    for (const OpType& t : graph::detail::op_types()) {
        if (t.domain == graph::detail::op_domain::api) {
            EXPECT_EQ(graph::detail::find_op_type(t.domain, t.type), nullptr) << t.type;
            EXPECT_FALSE(t.lowered() || t.host != HostEval::no || t.expand != Expand::no) << t.type;
            continue;
        }
        ++lines;
        EXPECT_EQ(graph::detail::find_op_type(t.domain, t.type), &t) << t.type << " is listed twice";
        const graph::Node n = node(t.domain, t.type);
        EXPECT_EQ(graph::detail::lowerable(n), t.lowered()) << t.type;
        EXPECT_EQ(graph::host_evaluable(n), t.host != HostEval::no) << t.type;
        EXPECT_EQ(graph::composite_type(n), t.expand == Expand::composite) << t.type;
        EXPECT_EQ(graph::structural_op(n), t.expand == Expand::structural) << t.type;
        // A type is run one way: lowered, expanded, or on the host only.
        EXPECT_LE(int(t.lowered()) + int(t.expand != Expand::no), 1) << t.type;
        EXPECT_TRUE(t.lowered() || t.expand != Expand::no || t.host != HostEval::no) << t.type;
        // In another domain the type is unknown.
        const graph::Node other = node("com.example", t.type);
        EXPECT_FALSE(graph::detail::lowerable(other) || graph::host_evaluable(other) ||
                     graph::composite_type(other) || graph::structural_op(other))
            << t.type;
    }
    EXPECT_GT(lines, 150u);
    const graph::Node unknown = node("", "NotAnOperator");
    EXPECT_FALSE(graph::detail::lowerable(unknown) || graph::host_evaluable(unknown) ||
                 graph::composite_type(unknown) || graph::structural_op(unknown));
}

// The lines lowered through a kind table (ops::Unary, Binary, Variadic, Reduce*) are exactly that
// table's types.
template <class Kind>
void expect_kinds(std::string_view lowering, Kind last, const char* (*name)(Kind)) {
    std::set<std::string> kinds, lines;
    for (int k = 0; k <= int(last); ++k) kinds.insert(name(static_cast<Kind>(k)));
    for (const OpType& t : graph::detail::op_types())
        if (t.lowering == lowering) lines.insert(std::string(t.type));
    EXPECT_EQ(kinds, lines) << lowering;
}

TEST(OpTypes, KindTablesMatch) {
    expect_kinds("unary", ops::last_unary_kind, ops::unary_name);
    expect_kinds("binary", ops::BinaryKind::Xor, ops::binary_name);
    expect_kinds("variadic", ops::VariadicKind::Mean, ops::variadic_name);
    expect_kinds("reduce", ops::ReduceKind::LogSum, ops::reduce_op_name);
}

// `vkml ops` lists the listed lines, each once.
TEST(OpTypes, RegistryListsTheListedLines) {
    std::multiset<std::string> listed, registry;
    for (const OpType& t : graph::detail::op_types())
        if (t.listed) listed.insert(std::string(t.type));
    for (const ops::OpInfo& op : ops::registry()) registry.insert(op.type);
    EXPECT_EQ(listed, registry);
}

} // namespace
