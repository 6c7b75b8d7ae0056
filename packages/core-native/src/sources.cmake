# The Node-API addon and the streaming core. Layers (one folder each):
#   cache/   policy: which experts stay resident (pure; unit-tested without a model)
#   stream/  options, the GGUF expert layout, and the streamer that ties the mechanisms together
#   vm/      engine-owned memory at the experts' canonical addresses (mmap, memfd slots)
#   io/      read lanes (O_DIRECT, one descriptor per lane)
#   runtime/ decode loop, model loading, chat formatting (no Node-API)
#   sys/     process counters
#   addon/   the JS boundary only
execute_process(COMMAND node -p "require('node-addon-api').include_dir"
                WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                OUTPUT_VARIABLE BMOE_NAPI_INC OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "\"" "" BMOE_NAPI_INC "${BMOE_NAPI_INC}")

# Our patches to the pinned source (patches/): detect them so an unpatched llama.cpp still builds.
file(READ ${BMOE_LLAMA_DIR}/ggml/include/ggml-cpu.h BMOE_GGML_CPU_H)
file(READ ${BMOE_LLAMA_DIR}/include/llama.h BMOE_LLAMA_H)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${BMOE_LLAMA_DIR}/ggml/include/ggml-cpu.h ${BMOE_LLAMA_DIR}/include/llama.h)
set(BMOE_FEATURE_DEFS "")
if (BMOE_GGML_CPU_H MATCHES "ggml_cpu_set_mul_mat_id_hook")
    list(APPEND BMOE_FEATURE_DEFS BMOE_HAVE_MMID_HOOK)
endif()
if (BMOE_GGML_CPU_H MATCHES "ggml_cpu_repack_expert")
    list(APPEND BMOE_FEATURE_DEFS BMOE_HAVE_REPACK_EXPERT)
endif()
if (EXISTS ${BMOE_LLAMA_DIR}/include/llama-batch-invariant.h)
    list(APPEND BMOE_FEATURE_DEFS BMOE_HAVE_BATCH_INVARIANT)
endif()
if (EXISTS ${BMOE_LLAMA_DIR}/ggml/include/ggml-cpu-barrier.h)
    list(APPEND BMOE_FEATURE_DEFS BMOE_HAVE_BARRIER_SPIN)
endif()
if (BMOE_LLAMA_H MATCHES "cold_tensors")
    list(APPEND BMOE_FEATURE_DEFS BMOE_HAVE_COLD_TENSORS)
endif()
if (BMOE_LLAMA_H MATCHES "llama_grammar_set_stop_callback")
    list(APPEND BMOE_FEATURE_DEFS BMOE_HAVE_GRAMMAR_STOP)
endif()
file(READ ${BMOE_LLAMA_DIR}/common/jinja/runtime.h BMOE_JINJA_RUNTIME_H)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${BMOE_LLAMA_DIR}/common/jinja/runtime.h)
if (BMOE_JINJA_RUNTIME_H MATCHES "exec_limits")
    list(APPEND BMOE_FEATURE_DEFS BMOE_HAVE_JINJA_LIMITS)
endif()

add_library(bmoe_policy STATIC
    src/cache/cache_policy.cpp
    src/cache/cache_budget.cpp
    src/stream/stream_config.cpp
    src/stream/route_select.cpp
    src/stream/decode_choice.cpp
    src/compute/wait_policy.cpp
    src/runtime/reasoning_budget.cpp)
target_include_directories(bmoe_policy PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)

# Bounds on what requests and model files bring to llama.cpp (grammars, JSON schemas, request
# JSON): pure text and JSON scans, unit-tested without a model.
add_library(bmoe_limits STATIC
    src/limits/grammar_limits.cpp
    src/limits/json_limits.cpp
    src/limits/schema_limits.cpp
    src/limits/one_line.cpp)
target_include_directories(bmoe_limits PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include ${BMOE_LLAMA_DIR}/vendor)

add_library(bmoe_runtime STATIC
    src/runtime/generator.cpp
    src/runtime/generator_cache.cpp
    src/runtime/generator_media.cpp
    src/runtime/media.cpp
    src/runtime/kv_state.cpp
    src/runtime/sampler_common.cpp
    src/runtime/answer_close.cpp
    src/runtime/token_probs.cpp
    src/runtime/embed.cpp
    src/runtime/chat_plan.cpp
    src/runtime/model_state.cpp
    src/runtime/chat_format.cpp
    src/runtime/prompt.cpp
    src/runtime/tokenize.cpp
    src/runtime/log_capture.cpp
    src/runtime/template_bounds.cpp
    src/layout/expert_layout.cpp
    src/layout/model_files.cpp
    src/stream/streamer.cpp
    src/stream/residency.cpp
    src/stream/route_ahead.cpp
    src/vm/expert_memory.cpp
    src/vm/slot_pool.cpp
    src/vm/file_guard.cpp
    src/io/read_lanes.cpp
    src/io/read_ceiling.cpp
    src/sys/proc_stats.cpp
    src/sys/proc_maps.cpp
    src/sys/file_maps.cpp
    src/sys/huge_pages.cpp
    src/sys/meminfo.cpp)
