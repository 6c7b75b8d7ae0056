// Forced into every C++ file of the wasm32-wasi build (-include). Debian's libc++ for wasm32 is built
// without threads (_LIBCPP_HAS_THREADS 0), so <mutex>, <condition_variable>, <thread> and <future>
// declare no mutex, condition variable, thread or async. wasm32-wasi runs one thread, so these
// single-thread stand-ins are exact: a lock never waits, a "thread" or std::async task runs to
// completion where it is started, and a wait whose predicate is false could never be woken (abort).
#pragma once
#ifdef __cplusplus
#include <__config>
#if !_LIBCPP_HAS_THREADS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

namespace std {
struct mutex {
    constexpr mutex() noexcept = default;
    mutex(const mutex &) = delete;
    mutex & operator=(const mutex &) = delete;
    void lock() {}
    bool try_lock() { return true; }
    void unlock() {}
};
struct recursive_mutex : mutex {};
struct timed_mutex : mutex {};
struct shared_mutex : mutex {
    void lock_shared() {}
    bool try_lock_shared() { return true; }
    void unlock_shared() {}
};
template <class M> struct shared_lock {
    explicit shared_lock(M &) {}
};
enum class cv_status { no_timeout, timeout };
struct condition_variable {
    void notify_one() noexcept {}
    void notify_all() noexcept {}
    template <class L> void wait(L &) { std::fputs("bmoe wasm32-wasi: condition_variable::wait with one thread\n", stderr); std::abort(); }
    template <class L, class P> void wait(L &, P pred) {
        if (!pred()) { std::fputs("bmoe wasm32-wasi: condition_variable::wait would never wake (one thread)\n", stderr); std::abort(); }
    }
    template <class L, class D, class P> bool wait_for(L &, const D &, P pred) { return pred(); }
    template <class L, class T, class P> bool wait_until(L &, const T &, P pred) { return pred(); }
};
using condition_variable_any = condition_variable;

class thread {
  public:
    class id {
      public:
        bool operator==(const id &) const { return true; }
        bool operator!=(const id &) const { return false; }
    };
    thread() noexcept = default;
    template <class F, class... A> explicit thread(F && f, A &&... a) { std::invoke(std::forward<F>(f), std::forward<A>(a)...); }
    bool joinable() const noexcept { return false; }
    void join() {}
    void detach() {}
    id get_id() const noexcept { return {}; }
    static unsigned hardware_concurrency() noexcept { return 1; }
};
namespace this_thread {
inline thread::id get_id() noexcept { return {}; }
inline void yield() noexcept {}
template <class R, class P> void sleep_for(const chrono::duration<R, P> &) {}
}

enum class launch { async = 1, deferred = 2 };
enum class future_status { ready, timeout, deferred };
template <class T> class future {
  public:
    future() = default;
    explicit future(T v) : value(std::move(v)) {}
    T get() { return std::move(*value); }
    bool valid() const noexcept { return value.has_value(); }
    void wait() const {}
    template <class R, class P> future_status wait_for(const chrono::duration<R, P> &) const { return future_status::ready; }
  private:
    std::optional<T> value;
};
template <> class future<void> {
  public:
    void get() {}
    bool valid() const noexcept { return true; }
    void wait() const {}
};
template <class F, class... A> auto async(launch, F && f, A &&... a) -> future<std::invoke_result_t<F, A...>> {
    using R = std::invoke_result_t<F, A...>;
    if constexpr (std::is_void_v<R>) {
        std::invoke(std::forward<F>(f), std::forward<A>(a)...);
        return future<void>();
    } else {
        return future<R>(std::invoke(std::forward<F>(f), std::forward<A>(a)...));
    }
}
} // namespace std
#endif
#endif
