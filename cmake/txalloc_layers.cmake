# The layering rule, as the build enforces it. src/CMakeLists.txt states the rule (which
# layer may include what) with txalloc_layer_rule and txalloc_layer_shared; this file turns
# it into
#   - one include directory per layer, build/layers/<layer>/, holding symbolic links to the
#     layer's own directory and to what the rule allows, nothing else: an #include that
#     crosses the rule does not compile (txalloc_layer_view);
#   - build/layers/rules.txt, the same rule for tests/layering/check_layering.py, which
#     checks every #include in src/ (relative paths included) as a ctest.

set(TXALLOC_LAYER_VIEWS ${PROJECT_BINARY_DIR}/layers)
set(TXALLOC_LAYER_RULES ${TXALLOC_LAYER_VIEWS}/rules.txt)

# txalloc_layer_rule(<layer> [<allowed>...])
# Declares a layer (a directory of src/), above every layer declared before it. Each
# <allowed> is a lower layer (all of its headers) or one header of a lower layer
# ("alloc/alloc_direct.h": that header alone).
function(txalloc_layer_rule layer)
  get_property(declared GLOBAL PROPERTY TXALLOC_LAYER_ORDER)
  if(layer IN_LIST declared)
    message(FATAL_ERROR "layer '${layer}' has two rules")
  endif()
  foreach(entry IN LISTS ARGN)
    string(REGEX REPLACE "/.*" "" below "${entry}")
    if(NOT below IN_LIST declared)
      message(FATAL_ERROR "layer '${layer}' may use '${entry}' only if layer '${below}' is "
                          "declared before it (lower)")
    endif()
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/src/${entry})
      message(FATAL_ERROR "layer '${layer}' uses '${entry}': no src/${entry}")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY TXALLOC_LAYER_ORDER ${layer})
  set_property(GLOBAL PROPERTY TXALLOC_LAYER_USES_${layer} ${ARGN})
endfunction()

# txalloc_layer_shared(<layer>/<file>...)
# Files every layer may include whatever its rule: data that all layers are generated from
# (the option lists behind util/options.h's identifiers), no code.
function(txalloc_layer_shared)
  set_property(GLOBAL APPEND PROPERTY TXALLOC_LAYER_SHARED ${ARGN})
endfunction()

# txalloc_layer_write_rules(): writes build/layers/rules.txt (after the last rule).
function(txalloc_layer_write_rules)
  get_property(order GLOBAL PROPERTY TXALLOC_LAYER_ORDER)
  get_property(shared GLOBAL PROPERTY TXALLOC_LAYER_SHARED)
  set(text "# Generated from src/CMakeLists.txt: <layer>: <what it may include>\n")
  foreach(layer IN LISTS order)
    get_property(uses GLOBAL PROPERTY TXALLOC_LAYER_USES_${layer})
    list(JOIN uses " " uses)
    string(APPEND text "${layer}: ${uses}\n")
  endforeach()
  list(JOIN shared " " shared)
  string(APPEND text "*: ${shared}\n")
  file(WRITE ${TXALLOC_LAYER_RULES} "${text}")
endfunction()

# txalloc_layer_view(<layer> <out-var>)
# Creates build/layers/<layer>/ (afresh at every configure) and sets <out-var> to it: the
# only directory of src/ that the layer's sources get on their include path.
function(txalloc_layer_view layer out)
  get_property(order GLOBAL PROPERTY TXALLOC_LAYER_ORDER)
  if(NOT layer IN_LIST order)
    message(FATAL_ERROR "layer '${layer}' has no rule in src/CMakeLists.txt")
  endif()
  get_property(uses GLOBAL PROPERTY TXALLOC_LAYER_USES_${layer})
  get_property(shared GLOBAL PROPERTY TXALLOC_LAYER_SHARED)
  set(view ${TXALLOC_LAYER_VIEWS}/${layer})
  file(REMOVE_RECURSE ${view})
  file(MAKE_DIRECTORY ${view})
  set(whole ${layer})
  foreach(entry IN LISTS uses)
    if(NOT entry MATCHES "/")
      list(APPEND whole ${entry})
    endif()
  endforeach()
  foreach(dir IN LISTS whole)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${dir} ${view}/${dir} SYMBOLIC)
  endforeach()
  foreach(entry IN LISTS uses shared)
    string(REGEX REPLACE "/.*" "" dir "${entry}")
    if(entry MATCHES "/" AND NOT dir IN_LIST whole)
      get_filename_component(parent ${view}/${entry} DIRECTORY)
      file(MAKE_DIRECTORY ${parent})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${entry} ${view}/${entry} SYMBOLIC)
    endif()
  endforeach()
  set(${out} ${view} PARENT_SCOPE)
endfunction()
