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

// Keywords with the wrong shape: `properties` as an array of 10,000 nulls went past every bound
// (minutes of conversion per request, on after the client left).
static void test_shapes() {
    json nulls = json::array();
    for (int i = 0; i < 10000; i++) nulls.push_back(nullptr);
    CHECK(says(schema_check(json{ { "type", "object" }, { "properties", nulls } }), "properties must be an object of schemas, not array (at the schema's root)"));
    CHECK(says(schema_check(json::parse(R"({"properties":{"a":null}})")), "properties must map names to schemas (objects or true/false) (at /properties/a)"));
    CHECK(says(schema_check(json::parse(R"({"anyOf":{"type":"string"}})")), "anyOf must be an array of schemas, not object"));
    CHECK(says(schema_check(json::parse(R"({"oneOf":[{"type":"string"},3]})")), "oneOf must hold schemas (objects or true/false) (at /oneOf/1)"));
    CHECK(says(schema_check(json::parse(R"({"type":"array","items":"string"})")), "items must be a schema (an object or true/false), not string"));
    CHECK(says(schema_check(json::parse(R"({"properties":{"p":{"additionalProperties":1}}})")), "additionalProperties must be a schema (an object or true/false), not number (at /properties/p)"));
    CHECK(says(schema_check(json::parse(R"({"required":[1,2]})")), "required must be an array of property names"));
    CHECK(says(schema_check(json::parse(R"({"enum":"a"})")), "enum must be an array, not string"));
    CHECK(says(schema_check(json::parse(R"({"type":7})")), "type must be a type name or an array of them"));
    // What real clients send passes: booleans as schemas, the tuple form of items, type arrays,
    // vendor extensions and OpenAPI examples holding any data.
    CHECK(schema_check(json::parse(R"({"type":"object","properties":{"a":true,"b":{"type":["string","null"]},
        "c":{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}},
        "additionalProperties":false,"required":[],"x-order":{"properties":[1,2]},"example":{"anyOf":"data"}})")).empty());
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
    test_shapes();
    test_bounds();
    return check_report("schema_limits");
}
