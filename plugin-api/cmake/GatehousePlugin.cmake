# gatehouse_add_plugin(<target> <sources>...)
#
# Builds one tool family as a shared library the host can load: no "lib"
# prefix, only the entry symbol exported, linked against the plugin API and
# nothing of the host.
function(gatehouse_add_plugin target)
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE Gatehouse::plugin_api)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED GATEHOUSE_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${GATEHOUSE_PLUGIN_OUTPUT_DIR})
  endif()
endfunction()
