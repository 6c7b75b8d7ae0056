# wasm32-wasi toolchain from Debian packages: clang-22, lld-22, llvm-22 (llvm-ar), wasi-libc,
# libc++-22-dev-wasm32, libc++abi-22-dev-wasm32, libclang-rt-22-dev-wasm32. CMake 3.25 has no WASI
# platform file, so this is a Generic system with the target and a private sysroot (made by
# scripts/build-wasm.mjs: Debian's wasm32-wasi headers and libraries, without the host's glibc).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR wasm32)
set(BMOE_WASI_SYSROOT "" CACHE PATH "private wasm32-wasi sysroot")
set(CMAKE_C_COMPILER   clang-22)
set(CMAKE_CXX_COMPILER clang++-22)
set(CMAKE_AR           /usr/bin/llvm-ar-22 CACHE FILEPATH "")
set(CMAKE_RANLIB       /usr/bin/llvm-ranlib-22 CACHE FILEPATH "")
set(CMAKE_C_COMPILER_TARGET   wasm32-wasi)
set(CMAKE_CXX_COMPILER_TARGET wasm32-wasi)
set(CMAKE_ASM_COMPILER clang-22)
set(CMAKE_ASM_COMPILER_TARGET wasm32-wasi)
set(CMAKE_SYSROOT ${BMOE_WASI_SYSROOT})
set(CMAKE_EXECUTABLE_SUFFIX ".wasm")
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
