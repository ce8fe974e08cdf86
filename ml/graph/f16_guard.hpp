#pragma once
// The f16 guard's criteria (SessionOptions::f16_guard): per-value statistics of a calibration run,
// and the test that says whether f16 storage fails a value. Session::calibrate gathers the
// statistics step by step, once in f32 and once in f16 storage, and applies the test.
#include <cstdint>
#include <span>
#include <string>

namespace vkml::graph::detail {

// What the guard needs to know of one float value's elements.
struct ValueStats {
    uint64_t count = 0;
    uint64_t nonfinite = 0; // inf or NaN
    uint64_t nonzero = 0;   // finite and not zero
    uint64_t subnormal = 0; // nonzero with |x| below f16's smallest normal, 2^-14 (about 6.1e-5)
    double max_abs = 0;     // of the finite elements
};

ValueStats value_stats(std::span<const float> values);

// Whether the f16 run's value lost what the f32 run's has: more inf/NaN elements, or fewer than
// half as many nonzero ones.
bool f16_run_lost(const ValueStats& f32, const ValueStats& f16);

// Why f16 storage fails a value that the f32 run measured as `f32`; "" when it does not.
//   overflow   the f32 value has finite elements beyond 65504 (f16's largest), or the f16 run has
//              more inf/NaN elements than the f32 run
//   underflow  more than half of the f32 value's nonzero elements are below 2^-14 (f16 holds them
//              as subnormals with fewer than 10 significant bits, or flushes them to zero), or the
//              f16 run has fewer than half as many nonzero elements as the f32 run
// The comparisons with the f16 run (`f16`, null when that run did not see the value) count only
// when `inputs_fit`: a value computed from inputs f16 already failed is a consequence, not a cause.
std::string f16_failure(const ValueStats& f32, const ValueStats* f16, bool inputs_fit);

} // namespace vkml::graph::detail
