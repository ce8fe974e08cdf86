#include "f16_guard.hpp"

#include <cmath>

namespace vkml::graph::detail {

namespace {
constexpr double f16_max = 65504.0;
constexpr double f16_min_normal = 6.103515625e-05; // 2^-14
} // namespace

ValueStats value_stats(std::span<const float> values) {
    ValueStats s;
    s.count = values.size();
    for (float x : values) {
        if (!std::isfinite(x)) {
            ++s.nonfinite;
            continue;
        }
        const double a = std::fabs(static_cast<double>(x));
        if (a == 0) continue;
        ++s.nonzero;
        if (a < f16_min_normal) ++s.subnormal;
        if (a > s.max_abs) s.max_abs = a;
    }
    return s;
}

bool f16_run_lost(const ValueStats& f32, const ValueStats& f16) {
    return f16.nonfinite > f32.nonfinite || 2 * f16.nonzero < f32.nonzero;
}

std::string f16_failure(const ValueStats& f32, const ValueStats* f16, bool inputs_fit) {
    if (f32.max_abs > f16_max) return "overflow";
    if (f32.nonzero && 2 * f32.subnormal > f32.nonzero) return "underflow";
    if (!f16 || !inputs_fit) return "";
    if (!f16_run_lost(f32, *f16)) return "";
    return f16->nonfinite > f32.nonfinite ? "overflow" : "underflow";
}

} // namespace vkml::graph::detail
