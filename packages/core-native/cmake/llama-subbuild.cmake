# llama.cpp as a static sub-build, for both addons: only what they link or name gets compiled.
# `with_tools` (ON/OFF) turns on llama.cpp's common library and its tools (the native build's
# chat templates and reference tools); the wasm32-wasi build has neither.
macro(bmoe_llama_subbuild with_tools)
    set(BUILD_SHARED_LIBS  OFF           CACHE BOOL "" FORCE)
    set(LLAMA_BUILD_COMMON ${with_tools} CACHE BOOL "" FORCE)
    set(LLAMA_BUILD_TOOLS  ${with_tools} CACHE BOOL "" FORCE)
    foreach(off LLAMA_BUILD_TESTS LLAMA_BUILD_EXAMPLES LLAMA_BUILD_SERVER LLAMA_BUILD_APP LLAMA_OPENSSL LLAMA_CURL)
        set(${off} OFF CACHE BOOL "" FORCE)
    endforeach()
endmacro()
