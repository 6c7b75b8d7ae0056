#include "bmoe/limits/schema_limits.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace bmoe {

namespace {

using json = nlohmann::ordered_json;

// JSON pointer escaping (RFC 6901).
std::string pointer_token(const std::string & key) {
    std::string out;
    for (char c : key) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
    return out;
}

std::string at(const std::string & path) {
    if (path.empty()) return " (at the schema's root)";
    // A property name may be thousands of bytes: the place, not the whole name.
    return " (at " + (path.size() > 120 ? path.substr(0, 117) + "..." : path) + ")";
}

// A count such as minItems: a non-negative integer llama.cpp can read as an int.
std::string check_count(const json & s, const char * key, size_t max_min, const std::string & path, bool is_min) {
    if (!s.contains(key)) return "";
    const json & v = s.at(key);
    const bool integral = v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (!v.is_number() || !integral || v.get<double>() < 0 || v.get<double>() > 2147483647.0) {
        return std::string(key) + " must be a whole number from 0 to 2147483647" + at(path);
    }
    if (is_min && v.get<double>() > (double) max_min) {
        return std::string(key) + " " + v.dump() + " exceeds the limit of " + std::to_string(max_min) + at(path);
    }
    return "";
}

std::string check_pair(const json & s, const char * lo, const char * hi, const std::string & path) {
    if (!s.contains(lo) || !s.contains(hi) || !s.at(lo).is_number() || !s.at(hi).is_number()) return "";
    if (s.at(lo).get<double>() > s.at(hi).get<double>()) {
        return std::string(lo) + " " + s.at(lo).dump() + " is above " + hi + " " + s.at(hi).dump() + at(path);
    }
    return "";
}

// An integer's bounds are read as 64-bit integers.
std::string check_integer_bounds(const json & s, const std::string & path) {
    for (const char * key : { "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum" }) {
        if (!s.contains(key)) continue;
        const json & v = s.at(key);
        if (!v.is_number()) return std::string(key) + " must be a number" + at(path);
        const double d = v.get<double>();
        if (!(std::fabs(d) <= 9.0e18)) return std::string(key) + " " + v.dump() + " is outside the 64-bit integer range" + at(path);
    }
    return "";
}

std::string check_pattern(const json & s, const schema_limits & l, const std::string & path) {
    if (!s.contains("pattern")) return "";
    const json & p = s.at("pattern");
    if (!p.is_string()) return "pattern must be a string" + at(path);
    const std::string & re = p.get_ref<const std::string &>();
    if (re.size() > l.max_pattern) {
        return "pattern of " + std::to_string(re.size()) + " bytes exceeds the limit of " + std::to_string(l.max_pattern) + at(path);
    }
    size_t depth = 0;
    bool in_class = false;
    for (size_t i = 0; i < re.size(); i++) {
        const char c = re[i];
        if (c == '\\') {
            i++;
        } else if (in_class) {
            in_class = c != ']';
        } else if (c == '[') {
            in_class = true;
        } else if (c == '(') {
            if (++depth > l.max_pattern_depth) {
                return "pattern nests groups deeper than the limit of " + std::to_string(l.max_pattern_depth) + at(path);
            }
        } else if (c == ')' && depth > 0) {
            depth--;
        }
    }
    return "";
}

bool is_schema(const json & v) {
    return v.is_object() || v.is_boolean();
}

// The keywords whose value JSON Schema gives one shape. llama.cpp's converter reads any shape:
// `properties` as an array of 10,000 nulls became 10,000 properties named "0", "1", … past the
// limit on an object's properties (the array's nulls are no nodes either), minutes of work per
// request that went on after the client left. A schema that breaks them is no schema: refused.
std::string check_shapes(const json & s, const std::string & path) {
    for (const char * key : { "properties", "patternProperties", "$defs", "definitions", "dependentSchemas" }) {
        if (!s.contains(key)) continue;
        const json & v = s.at(key);
        if (!v.is_object()) return std::string(key) + " must be an object of schemas, not " + v.type_name() + at(path);
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (!is_schema(it.value())) return std::string(key) + " must map names to schemas (objects or true/false)" + at(path + "/" + key + "/" + pointer_token(it.key()));
        }
    }
    for (const char * key : { "anyOf", "oneOf", "allOf", "prefixItems" }) {
        if (!s.contains(key)) continue;
        const json & v = s.at(key);
        if (!v.is_array()) return std::string(key) + " must be an array of schemas, not " + v.type_name() + at(path);
        for (size_t i = 0; i < v.size(); i++) {
            if (!is_schema(v[i])) return std::string(key) + " must hold schemas (objects or true/false)" + at(path + "/" + key + "/" + std::to_string(i));
        }
    }
    for (const char * key : { "items", "additionalProperties", "additionalItems", "not", "contains", "propertyNames", "if", "then", "else" }) {
        if (!s.contains(key)) continue;
        const json & v = s.at(key);
        // `items` as an array of schemas: the tuple form of drafts before 2020-12, which llama.cpp reads.
        const bool tuple = std::string(key) == "items" && v.is_array() && std::all_of(v.begin(), v.end(), is_schema);
        if (!is_schema(v) && !tuple) return std::string(key) + " must be a schema (an object or true/false), not " + v.type_name() + at(path);
    }
    if (s.contains("required")) {
        const json & v = s.at("required");
        if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json & x) { return x.is_string(); })) {
            return "required must be an array of property names" + at(path);
        }
    }
    if (s.contains("enum") && !s.at("enum").is_array()) return std::string("enum must be an array, not ") + s.at("enum").type_name() + at(path);
    if (s.contains("type")) {
        const json & v = s.at("type");
        if (!v.is_string() && !(v.is_array() && std::all_of(v.begin(), v.end(), [](const json & x) { return x.is_string(); }))) {
            return "type must be a type name or an array of them" + at(path);
        }
    }
    return "";
}

