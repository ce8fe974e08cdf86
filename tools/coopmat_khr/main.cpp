// vkml_coopmat_khr: the build step that turns a tensor-core shader's SPV_NV_cooperative_matrix
// module into its SPV_KHR_cooperative_matrix variant (coopmat_khr.hpp), and checks the result.
//   vkml_coopmat_khr NV.spv KHR.spv    rewrite, check, write (nothing is written on an error)
//   vkml_coopmat_khr --check KHR.spv   check a KHR module
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "coopmat_khr.hpp"

namespace {

bool read_words(const char* path, std::vector<uint32_t>& words) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() % 4 != 0) return false;
    words.resize(bytes.size() / 4);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    return true;
}

int report(const char* path, const std::vector<std::string>& errors) {
    for (const std::string& e : errors) std::cerr << path << ": " << e << "\n";
    return errors.empty() ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    using namespace vkml::coopmat_khr;
    if (argc != 3) {
        std::cerr << "usage: vkml_coopmat_khr NV.spv KHR.spv | vkml_coopmat_khr --check KHR.spv\n";
        return 2;
    }
    const bool check_only = std::strcmp(argv[1], "--check") == 0;
    const char* in_path = check_only ? argv[2] : argv[1];
    std::vector<uint32_t> words;
    if (!read_words(in_path, words)) {
        std::cerr << "vkml_coopmat_khr: cannot read " << in_path << " as SPIR-V words\n";
        return 1;
    }
    if (check_only) return report(in_path, check(words));
    std::vector<uint32_t> khr;
    try {
        khr = rewrite(words);
    } catch (const RewriteError& e) {
        std::cerr << in_path << ": " << e.what() << "\n";
        return 1;
    }
    if (report(argv[2], check(khr)) != 0) return 1;
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(khr.data()), std::streamsize(khr.size() * 4));
    if (!out) {
        std::cerr << "vkml_coopmat_khr: cannot write " << argv[2] << "\n";
        return 1;
    }
    return 0;
}
