# genesis_add_plugin(<name> SOURCES ... [LIBS ...])
# Builds libgenesis_plugin_<name>.so as a MODULE with hidden visibility into the
# one plugin directory, against abi/ (and the header-only SDK) only: a plugin
# never links libgenesis.
function(genesis_add_plugin name)
  cmake_parse_arguments(P "" "" "SOURCES;LIBS" ${ARGN})
  set(target genesis_plugin_${name})
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE genesis_abi genesis_sdk ${P_LIBS})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME genesis_plugin_${name}
    LIBRARY_OUTPUT_DIRECTORY ${GENESIS_PLUGIN_OUTPUT_DIR}
    C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  # Only gn_plugin_init leaves the library (std:: template instances would otherwise).
  target_link_options(${target} PRIVATE -Wl,--no-undefined
    -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/plugin.map)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/plugin.map)
  install(TARGETS ${target} LIBRARY DESTINATION ${GENESIS_PLUGIN_INSTALL_DIR})
endfunction()
