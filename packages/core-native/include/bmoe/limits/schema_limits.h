#pragma once
// Bounds on a JSON schema before llama.cpp's json_schema_to_grammar converts it. The converter
// reads counts with get<int>() (1e300 gives a cast error from inside nlohmann), writes every pair
// of optional properties into the grammar (3,000 of them: tens of MB, a minute of work), parses
// `pattern` recursively, and takes minItems > maxItems into a grammar that never ends. Checked
// here, each is one line naming the place in the schema (a JSON pointer) and the limit.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace bmoe {

struct schema_limits {
    size_t max_depth      = 64;     // nested schemas
    size_t max_nodes      = 20000;  // objects and arrays in the schema, together
    size_t max_properties = 200;    // properties of one object
    size_t max_enum       = 1000;   // values of one enum
    size_t max_count      = 2000;   // minItems, minLength, minProperties (llama.cpp's repetition bound)
    size_t max_pattern    = 4096;   // bytes of one pattern
    size_t max_pattern_depth = 32;  // nested groups in one pattern
};

// "" when the schema is within the limits and its bounds make sense, else one line.
std::string schema_check(const nlohmann::ordered_json & schema, const schema_limits & limits = {});

// The same on JSON text (nest it no deeper than json_limits allows first). Text that does not
// parse is "" here: the caller's own parse reports it.
std::string schema_check_text(std::string_view schema_json, const schema_limits & limits = {});

// An OpenAI tools array: every function's `parameters` schema ("function 'f' parameters: ...").
std::string tools_check_text(std::string_view tools_json, const schema_limits & limits = {});

}  // namespace bmoe
