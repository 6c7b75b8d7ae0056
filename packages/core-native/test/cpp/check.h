#pragma once
// A minimal assertion harness for the C++ policy tests (run by ctest; no framework dependency).
#include <cstdio>
#include <cstdlib>

inline int g_failures = 0;
inline int g_checks   = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        g_checks++;                                                                  \
        if (!(cond)) {                                                               \
            g_failures++;                                                            \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

inline int check_report(const char * name) {
    std::printf("%s: %d checks, %d failed\n", name, g_checks, g_failures);
    return g_failures == 0 ? 0 : 1;
}
