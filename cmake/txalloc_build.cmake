# Shared compile settings and the helpers the per-directory CMakeLists use.

set(TXALLOC_WARNINGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes)
if(TXALLOC_WERROR)
  list(APPEND TXALLOC_WARNINGS -Werror)
endif()

set(TXALLOC_SANITIZER_FLAGS "")
if(TXALLOC_SANITIZE)
  set(TXALLOC_SANITIZER_FLAGS -fsanitize=${TXALLOC_SANITIZE} -fno-omit-frame-pointer)
  if(TXALLOC_SANITIZE MATCHES "undefined")
    list(APPEND TXALLOC_SANITIZER_FLAGS -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${TXALLOC_SANITIZER_FLAGS})
  add_link_options(${TXALLOC_SANITIZER_FLAGS})
endif()

# Debug assertions of internal invariants (TXALLOC_ASSERT, src/util/debug_assert.h): ON or
# OFF, or empty for the default, ON exactly in the sanitizer builds.
set(TXALLOC_DEBUG "" CACHE STRING "Check internal invariants: ON, OFF, or empty (ON in sanitizer builds)")
if(TXALLOC_DEBUG STREQUAL "")
  if(TXALLOC_SANITIZE)
    set(TXALLOC_DEBUG_ON ON)
  else()
    set(TXALLOC_DEBUG_ON OFF)
  endif()
elseif(TXALLOC_DEBUG)
  set(TXALLOC_DEBUG_ON ON)
else()
  set(TXALLOC_DEBUG_ON OFF)
endif()
if(TXALLOC_DEBUG_ON)
  add_compile_definitions(TXALLOC_DEBUG=1)
endif()

# True when this build produces (and tests) the malloc-overriding drop-in library.
if(TXALLOC_SANITIZE)
  set(TXALLOC_BUILD_PRELOAD OFF)
else()
  set(TXALLOC_BUILD_PRELOAD ON)
endif()

include(${CMAKE_CURRENT_LIST_DIR}/txalloc_layers.cmake)

# txalloc_layer(NAME <layer> SOURCES <files...>)
# One object library per layer (src/CMakeLists.txt lists them with their rules). Its
# sources see include/ and the layer's view of src/ (txalloc_layer_view), nothing else of
# src/. The objects of all layers are collected into the global property TXALLOC_OBJECTS,
# from which src/CMakeLists.txt builds the static and shared libraries.
function(txalloc_layer)
  cmake_parse_arguments(L "" "NAME" "SOURCES" ${ARGN})
  set(target txalloc_${L_NAME})
  add_library(${target} OBJECT ${L_SOURCES})
  txalloc_layer_view(${L_NAME} view)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include PRIVATE ${view})
  target_compile_options(${target} PRIVATE ${TXALLOC_WARNINGS}
    -fvisibility=hidden -ftls-model=initial-exec -fno-plt)
  target_compile_definitions(${target} PRIVATE TXALLOC_BUILDING=1)
  set_property(GLOBAL APPEND PROPERTY TXALLOC_OBJECTS $<TARGET_OBJECTS:${target}>)
endfunction()

# txalloc_program(NAME <name> SOURCES <files...> [OUTPUT_DIR <dir>] [LIBS <libs...>])
# A program of the project (bench or test); warnings as for the library.
function(txalloc_program)
  cmake_parse_arguments(P "" "NAME;OUTPUT_DIR" "SOURCES;LIBS" ${ARGN})
  add_executable(${P_NAME} ${P_SOURCES})
  target_compile_options(${P_NAME} PRIVATE ${TXALLOC_WARNINGS})
  target_include_directories(${P_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/include
    ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/bench/common ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${P_NAME} PRIVATE ${P_LIBS} Threads::Threads ${CMAKE_DL_LIBS} m)
  if(P_OUTPUT_DIR)
    set_target_properties(${P_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  endif()
endfunction()

find_package(Threads REQUIRED)
