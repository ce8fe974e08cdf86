// ONNX backend node tests (Debian's libonnx-testdata) through vkml's importer and Session, in f32
// on the GPU with validation on, in one process: each test's model.onnx runs on every
// test_data_set_*/input_*.pb and is compared with output_*.pb (floats: |got - want| <= atol + rtol
// |want| with rtol 1e-3, atol 1e-5 as ONNX's backend tests; integers and bools exactly).
//
// Every test gets a verdict: passed, failed (wrong numbers, a wrong shape, a crash-free error that
// is vkml's fault) or unsupported (the importer or the session refuses it with an Unsupported
// error: an op, dtype or attribute vkml does not have). The test asserts that every test in
// onnx_expected_pass.txt passes, and prints the counts, also for the tests whose ops are all in
// vkml's operator registry ("claimed"). VKML_CONFORMANCE_PASSED=FILE writes the passing tests'
// names (to update the expected list); VKML_CONFORMANCE_FILTER=substring runs only matching tests;
// VKML_CONFORMANCE_VERBOSE=1 lists the unsupported tests of ops vkml does not claim too. It also
// prints, per op type, how many of the tests holding that op passed, failed or were unsupported.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "vkml/graph/session.hpp"
#include "vkml/import/onnx.hpp"
#include "vkml/ops/registry.hpp"

using namespace vkml;
namespace fs = std::filesystem;

#ifndef VKML_CONFORMANCE_DIR
#error "VKML_CONFORMANCE_DIR must name tests/conformance"
#endif

namespace {

enum class Verdict { Passed, Failed, Unsupported };

struct Result {
    std::string name;
    Verdict verdict = Verdict::Failed;
    std::string reason;
    bool claimed = false; // every op of the model is in vkml's registry
    bool frozen = false;  // some inputs were given as constants (parameters)
    std::set<std::string> ops; // the op types of the model (domain-qualified outside ai.onnx)
};

fs::path testdata() {
    if (const char* d = std::getenv("VKML_ONNX_TESTDATA"); d && *d) return fs::path(d) / "node";
    return "/usr/share/libonnx-testdata/data/node";
}

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().starts_with(prefix)) files.push_back(e.path());
    // input_10.pb after input_9.pb: by the number after the prefix.
    std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
        auto num = [&](const fs::path& p) {
            const std::string s = p.stem().string().substr(prefix.size());
            return s.empty() ? 0 : std::atoi(s.c_str());
        };
        return num(a) < num(b);
    });
    return files;
}

// Compares one output; returns an empty string when it matches.
std::string compare(const graph::TensorData& got, const graph::TensorData& want, const std::string& name) {
    if (got.dims() != want.dims())
        return name + ": shape " + graph::describe(got) + ", expected " + graph::describe(want);
    const bool fl = graph::is_float(want.dtype());
    if (got.dtype() != want.dtype())
        return name + ": dtype " + graph::dtype_name(got.dtype()) + ", expected " +
               graph::dtype_name(want.dtype());
    if (fl) {
        const auto g = got.to_floats(), w = want.to_floats();
        for (size_t i = 0; i < w.size(); ++i) {
            if (std::isnan(w[i]) && std::isnan(g[i])) continue;
            if (std::isinf(w[i]) && g[i] == w[i]) continue;
            const double tol = 1e-5 + 1e-3 * std::fabs(static_cast<double>(w[i]));
            if (!(std::fabs(static_cast<double>(g[i]) - w[i]) <= tol))
                return name + ": element " + std::to_string(i) + " is " + std::to_string(g[i]) +
                       ", expected " + std::to_string(w[i]);
        }
        return {};
    }
    const auto g = got.to_int64s(), w = want.to_int64s();
    for (size_t i = 0; i < w.size(); ++i)
        if (g[i] != w[i])
            return name + ": element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", expected " +
                   std::to_string(w[i]);
    return {};
}

Result run_one(gpu::Device& device, const fs::path& dir, const std::set<std::string, std::less<>>& registry) {
    Result r;
    r.name = dir.filename().string();
    try {
        const graph::Graph g = import::load_onnx(dir / "model.onnx");
        r.claimed = !g.nodes().empty();
        for (const graph::Node& n : g.nodes()) r.ops.insert(n.domain.empty() ? n.op_type : n.domain + "." + n.op_type);
        for (const graph::Node& n : g.nodes()) r.claimed &= n.domain.empty() && registry.count(n.op_type) > 0;
        std::vector<fs::path> sets;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.is_directory() && e.path().filename().string().starts_with("test_data_set_"))
                sets.push_back(e.path());
        std::sort(sets.begin(), sets.end());
        if (sets.empty()) throw Error(ErrorCode::Unsupported, "no test data sets");
        // The first data set's input shapes fix the model's (node tests declare them anyway).
        // Inputs and outputs are read as the model declares them: tensors, sequences, optionals.
        std::vector<std::vector<import::NamedValue>> inputs, outputs;
        for (const fs::path& s : sets) {
            std::vector<import::NamedValue> in, out;
            const auto in_files = sorted_files(s, "input_"), out_files = sorted_files(s, "output_");
            for (size_t i = 0; i < in_files.size(); ++i)
                in.push_back(import::load_onnx_value(
                    in_files[i], i < g.inputs().size() ? g.value(g.inputs()[i]).kind : graph::ValueKind::Tensor));
            for (size_t i = 0; i < out_files.size(); ++i)
                out.push_back(import::load_onnx_value(
                    out_files[i], i < g.outputs().size() ? g.value(g.outputs()[i]).kind : graph::ValueKind::Tensor));
            inputs.push_back(std::move(in));
            outputs.push_back(std::move(out));
        }
        if (inputs[0].size() != g.inputs().size())
            throw Error(ErrorCode::Generic, "the data set has " + std::to_string(inputs[0].size()) +
                                                " inputs, the model " + std::to_string(g.inputs().size()));
        // Inputs vkml needs as constants (a Reshape's shape, Resize's scales, ... fed as graph
        // inputs) are given as SessionOptions::constant_inputs, one session per data set: the
        // session names such an input in its error, so the runner adds them one by one.
        std::set<size_t> frozen;
        auto single = [](const import::NamedValue& v) {
            return v.kind != graph::ValueKind::Sequence && v.present && v.tensors.size() == 1;
        };
        for (size_t k = 0; k < sets.size(); ++k) {
            std::unique_ptr<Session> session;
            for (int attempt = 0; !session; ++attempt) {
                SessionOptions options;
                options.fp32 = true;
                for (size_t i = 0; i < g.inputs().size(); ++i) {
                    const graph::Value& declared = g.value(g.inputs()[i]);
                    const import::NamedValue& v = inputs[k][i];
                    if (frozen.count(i)) {
                        options.constant_inputs[declared.name] = v.tensors.at(0);
                    } else if (!v.present) {
                        options.absent_inputs.insert(declared.name);
                    } else if (v.kind == graph::ValueKind::Sequence ||
                               (v.kind == graph::ValueKind::Optional &&
                                declared.element_kind == graph::ValueKind::Sequence)) {
                        auto& shapes = options.sequence_inputs[declared.name];
                        for (const auto& t : v.tensors) shapes.push_back(t.dims());
                    } else {
                        options.input_shapes[declared.name] = v.tensors.at(0).dims();
                    }
                }
                try {
                    session = std::make_unique<Session>(device, g, options);
                } catch (const Error& e) {
                    const std::string m = e.what();
                    const bool parameter = m.find("must be a constant") != std::string::npos ||
                                           m.find("with constant inputs") != std::string::npos;
                    bool added = false;
                    for (size_t i = 0; parameter && i < g.inputs().size(); ++i)
                        if (!frozen.count(i) && single(inputs[k][i]) &&
                            m.find("'" + g.value(g.inputs()[i]).name + "'") != std::string::npos) {
                            frozen.insert(i);
                            added = true;
                        }
                    if (!added && parameter && attempt == 0) // host-only ops: freeze every integer input
                        for (size_t i = 0; i < g.inputs().size(); ++i)
                            if (single(inputs[k][i]) && (inputs[k][i].tensors[0].dtype() == graph::DType::i64 ||
                                                         inputs[k][i].tensors[0].dtype() == graph::DType::i32)) {
                                frozen.insert(i);
                                added = true;
                            }
                    // Still a host-only op (Range of floats, NonZero: data-dependent shapes run on
                    // the host), or a parameter computed from inputs (a loop's trip count from
                    // start, limit and delta): every input a constant.
                    if (!added && (m.find("can only run on the host") != std::string::npos || parameter))
                        for (size_t i = 0; i < g.inputs().size(); ++i)
                            if (!frozen.count(i) && single(inputs[k][i])) {
                                frozen.insert(i);
                                added = true;
                            }
                    if (!added) throw;
                }
            }
            std::vector<graph::TensorData> in;
            for (size_t i = 0; i < inputs[k].size(); ++i)
                if (!frozen.count(i))
                    for (const auto& t : inputs[k][i].tensors) in.push_back(t);
            const auto got = session->run(in);
            const auto& model_outputs = session->model_outputs();
            if (model_outputs.size() != outputs[k].size())
                throw Error(ErrorCode::Generic, std::to_string(model_outputs.size()) + " outputs, expected " +
                                                    std::to_string(outputs[k].size()));
            for (size_t j = 0; j < model_outputs.size(); ++j) {
                const ModelValue& mv = model_outputs[j];
                const import::NamedValue& want = outputs[k][j];
                if (mv.present != want.present || mv.count != want.tensors.size())
                    throw Error(ErrorCode::Generic,
                                sets[k].filename().string() + ": " + mv.name + ": " +
                                    (mv.present ? std::to_string(mv.count) + " tensors" : std::string("nothing")) +
                                    ", expected " +
                                    (want.present ? std::to_string(want.tensors.size()) + " tensors"
                                                  : std::string("nothing")));
                for (size_t e = 0; e < mv.count; ++e) {
                    const std::string m = compare(got[mv.first + e], want.tensors[e], session->outputs()[mv.first + e].name);
                    if (!m.empty()) throw Error(ErrorCode::Generic, sets[k].filename().string() + ": " + m);
                }
            }
        }
        r.frozen = !frozen.empty();
        r.verdict = Verdict::Passed;
    } catch (const Error& e) {
        r.verdict = e.code() == ErrorCode::Unsupported ? Verdict::Unsupported : Verdict::Failed;
        r.reason = e.what();
    } catch (const std::exception& e) {
        r.verdict = Verdict::Failed;
        r.reason = std::string("exception: ") + e.what();
    }
    for (const std::string& m : test::take_validation_messages()) {
        r.verdict = Verdict::Failed;
        r.reason = "validation: " + m;
    }
    return r;
}

std::set<std::string, std::less<>> expected_pass() {
    std::set<std::string, std::less<>> names;
    std::ifstream f(fs::path(VKML_CONFORMANCE_DIR) / "onnx_expected_pass.txt");
    for (std::string line; std::getline(f, line);) {
        line.erase(
            std::find_if(line.rbegin(), line.rend(), [](unsigned char c) { return !std::isspace(c); }).base(),
            line.end());
        if (!line.empty() && line[0] != '#') names.insert(line);
    }
    return names;
}

} // namespace

TEST(OnnxNodeTests, ExpectedPassListPasses) {
    const fs::path root = testdata();
    if (!fs::exists(root)) {
        if (std::getenv("CI")) FAIL() << root << " is absent in CI: install Debian's libonnx-testdata";
        GTEST_SKIP() << root << " is absent: install Debian's libonnx-testdata";
    }
    std::set<std::string, std::less<>> registry;
    for (const auto& op : ops::registry()) registry.insert(op.type);
    const auto expected = expected_pass();
    EXPECT_GT(expected.size(), 0u) << "onnx_expected_pass.txt is empty or missing";
    const char* filter = std::getenv("VKML_CONFORMANCE_FILTER");
    const bool verbose = std::getenv("VKML_CONFORMANCE_VERBOSE") != nullptr;

    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(root))
        if (e.is_directory() && (!filter || e.path().filename().string().find(filter) != std::string::npos))
            dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    test::take_validation_messages();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Result> results;
    for (const fs::path& d : dirs) {
        auto& device = test::device();
        results.push_back(run_one(device, d, registry));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    size_t passed = 0, failed = 0, unsupported = 0, claimed = 0, claimed_passed = 0, claimed_unsupported = 0,
           frozen = 0;
    std::vector<std::string> newly;
    for (const Result& r : results) {
        passed += r.verdict == Verdict::Passed;
        frozen += r.verdict == Verdict::Passed && r.frozen;
        failed += r.verdict == Verdict::Failed;
        unsupported += r.verdict == Verdict::Unsupported;
        if (r.claimed) {
            ++claimed;
            claimed_passed += r.verdict == Verdict::Passed;
            claimed_unsupported += r.verdict == Verdict::Unsupported;
        }
        if (r.verdict != Verdict::Passed) {
            // Unsupported tests of ops vkml does not claim are many and expected: listed on request.
            if (r.verdict == Verdict::Failed || r.claimed || verbose)
                std::printf("%-12s %s (%s): %.300s\n",
                            r.verdict == Verdict::Failed ? "FAILED" : "UNSUPPORTED", r.name.c_str(),
                            r.claimed ? "claimed" : "not claimed", r.reason.c_str());
            EXPECT_FALSE(expected.count(r.name))
                << r.name << " is in onnx_expected_pass.txt but did not pass: " << r.reason;
        } else if (!expected.count(r.name)) {
            newly.push_back(r.name);
        }
    }
    // Per op type: the tests whose model holds it (a test of several ops counts for each), so the
    // ops that hold back the most tests stand out. Tests that fail to import are listed by name.
    struct Counts {
        size_t passed = 0, failed = 0, unsupported = 0;
    };
    std::map<std::string, Counts> per_op;
    for (const Result& r : results) {
        std::set<std::string> ops = r.ops;
        if (ops.empty()) ops.insert("(not imported)");
        for (const std::string& op : ops) {
            Counts& c = per_op[op];
            (r.verdict == Verdict::Passed ? c.passed : r.verdict == Verdict::Failed ? c.failed : c.unsupported)++;
        }
    }
    std::printf("\nper op type (tests holding it): passed / failed / unsupported\n");
    for (const auto& [op, c] : per_op)
        std::printf("  %-34s %4zu %4zu %4zu\n", op.c_str(), c.passed, c.failed, c.unsupported);
    std::printf("\nONNX node tests (%s): %zu run in %.1f s: %zu passed, %zu failed, %zu unsupported\n",
                root.c_str(), results.size(), seconds, passed, failed, unsupported);
    std::printf("claimed (every op in vkml's registry): %zu, of which %zu passed (%.1f%%), %zu unsupported\n",
                claimed, claimed_passed,
                claimed ? 100.0 * static_cast<double>(claimed_passed) / static_cast<double>(claimed) : 0.0,
                claimed_unsupported);
    std::printf("passed with parameter inputs given as constants: %zu\n", frozen);
    std::printf("expected to pass: %zu; passing but not listed: %zu\n", expected.size(), newly.size());
    for (const std::string& n : newly) std::printf("  not listed: %s\n", n.c_str());
    if (!filter) {
        // Every listed test must exist, so a renamed or removed test cannot pass silently.
        std::set<std::string, std::less<>> seen;
        for (const Result& r : results) seen.insert(r.name);
        for (const std::string& n : expected)
            EXPECT_TRUE(seen.count(n)) << n << " is listed but not in " << root;
    }
    if (const char* out = std::getenv("VKML_CONFORMANCE_PASSED")) {
        std::ofstream f(out);
        for (const Result& r : results)
            if (r.verdict == Verdict::Passed) f << r.name << "\n";
    }
}
