// wasm32-wasi (Debian's wasi-libc 2022) has no threads: ggml runs one thread under __wasi__.
// The declarations ggml-cpu.c names, as single-thread no-ops.
#pragma once
#include <sched.h>
#include <sys/types.h> // wasi-libc declares the pthread_* types, not the functions
#define PTHREAD_MUTEX_INITIALIZER {}
#define PTHREAD_COND_INITIALIZER {}
static inline int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg) { (void) t; (void) a; (void) f; (void) arg; return 38; /* ENOSYS */ }
static inline int pthread_join(pthread_t t, void **r) { (void) t; (void) r; return 0; }
static inline pthread_t pthread_self(void) { return (pthread_t) 0; }
static inline int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a) { (void) m; (void) a; return 0; }
static inline int pthread_mutex_destroy(pthread_mutex_t *m) { (void) m; return 0; }
static inline int pthread_mutex_lock(pthread_mutex_t *m) { (void) m; return 0; }
static inline int pthread_mutex_unlock(pthread_mutex_t *m) { (void) m; return 0; }
static inline int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a) { (void) c; (void) a; return 0; }
static inline int pthread_cond_destroy(pthread_cond_t *c) { (void) c; return 0; }
static inline int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { (void) c; (void) m; return 0; }
static inline int pthread_cond_broadcast(pthread_cond_t *c) { (void) c; return 0; }
static inline int pthread_cond_signal(pthread_cond_t *c) { (void) c; return 0; }
