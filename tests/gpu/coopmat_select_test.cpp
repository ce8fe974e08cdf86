// Which cooperative-matrix extension a device enables (VKML_COOPMAT, VKML_DISABLE_COOPMAT): the
// choice itself, device-free (ml/gpu/capabilities.cpp, choose_coopmat).
#include "gpu/internal.hpp"

#include <gtest/gtest.h>

#include <string>

#include "vkml/error.hpp"

using vkml::gpu::CoopMatApi;
using vkml::gpu::detail::choose_coopmat;

TEST(CoopmatSelect, AutoPrefersNvThenKhr) {
    for (const char* env : {"", "auto"}) {
        EXPECT_EQ(choose_coopmat(true, true, env, ""), CoopMatApi::khr) << env;
        EXPECT_EQ(choose_coopmat(true, false, env, ""), CoopMatApi::nv) << env;
        EXPECT_EQ(choose_coopmat(false, true, env, ""), CoopMatApi::khr) << env;
        EXPECT_EQ(choose_coopmat(false, false, env, ""), CoopMatApi::none) << env;
    }
}

TEST(CoopmatSelect, ByName) {
    EXPECT_EQ(choose_coopmat(true, true, "khr", ""), CoopMatApi::khr);
    EXPECT_EQ(choose_coopmat(true, true, "nv", ""), CoopMatApi::nv);
    EXPECT_EQ(choose_coopmat(false, true, "khr", ""), CoopMatApi::khr);
    EXPECT_EQ(choose_coopmat(true, false, "nv", ""), CoopMatApi::nv);
    EXPECT_EQ(choose_coopmat(true, true, "off", ""), CoopMatApi::none);
}

TEST(CoopmatSelect, NamedButNotOfferedIsOffWithANote) {
    std::string note;
    EXPECT_EQ(choose_coopmat(true, false, "khr", "", &note), CoopMatApi::none);
    EXPECT_NE(note.find("VK_KHR_cooperative_matrix"), std::string::npos) << note;
    note.clear();
    EXPECT_EQ(choose_coopmat(false, true, "nv", "", &note), CoopMatApi::none);
    EXPECT_NE(note.find("VK_NV_cooperative_matrix"), std::string::npos) << note;
    note.clear();
    EXPECT_EQ(choose_coopmat(false, false, "", "", &note), CoopMatApi::none);
    EXPECT_TRUE(note.empty()); // auto on a device without either says nothing
}

TEST(CoopmatSelect, DisableWinsOverEverything) {
    for (const char* env : {"", "auto", "nv", "khr", "off"})
        EXPECT_EQ(choose_coopmat(true, true, env, "1"), CoopMatApi::none) << env;
    EXPECT_EQ(choose_coopmat(true, true, "", "0"), CoopMatApi::khr);
}

TEST(CoopmatSelect, UnknownValueIsAnError) {
    // Also with VKML_DISABLE_COOPMAT=1 (the device suites run once that way).
    for (const char* disable : {"", "1"}) {
        try {
            choose_coopmat(true, true, "amd", disable);
            FAIL() << "expected an error, VKML_DISABLE_COOPMAT=" << disable;
        } catch (const vkml::Error& e) {
            EXPECT_EQ(e.code(), vkml::ErrorCode::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find("VKML_COOPMAT=amd"), std::string::npos) << e.what();
        }
    }
}
