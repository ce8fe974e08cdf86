#pragma once
// The GPU test harness: one shared device per test binary with validation (VKML_VALIDATION=1 in
// CTest) and synchronization validation on. Every validation message is collected, and GpuTest
// fails the test during which it arrived. Tests that make devices of their own pass
// test::device_desc() so their messages are collected too.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "vkml/vkml.hpp"

namespace vkml::test {

// Validation messages seen since the last take (thread-safe).
std::vector<std::string> take_validation_messages();
// Whether the harness's crash handler is installed (a fatal signal prints the faulting thread's
// stack; not where a sanitizer handles the signals itself).
bool crash_trace_active();
// A DeviceDesc whose callback feeds the collector; `vkml_messages`, when given, receives vkml's
// own warnings (which are not failures by themselves).
gpu::DeviceDesc device_desc(std::vector<std::string>* vkml_messages = nullptr);
// The shared device.
gpu::Device& device();
void release_device();

class GpuTest : public ::testing::Test {
protected:
    void SetUp() override { take_validation_messages(); }
    void TearDown() override {
        for (const std::string& m : take_validation_messages()) ADD_FAILURE() << "validation: " << m;
    }
    gpu::Device& dev() { return device(); }
};

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -2.f, float hi = 2.f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// The value a float has after storage in `dtype`.
inline float stored(float v, gpu::DType dtype) {
    return dtype == gpu::DType::f16 ? gpu::half_to_float(gpu::float_to_half(v)) : v;
}

} // namespace vkml::test
