# llama.cpp as a static sub-build, for both addons: only what they link or name gets compiled.
# `with_tools` (ON/OFF) turns on llama.cpp's common library and its tools (the native build's
# chat templates and reference tools); the wasm32-wasi build has neither.
macro(bmoe_llama_subbuild with_tools)
    set(BUILD_SHARED_LIBS  OFF           CACHE BOOL "" FORCE)
    set(LLAMA_BUILD_COMMON ${with_tools} CACHE BOOL "" FORCE)
    set(LLAMA_BUILD_TOOLS  ${with_tools} CACHE BOOL "" FORCE)
    # llama-server: the bench's peer for serving (bmoe bench serve), with the other reference tools
    # (BMOE_DEV_TARGETS; never in a cross or prebuilt build). Without its web UI: no npm build and
    # no download of prebuilt assets (neither is reachable everywhere), an API server only.
    if (${with_tools} AND BMOE_DEV_TARGETS)
        set(LLAMA_BUILD_SERVER ON CACHE BOOL "" FORCE)
    else()
        set(LLAMA_BUILD_SERVER OFF CACHE BOOL "" FORCE)
    endif()
    foreach(off LLAMA_BUILD_TESTS LLAMA_BUILD_EXAMPLES LLAMA_BUILD_APP LLAMA_OPENSSL LLAMA_CURL LLAMA_BUILD_UI LLAMA_USE_PREBUILT_UI)
        set(${off} OFF CACHE BOOL "" FORCE)
    endforeach()
endmacro()
