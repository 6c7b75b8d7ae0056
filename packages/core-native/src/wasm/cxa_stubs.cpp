// wasm32-wasi: Debian's libc++abi for wasm32 is built without exception support, but llama.cpp
// reports errors by throwing. The code is compiled with -fwasm-exceptions (so `throw`, `try` and
// `catch` compile) and these stand-ins end a throw: they print the exception's message to stderr
// and trap (abort). A trap ends the call into wasm with a RuntimeError; the JS glue treats the
// instance as unusable afterwards. The JS side validates inputs first (the GGUF is checked by
// @bmoe/gguf before it reaches llama.cpp), so a throw here means an unexpected failure.
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <system_error>
#include <typeinfo>

namespace {
const char * message_of(void * obj, const std::type_info * t) {
    const std::type_info * std_types[] = {
        &typeid(std::exception), &typeid(std::runtime_error), &typeid(std::logic_error), &typeid(std::invalid_argument),
        &typeid(std::out_of_range), &typeid(std::length_error), &typeid(std::domain_error), &typeid(std::range_error),
        &typeid(std::overflow_error), &typeid(std::underflow_error), &typeid(std::system_error), &typeid(std::bad_alloc),
    };
    for (const std::type_info * s : std_types) {
        if (*t == *s) return static_cast<std::exception *>(obj)->what();
    }
    return nullptr;
}
} // namespace

extern "C" {
// The landing-pad context the compiler's catch code reads (never filled: nothing is caught).
struct { void * lpad_index; void * lsda; void * selector; } __wasm_lpad_context;

void * __cxa_allocate_exception(size_t n) noexcept {
    void * p = std::calloc(1, n);
    if (!p) std::abort();
    return p;
}
void __cxa_free_exception(void * p) noexcept { std::free(p); }

[[noreturn]] void __cxa_throw(void * obj, std::type_info * t, void (*)(void *)) {
    const char * msg = message_of(obj, t);
    std::fprintf(stderr, "bmoe wasm32-wasi: C++ exception %s%s%s (no exception support in this build: aborting the call)\n",
                 t->name(), msg ? ": " : "", msg ? msg : "");
    std::fflush(stderr);
    std::abort();
}
[[noreturn]] void __cxa_rethrow() { std::abort(); }
void * __cxa_begin_catch(void * p) noexcept { return p; }
void __cxa_end_catch() {}
void * __cxa_get_exception_ptr(void * p) noexcept { return p; }
int _Unwind_CallPersonality(void *) { return 0; }
int __gxx_personality_wasm0() { return 0; }
}
