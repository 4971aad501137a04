# genesis_add_plugin(<name> SOURCES <file>... [LIBS <lib>...] [COMPONENT <component>] [NO_INSTALL])
#
# Builds libgenesis_plugin_<name>.so, a MODULE with hidden visibility that
# exports gn_plugin_init only, against the ABI headers and the header-only SDK
# (Genesis::sdk) only: a plugin never links libgenesis.
#
# The same file serves this source tree and projects that use an installed
# Genesis (find_package(Genesis) includes it):
# - the module goes to ${GENESIS_PLUGIN_OUTPUT_DIR} when that is set, else to
#   the current binary directory;
# - unless NO_INSTALL, it is installed into ${GENESIS_PLUGIN_INSTALL_DIR} when
#   that is set, else into <libdir>/genesis/plugins of the installing project,
#   which is where libgenesis looks when both share one prefix.  COMPONENT
#   names the install component.
function(genesis_add_plugin name)
  cmake_parse_arguments(P "NO_INSTALL" "COMPONENT" "SOURCES;LIBS" ${ARGN})
  if(NOT P_SOURCES)
    message(FATAL_ERROR "genesis_add_plugin(${name}): no SOURCES")
  endif()
  set(target genesis_plugin_${name})
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE Genesis::sdk ${P_LIBS})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME genesis_plugin_${name}
    C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  if(GENESIS_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${GENESIS_PLUGIN_OUTPUT_DIR})
  endif()
  # Only gn_plugin_init leaves the library (std:: template instances would otherwise).
  set(map ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin.map)
  target_link_options(${target} PRIVATE -Wl,--no-undefined -Wl,--version-script=${map})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${map})
  if(NOT P_NO_INSTALL)
    set(destination ${GENESIS_PLUGIN_INSTALL_DIR})
    if(NOT destination)
      include(GNUInstallDirs)
      set(destination ${CMAKE_INSTALL_LIBDIR}/genesis/plugins)
    endif()
    set(component)
    if(P_COMPONENT)
      set(component COMPONENT ${P_COMPONENT})
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION ${destination} ${component})
  endif()
endfunction()
