#include "bmoe/runtime/template_bounds.h"

#include "bmoe/limits/one_line.h"

#include <chrono>

#ifdef BMOE_HAVE_JINJA_LIMITS
#include "jinja/runtime.h"
#endif

namespace bmoe {

struct template_bounds::impl {
    int64_t time_ms = 0;
#ifdef BMOE_HAVE_JINJA_LIMITS
    jinja::exec_limits limits;
#endif
};

template_bounds::template_bounds(int64_t time_ms) : p(std::make_unique<impl>()) {
    p->time_ms = time_ms;
#ifdef BMOE_HAVE_JINJA_LIMITS
    // Real templates nest a few levels, take thousands of steps per message and produce the
    // prompt (at most the context's text): these bounds are far above them.
    p->limits.max_depth   = 200;
    p->limits.max_nodes   = 50000;
    p->limits.max_steps   = 20000000;
    p->limits.max_string  = 4u << 20;  // a 1M-token prompt is ~4 MB of text
    p->limits.max_items   = 100000;
    p->limits.deadline_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                (std::chrono::steady_clock::now() + std::chrono::milliseconds(time_ms)).time_since_epoch())
                                .count();
    jinja::set_exec_limits(&p->limits);
#else
    (void) time_ms;
#endif
}

template_bounds::~template_bounds() {
#ifdef BMOE_HAVE_JINJA_LIMITS
    jinja::set_exec_limits(nullptr);
#endif
}

std::string template_bounds::crossed() const {
#ifdef BMOE_HAVE_JINJA_LIMITS
    const std::string & bound = jinja::last_limit_error();
    if (bound == "took longer than its time limit") return bound + " of " + std::to_string(p->time_ms / 1000) + " s";
    return bound;
#else
    return "";
#endif
}

std::runtime_error template_bounds::error(const std::exception & e, const std::string & what) const {
    const std::string bound = crossed();
    if (!bound.empty()) return std::runtime_error(what + ": " + bound);
    return std::runtime_error(one_line_clip(what + ": " + e.what()));
}

}  // namespace bmoe
