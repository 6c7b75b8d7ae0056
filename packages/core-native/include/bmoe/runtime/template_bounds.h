#pragma once
// Bounds for a model's chat template while llama.cpp parses and renders it (patch 0005). The
// template comes with the model file: one that recurses, loops for hours or builds gigabyte
// strings must fail with one line, not crash, hang or exhaust memory. One scope per parse/render,
// on the thread that does it.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace bmoe {

struct template_bounds {
    // The time this scope's parses and renders may take together.
    explicit template_bounds(int64_t time_ms);
    ~template_bounds();
    template_bounds(const template_bounds &) = delete;
    template_bounds & operator=(const template_bounds &) = delete;

    // `e` as one short line: the bound crossed ("chat template: nesting deeper than 200 levels
    // (a recursive macro?)"), else `what` and e's message, clipped.
    std::runtime_error error(const std::exception & e, const std::string & what) const;
    // The bound crossed in this scope, "" if none. llama.cpp's load-time probes catch their
    // exceptions and go on, so a load checks this after them.
    std::string crossed() const;

    static constexpr int64_t load_ms   = 10000;  // parsing + llama.cpp's probes at load
    static constexpr int64_t render_ms = 10000;  // one request's prompt

  private:
    struct impl;
    std::unique_ptr<impl> p;
};

}  // namespace bmoe
