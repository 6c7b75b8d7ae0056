// wasm32-wasi: no dynamic loading (ggml's backend registry is static here).
#pragma once
#define RTLD_NOW 2
#define RTLD_LOCAL 0
#define RTLD_LAZY 1
static inline void *dlopen(const char *f, int m) { (void) f; (void) m; return 0; }
static inline void *dlsym(void *h, const char *s) { (void) h; (void) s; return 0; }
static inline int dlclose(void *h) { (void) h; return 0; }
static inline char *dlerror(void) { return (char *) "dynamic loading is not available in wasm32-wasi"; }