target_link_libraries(bmoe_runtime PUBLIC llama llama-common bmoe_policy bmoe_limits)
# Images (runtime/media.cpp): llama.cpp's multimodal library, and stb_image (compiled into it) to
# check an image's size before decoding it.
target_link_libraries(bmoe_runtime PRIVATE mtmd)
target_include_directories(bmoe_runtime PRIVATE ${BMOE_LLAMA_DIR}/vendor)
target_include_directories(bmoe_runtime PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
# answer_close.cpp reads the grammar's rules and stacks (llama.cpp's src/llama-grammar.h).
target_include_directories(bmoe_runtime PRIVATE ${BMOE_LLAMA_DIR}/src)
target_compile_definitions(bmoe_runtime PUBLIC ${BMOE_FEATURE_DEFS})

add_library(bmoe SHARED
    src/addon/addon.cpp
    src/addon/model_wrap.cpp
    src/addon/model_chat.cpp
    src/addon/model_media.cpp
    src/addon/context_wrap.cpp
    src/addon/context_embed.cpp
    ${CMAKE_JS_SRC})
set_target_properties(bmoe PROPERTIES PREFIX "" SUFFIX ".node" CXX_VISIBILITY_PRESET hidden)
target_include_directories(bmoe PRIVATE ${CMAKE_JS_INC} ${BMOE_NAPI_INC})
# BMOE_VARIANT: which prebuilt CPU variant this is (<target>.<variant>, cpu-variants.json; set by
# scripts/build-target.mjs); buildInfo().variant reports it, "native" for a build from source.
set(BMOE_VARIANT "native" CACHE STRING "the prebuilt CPU variant this addon is (buildInfo().variant)")
target_compile_definitions(bmoe PRIVATE NAPI_VERSION=8 NAPI_CPP_EXCEPTIONS NODE_ADDON_API_DISABLE_DEPRECATED
                                        BMOE_LLAMA_COMMIT="${BMOE_LLAMA_COMMIT}" BMOE_VARIANT="${BMOE_VARIANT}")
target_link_libraries(bmoe PRIVATE bmoe_runtime ${CMAKE_JS_LIB})
if (NOT APPLE)
    target_link_options(bmoe PRIVATE -Wl,--exclude-libs,ALL)
endif()

if (BMOE_DEV_TARGETS)
    # C++ unit tests (ctest; no model): the policy, and a few of llama.cpp's pieces bmoe patches or uses.
    enable_testing()
    add_executable(test_cache_policy test/cpp/test_cache_policy.cpp)
    target_link_libraries(test_cache_policy PRIVATE bmoe_policy)
    add_test(NAME cache_policy COMMAND test_cache_policy)
    add_executable(test_cache_budget test/cpp/test_cache_budget.cpp)
    target_link_libraries(test_cache_budget PRIVATE bmoe_policy)
    add_test(NAME cache_budget COMMAND test_cache_budget)
    add_executable(test_meminfo test/cpp/test_meminfo.cpp src/sys/meminfo.cpp)
    target_include_directories(test_meminfo PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
    add_test(NAME meminfo COMMAND test_meminfo)
    add_executable(test_huge_pages test/cpp/test_huge_pages.cpp src/sys/huge_pages.cpp src/sys/proc_maps.cpp)
    target_include_directories(test_huge_pages PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
    add_test(NAME huge_pages COMMAND test_huge_pages)
    add_executable(test_route_select test/cpp/test_route_select.cpp)
    target_link_libraries(test_route_select PRIVATE bmoe_policy)
    add_test(NAME route_select COMMAND test_route_select)
    add_executable(test_decode_choice test/cpp/test_decode_choice.cpp)
    target_link_libraries(test_decode_choice PRIVATE bmoe_policy)
    add_test(NAME decode_choice COMMAND test_decode_choice)
    add_executable(test_wait_policy test/cpp/test_wait_policy.cpp)
    target_link_libraries(test_wait_policy PRIVATE bmoe_policy)
    add_test(NAME wait_policy COMMAND test_wait_policy)
    add_executable(test_grammar_limits test/cpp/test_grammar_limits.cpp)
    target_link_libraries(test_grammar_limits PRIVATE bmoe_limits)
    add_test(NAME grammar_limits COMMAND test_grammar_limits)
    add_executable(test_schema_limits test/cpp/test_schema_limits.cpp)
    target_link_libraries(test_schema_limits PRIVATE bmoe_limits)
    add_test(NAME schema_limits COMMAND test_schema_limits)
    # The shortest completion of a grammar state, on llama.cpp's grammar engine (no model).
    add_executable(test_answer_close test/cpp/test_answer_close.cpp src/runtime/answer_close.cpp)
    target_include_directories(test_answer_close PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include ${BMOE_LLAMA_DIR}/src)
    target_link_libraries(test_answer_close PRIVATE llama llama-common)
    add_test(NAME answer_close COMMAND test_answer_close)
    # Patch 0009's multi-column q6_K dot product against upstream's one column (ggml's CPU backend).
    add_executable(test_q6k_columns test/cpp/test_q6k_columns.cpp)
    target_link_libraries(test_q6k_columns PRIVATE ggml)
    add_test(NAME q6k_columns COMMAND test_q6k_columns)
    # ... and its speed against upstream's one column at a time (a bench script, not a test).
    add_executable(bench_q6k_columns bench/bench_q6k_columns.cpp)
    target_link_libraries(bench_q6k_columns PRIVATE ggml)
    set_target_properties(bench_q6k_columns PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
    add_executable(test_reasoning_budget test/cpp/test_reasoning_budget.cpp)
    target_link_libraries(test_reasoning_budget PRIVATE bmoe_policy)
    add_test(NAME reasoning_budget COMMAND test_reasoning_budget)
    add_custom_target(bmoe_tests ALL DEPENDS test_reasoning_budget test_answer_close test_cache_policy test_cache_budget test_meminfo test_huge_pages test_route_select test_decode_choice test_wait_policy
                                             test_grammar_limits test_schema_limits test_q6k_columns bench_q6k_columns)
endif()
