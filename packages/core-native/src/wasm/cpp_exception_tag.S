# The wasm exception tag C++ throws with (normally defined by libc++abi/libunwind).
.globl __cpp_exception
.tagtype __cpp_exception i32
__cpp_exception:
