#include "op_types.hpp"

#include <array>
#include <map>
#include <utility>

#include "vkml/error.hpp"

namespace vkml::graph::detail {

namespace {

constexpr std::array table{
#define VKML_OP(domain, type, lowering, host, expand, listed)                                               \
    OpType{op_domain::domain, #type, #lowering, HostEval::host, Expand::expand, std::string_view(#listed) == "yes"},
#include "op_types.inc"
#undef VKML_OP
};

} // namespace

std::span<const OpType> op_types() {
    return table;
}

const OpType* find_op_type(std::string_view domain, std::string_view type) {
    static const auto index = [] {
        std::map<std::pair<std::string_view, std::string_view>, const OpType*> m;
        for (const OpType& t : table)
            if (t.domain != op_domain::api && !m.emplace(std::pair(t.domain, t.type), &t).second)
                throw Error(ErrorCode::Generic, "internal: op_types.inc lists " + std::string(t.type) + " twice");
        return m;
    }();
    const auto it = index.find({domain, type});
    return it == index.end() ? nullptr : it->second;
}

} // namespace vkml::graph::detail