std::string check_schema(const json & s, const schema_limits & l, const std::string & path) {
    std::string e = check_shapes(s, path);
    if (!e.empty()) return e;
    if (s.contains("properties") && s.at("properties").is_object() && s.at("properties").size() > l.max_properties) {
        return "an object with " + std::to_string(s.at("properties").size()) + " properties exceeds the limit of " +
               std::to_string(l.max_properties) + at(path);
    }
    if (s.contains("enum") && s.at("enum").is_array() && s.at("enum").size() > l.max_enum) {
        return "an enum of " + std::to_string(s.at("enum").size()) + " values exceeds the limit of " + std::to_string(l.max_enum) + at(path);
    }
    for (const char * key : { "minItems", "minLength", "minProperties" }) {
        if (!(e = check_count(s, key, l.max_count, path, true)).empty()) return e;
    }
    for (const char * key : { "maxItems", "maxLength", "maxProperties" }) {
        if (!(e = check_count(s, key, l.max_count, path, false)).empty()) return e;
    }
    for (const auto & [lo, hi] : { std::pair{ "minItems", "maxItems" }, std::pair{ "minLength", "maxLength" },
                                   std::pair{ "minProperties", "maxProperties" }, std::pair{ "minimum", "maximum" } }) {
        if (!(e = check_pair(s, lo, hi, path)).empty()) return e;
    }
    if (s.contains("type") && s.at("type") == "integer" && !(e = check_integer_bounds(s, path)).empty()) return e;
    return check_pattern(s, l, path);
}

// Keys whose value maps names to schemas (the map itself is no schema), and keys whose value is
// data, not a schema.
bool is_schema_map(const std::string & key) {
    return key == "properties" || key == "patternProperties" || key == "$defs" || key == "definitions" || key == "dependentSchemas";
}
bool is_data(const std::string & key) {
    // `example` (OpenAPI) and `x-…` extensions are data too: llama.cpp's converter ignores them.
    return key == "enum" || key == "const" || key == "default" || key == "examples" || key == "example" || key == "required" ||
           key.rfind("x-", 0) == 0;
}

struct visit {
    const json * node;
    std::string  path;
    size_t       depth;
    bool         is_map;  // a name -> schema map: its members are schemas, it is not
};

}  // namespace

std::string schema_check(const json & schema, const schema_limits & l) {
    // Iterative: the walk itself must not be what overflows.
    std::vector<visit> todo{ { &schema, "", 0, false } };
    size_t nodes = 0;
    while (!todo.empty()) {
        const visit v = std::move(todo.back());
        todo.pop_back();
        if (!v.node->is_object() && !v.node->is_array()) continue;
        if (++nodes > l.max_nodes) return "the schema has more than " + std::to_string(l.max_nodes) + " objects and arrays";
        if (v.depth > l.max_depth) return "the schema nests deeper than the limit of " + std::to_string(l.max_depth) + " levels" + at(v.path);
        if (v.node->is_object()) {
            if (!v.is_map) {
                const std::string e = check_schema(*v.node, l, v.path);
                if (!e.empty()) return e;
            }
            for (auto it = v.node->begin(); it != v.node->end(); ++it) {
                if (!v.is_map && is_data(it.key())) continue;
                todo.push_back({ &it.value(), v.path + "/" + pointer_token(it.key()), v.depth + 1, !v.is_map && is_schema_map(it.key()) });
            }
        } else {
            for (size_t i = 0; i < v.node->size(); i++) {
                todo.push_back({ &(*v.node)[i], v.path + "/" + std::to_string(i), v.depth + 1, false });
            }
        }
    }
    return "";
}

namespace {
bool parse(std::string_view text, json & out) {
    out = json::parse(text.begin(), text.end(), nullptr, /* allow_exceptions */ false);
    return !out.is_discarded();
}
}  // namespace

std::string schema_check_text(std::string_view schema_json, const schema_limits & l) {
    json schema;
    return parse(schema_json, schema) ? schema_check(schema, l) : "";
}

std::string tools_check_text(std::string_view tools_json, const schema_limits & l) {
    json tools;
    if (!parse(tools_json, tools) || !tools.is_array()) return "";
    for (const json & t : tools) {
        if (!t.is_object() || !t.contains("function") || !t.at("function").is_object()) continue;
        const json & f = t.at("function");
        if (!f.contains("parameters")) continue;
        std::string name = f.contains("name") && f.at("name").is_string() ? f.at("name").get<std::string>() : "?";
        if (name.size() > 64) name = name.substr(0, 64) + "...";
        const std::string e = schema_check(f.at("parameters"), l);
        if (!e.empty()) return "function '" + name + "' parameters: " + e;
    }
    return "";
}

}  // namespace bmoe
