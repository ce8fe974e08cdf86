#pragma once
// Reading the JSON of TF.js and Anime4K models (through Debian's nlohmann-json3) so that every
// mistake in a file becomes a vkml::Error naming the file and the JSON path of the bad value, e.g.
// "'model.json': modelTopology.model_config.config.layers[3].config.filters: expected an integer,
// found a string". Syntax errors carry nlohmann's line and column.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkml::import {

// Parses a whole JSON file; errors name the file and, for syntax errors, the line and column.
nlohmann::json parse_json_file(const std::filesystem::path& path);
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

class JsonView {
public:
    JsonView(const nlohmann::json& value, std::string path, const std::string& file)
        : j_(&value), path_(std::move(path)), file_(&file) {}

    const nlohmann::json& raw() const { return *j_; }
    const std::string& path() const { return path_; }
    const std::string& file() const { return *file_; }

    bool is_null() const { return j_->is_null(); }
    bool is_object() const { return j_->is_object(); }
    bool is_array() const { return j_->is_array(); }
    bool is_string() const { return j_->is_string(); }
    bool is_number() const { return j_->is_number(); }
    bool has(const std::string& key) const { return j_->is_object() && j_->contains(key); }

    // Member access: at() requires the key; get() returns nullopt when absent or null.
    JsonView at(const std::string& key) const;
    std::optional<JsonView> get(const std::string& key) const;
    // Array access.
    size_t size() const; // elements of an array, members of an object; error otherwise
    JsonView operator[](size_t index) const;
    std::vector<JsonView> items() const; // array elements
    std::vector<std::pair<std::string, JsonView>> members() const;

    int64_t as_int() const;
    double as_number() const;
    bool as_bool() const;
    const std::string& as_string() const;
    std::vector<int64_t> as_ints() const; // an array of integers, or a single integer as one element
    std::vector<double> as_numbers() const;
    std::vector<std::string> as_strings() const;

    // Typed reads with a default for a missing or null member.
    int64_t int_or(const std::string& key, int64_t fallback) const;
    double number_or(const std::string& key, double fallback) const;
    bool bool_or(const std::string& key, bool fallback) const;
    std::string string_or(const std::string& key, const std::string& fallback) const;

    // Throws "'<file>': <path>: <problem>".
    [[noreturn]] void fail(const std::string& problem) const;

private:
    const nlohmann::json* j_;
    std::string path_;
    const std::string* file_;
};

} // namespace vkml::import
