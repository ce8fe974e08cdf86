#include "json_view.hpp"

#include <cmath>

#include "import_util.hpp"

namespace vkml::import {

namespace {

const char* kind_of(const nlohmann::json& j) {
    switch (j.type()) {
    case nlohmann::json::value_t::null:
        return "null";
    case nlohmann::json::value_t::object:
        return "an object";
    case nlohmann::json::value_t::array:
        return "an array";
    case nlohmann::json::value_t::string:
        return "a string";
    case nlohmann::json::value_t::boolean:
        return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
        return "an integer";
    case nlohmann::json::value_t::number_float:
        return "a number";
    default:
        return "a binary value";
    }
}

} // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& source) {
    try {
        // No exceptions for duplicate keys etc.; comments are not JSON and are refused.
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        std::string what = e.what();
        // "[json.exception.parse_error.101] parse error at line 3, column 5: ..." -> "line 3, column 5: ..."
        if (auto p = what.find("parse error at "); p != std::string::npos) what = what.substr(p + 15);
        fail(source, "invalid JSON: " + what);
    } catch (const nlohmann::json::exception& e) {
        // The parser's other errors, e.g. out_of_range for a number past a double ("1e999").
        std::string what = e.what();
        if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
        fail(source, "invalid JSON: " + what);
    }
}

nlohmann::json parse_json_file(const std::filesystem::path& path) {
    const std::vector<std::byte> bytes = read_file(path, uint64_t{1} << 30);
    return parse_json_text(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                           path.string());
}

void JsonView::fail(const std::string& problem) const {
    import::fail(*file_, (path_.empty() ? std::string("top level") : path_) + ": " + problem);
}

JsonView JsonView::at(const std::string& key) const {
    if (!j_->is_object()) fail(std::string("expected an object with '") + key + "', found " + kind_of(*j_));
    auto it = j_->find(key);
    if (it == j_->end()) fail("'" + key + "' is missing");
    return JsonView(*it, path_.empty() ? key : path_ + "." + key, *file_);
}

std::optional<JsonView> JsonView::get(const std::string& key) const {
    if (!j_->is_object()) fail(std::string("expected an object, found ") + kind_of(*j_));
    auto it = j_->find(key);
    if (it == j_->end() || it->is_null()) return std::nullopt;
    return JsonView(*it, path_.empty() ? key : path_ + "." + key, *file_);
}

size_t JsonView::size() const {
    if (!j_->is_array() && !j_->is_object()) fail(std::string("expected an array, found ") + kind_of(*j_));
    return j_->size();
}

JsonView JsonView::operator[](size_t index) const {
    if (!j_->is_array()) fail(std::string("expected an array, found ") + kind_of(*j_));
    if (index >= j_->size())
        fail("expected at least " + std::to_string(index + 1) + " elements, found " +
             std::to_string(j_->size()));
    return JsonView((*j_)[index], path_ + "[" + std::to_string(index) + "]", *file_);
}

std::vector<JsonView> JsonView::items() const {
    if (!j_->is_array()) fail(std::string("expected an array, found ") + kind_of(*j_));
    std::vector<JsonView> out;
    for (size_t i = 0; i < j_->size(); ++i) out.push_back((*this)[i]);
    return out;
}

std::vector<std::pair<std::string, JsonView>> JsonView::members() const {
    if (!j_->is_object()) fail(std::string("expected an object, found ") + kind_of(*j_));
    std::vector<std::pair<std::string, JsonView>> out;
    for (auto it = j_->begin(); it != j_->end(); ++it)
        out.emplace_back(it.key(),
                         JsonView(it.value(), path_.empty() ? it.key() : path_ + "." + it.key(), *file_));
    return out;
}

int64_t JsonView::as_int() const {
    if (j_->is_number_integer()) return j_->get<int64_t>();
    if (j_->is_number_unsigned()) {
        const auto u = j_->get<uint64_t>();
        if (u > static_cast<uint64_t>(INT64_MAX)) fail("integer " + std::to_string(u) + " is too large");
        return static_cast<int64_t>(u);
    }
    // Some writers emit 3.0 for 3; accept exact integers only.
    if (j_->is_number_float()) {
        const double d = j_->get<double>();
        if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
    }
    fail(std::string("expected an integer, found ") + kind_of(*j_));
}

double JsonView::as_number() const {
    if (!j_->is_number()) fail(std::string("expected a number, found ") + kind_of(*j_));
    return j_->get<double>();
}

bool JsonView::as_bool() const {
    if (!j_->is_boolean()) fail(std::string("expected true or false, found ") + kind_of(*j_));
    return j_->get<bool>();
}

const std::string& JsonView::as_string() const {
    if (!j_->is_string()) fail(std::string("expected a string, found ") + kind_of(*j_));
    return j_->get_ref<const std::string&>();
}

std::vector<int64_t> JsonView::as_ints() const {
    if (j_->is_number()) return {as_int()};
    std::vector<int64_t> out;
    for (const JsonView& v : items()) out.push_back(v.as_int());
    return out;
}

std::vector<double> JsonView::as_numbers() const {
    std::vector<double> out;
    for (const JsonView& v : items()) out.push_back(v.as_number());
    return out;
}

std::vector<std::string> JsonView::as_strings() const {
    std::vector<std::string> out;
    for (const JsonView& v : items()) out.push_back(v.as_string());
    return out;
}

int64_t JsonView::int_or(const std::string& key, int64_t fallback) const {
    auto v = get(key);
    return v ? v->as_int() : fallback;
}
double JsonView::number_or(const std::string& key, double fallback) const {
    auto v = get(key);
    return v ? v->as_number() : fallback;
}
bool JsonView::bool_or(const std::string& key, bool fallback) const {
    auto v = get(key);
    return v ? v->as_bool() : fallback;
}
std::string JsonView::string_or(const std::string& key, const std::string& fallback) const {
    auto v = get(key);
    return v ? v->as_string() : fallback;
}

} // namespace vkml::import
