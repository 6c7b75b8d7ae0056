// Bounds on JSON schemas and request JSON, checked before llama.cpp converts or walks them.
#include "check.h"

#include "bmoe/limits/json_limits.h"
#include "bmoe/limits/schema_limits.h"

#include <string>

using namespace bmoe;
using json = nlohmann::ordered_json;

static bool says(const std::string & e, const char * needle) {
    if (e.find(needle) == std::string::npos) {
        std::fprintf(stderr, "  got: '%s' (wanted '%s')\n", e.c_str(), needle);
        return false;
    }
    return true;
}

static void test_json_depth() {
    CHECK(json_depth("{}") == 1);
    CHECK(json_depth("[[1],[2,[3]]]") == 3);
    CHECK(json_depth("{\"a\":\"[[[[\\\"[[\"}") == 1);  // brackets inside strings do not count
    const std::string deep = std::string(4000, '[') + std::string(4000, ']');
    CHECK(json_depth(deep) == 4000);
    CHECK(says(json_check_depth(deep, 64, "tools"), "tools nests 4000 levels, over the limit of 64"));
    CHECK(json_check_depth("[[]]", 64, "tools").empty());
}

static void test_real_schemas_pass() {
    const json s = json::parse(R"({"type":"object","properties":{
        "name":{"type":"string","minLength":1,"maxLength":64,"pattern":"^[a-z]+(-[a-z]+)*$"},
        "tags":{"type":"array","items":{"type":"string"},"minItems":0,"maxItems":10},
        "age":{"type":"integer","minimum":0,"maximum":150},
        "minLength":{"type":"string"},
        "kind":{"enum":["a","b",{"minItems":"data, not a schema"}]}},
      "required":["name"],"$defs":{"maxItems":{"type":"number"}}})");
    CHECK(schema_check(s).empty());
}

static void test_bounds() {
    CHECK(says(schema_check(json::parse(R"({"type":"array","minItems":5,"maxItems":1})")), "minItems 5 is above maxItems 1"));
    CHECK(says(schema_check(json::parse(R"({"properties":{"p":{"type":"string","minLength":9,"maxLength":3}}})")),
               "minLength 9 is above maxLength 3 (at /properties/p)"));
    CHECK(says(schema_check(json::parse(R"({"type":"integer","minimum":-1e300})")), "minimum -1e+300 is outside the 64-bit integer range"));
    CHECK(says(schema_check(json::parse(R"({"type":"array","maxItems":1e300})")), "maxItems must be a whole number"));
    CHECK(says(schema_check(json::parse(R"({"type":"string","minLength":5000})")), "minLength 5000 exceeds the limit of 2000"));
    CHECK(schema_check(json::parse(R"({"type":"string","pattern":"^((a{0,9}){0,9})$"})")).empty());  // the grammar check bounds the product
    CHECK(says(schema_check(json::parse(R"({"type":"string","pattern":")" + std::string(40, '(') + "a" + std::string(40, ')') + R"("})")),
               "pattern nests groups deeper than the limit of 32"));
    json many = json::object();
    for (int i = 0; i < 3000; i++) many["p" + std::to_string(i)] = json{ { "type", "string" } };
    CHECK(says(schema_check(json{ { "type", "object" }, { "properties", many } }), "an object with 3000 properties exceeds the limit of 200"));
    json big_enum = json::array();
    for (int i = 0; i < 50000; i++) big_enum.push_back("v" + std::to_string(i));
    CHECK(says(schema_check(json{ { "enum", big_enum } }), "an enum of 50000 values exceeds the limit of 1000"));
    json nested = json{ { "type", "string" } };
    for (int i = 0; i < 100; i++) nested = json{ { "type", "array" }, { "items", nested } };
    CHECK(says(schema_check(nested), "nests deeper than the limit of 64 levels"));
}

int main() {
    test_json_depth();
    test_real_schemas_pass();
    test_bounds();
    return check_report("schema_limits");
}
