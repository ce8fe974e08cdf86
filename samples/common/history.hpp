#pragma once
// How the samples schedule their ML pass against the render. One frame behind is the frame
// graph's history feature (fg::History, vkml/fg/history.hpp): the ML pass reads the previous
// frame's render from a history image on the async compute queue while this frame renders.
#include <cstdint>

#include "common/app.hpp"
#include "vkml/fg/history.hpp"

namespace vkml::samples {

// How a sample schedules its ML pass against the render, for overlays and timing.json.
enum class MlSchedule : uint8_t { SameFrame, OneFrameBehind };

inline const char* schedule_name(MlSchedule s) {
    return s == MlSchedule::OneFrameBehind ? "one-frame-behind" : "same-frame";
}

// One frame behind whenever the sample is asked for async compute (also where the device has no
// separate compute queue, so the data flow is the same everywhere and testable on one queue).
inline MlSchedule schedule_for(const App& app) {
    return app.async_compute() ? MlSchedule::OneFrameBehind : MlSchedule::SameFrame;
}

} // namespace vkml::samples
