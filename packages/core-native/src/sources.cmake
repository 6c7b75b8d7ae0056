# The Node-API addon. Layers: runtime/ (decode loop, model, chat; no Node-API), sys/ (process
# counters), addon/ (the JS boundary only).
execute_process(COMMAND node -p "require('node-addon-api').include_dir"
                WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                OUTPUT_VARIABLE BMOE_NAPI_INC OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "\"" "" BMOE_NAPI_INC "${BMOE_NAPI_INC}")

add_library(bmoe_runtime STATIC
    src/runtime/generator.cpp
    src/runtime/model_state.cpp
    src/runtime/chat_format.cpp
    src/runtime/log_capture.cpp
    src/sys/proc_stats.cpp)
target_link_libraries(bmoe_runtime PUBLIC llama llama-common)

add_library(bmoe SHARED
    src/addon/addon.cpp
    src/addon/model_wrap.cpp
    src/addon/context_wrap.cpp
    ${CMAKE_JS_SRC})
set_target_properties(bmoe PROPERTIES PREFIX "" SUFFIX ".node" CXX_VISIBILITY_PRESET hidden)
target_include_directories(bmoe PRIVATE ${CMAKE_JS_INC} ${BMOE_NAPI_INC})
target_compile_definitions(bmoe PRIVATE NAPI_VERSION=8 NAPI_CPP_EXCEPTIONS NODE_ADDON_API_DISABLE_DEPRECATED
                                        BMOE_LLAMA_COMMIT="${BMOE_LLAMA_COMMIT}")
target_link_libraries(bmoe PRIVATE bmoe_runtime ${CMAKE_JS_LIB})
if (NOT APPLE)
    target_link_options(bmoe PRIVATE -Wl,--exclude-libs,ALL)
endif()
