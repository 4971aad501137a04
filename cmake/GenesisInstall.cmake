# GenesisInstall.cmake - every install rule but the plugins' (genesis_add_plugin
# installs those), the CMake package, the pkg-config files and the Debian
# packages (CPack).  Included last by the top-level CMakeLists.txt.
#
# Install components (docs/install.md):
#   runtime  libgenesis, libgenesis_frontend, libgenesis_llm, the reference and cpu plugins, the genesis tool
#   dev      headers (C API, C++ frontend, plugin SDK), the .so links, the CMake
#            package, the pkg-config files, docs and examples' sources
#   cuda     the cuda backend plugin
include(CMakePackageConfigHelpers)

set(GENESIS_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Genesis)
set(GENESIS_PKGCONFIG_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---- libraries, the tool, headers -------------------------------------------
install(TARGETS genesis genesis_frontend genesis_llm genesis_abi genesis_sdk EXPORT GenesisTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
if(TARGET genesis_cli)  # not built without CLI11 (tools/cli warns)
  install(TARGETS genesis_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()
# One include/genesis/: the C API (*.h), the C++ frontend and LLM library (*.hpp) and the SDK (sdk/*.h).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/abi/include/genesis ${PROJECT_SOURCE_DIR}/frontend/include/genesis
    ${PROJECT_SOURCE_DIR}/llm/include/genesis ${PROJECT_SOURCE_DIR}/sdk/include/genesis
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

# The cuda plugin finds cuBLAS where it was linked from (the toolkit's lib
# directory, not a system one) when the loader has no other hint.
if(TARGET genesis_plugin_cuda)
  set_target_properties(genesis_plugin_cuda PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
endif()

# ---- CMake package: find_package(Genesis) -----------------------------------
install(EXPORT GenesisTargets NAMESPACE Genesis:: DESTINATION ${GENESIS_CMAKE_INSTALL_DIR}
  COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/package/GenesisConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/GenesisConfig.cmake
  INSTALL_DESTINATION ${GENESIS_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR GENESIS_PLUGIN_INSTALL_DIR)
# Before 1.0 a minor release may change the C++ API: only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/GenesisConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/GenesisConfig.cmake
    ${PROJECT_BINARY_DIR}/package/GenesisConfigVersion.cmake
    ${PROJECT_SOURCE_DIR}/cmake/GenesisPlugin.cmake ${PROJECT_SOURCE_DIR}/cmake/plugin.map
  DESTINATION ${GENESIS_CMAKE_INSTALL_DIR} COMPONENT dev)

# ---- pkg-config: genesis.pc, genesis-frontend.pc, genesis-llm.pc ------------
# ${pcfiledir}-relative prefix, so the files stay right when the tree moves.
file(RELATIVE_PATH GENESIS_PC_PREFIX_FROM_PCDIR /prefix/${GENESIS_PKGCONFIG_INSTALL_DIR} /prefix)
string(REGEX REPLACE "/$" "" GENESIS_PC_PREFIX_FROM_PCDIR "${GENESIS_PC_PREFIX_FROM_PCDIR}")
foreach(pc genesis genesis-frontend genesis-llm)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/package/${pc}.pc.in ${PROJECT_BINARY_DIR}/package/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/package/${pc}.pc DESTINATION ${GENESIS_PKGCONFIG_INSTALL_DIR}
    COMPONENT dev)
endforeach()

# ---- docs and examples' sources ---------------------------------------------
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT dev
  FILES_MATCHING PATTERN "*.md")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
  COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/backends/examples/axpby
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/plugins COMPONENT dev)

# ---- Debian packages: cpack -G DEB ------------------------------------------
# One package per component: genesis, genesis-dev, genesis-cuda.
set(GENESIS_PACKAGE_CONTACT "Genesis maintainers <genesis@localhost>" CACHE STRING
  "Maintainer field of the Debian packages")
set(CPACK_PACKAGE_NAME genesis)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${GENESIS_PACKAGE_CONTACT})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
# genesis-dev and genesis-cuda depend on the same version of genesis.
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_COMPONENTS_ALL runtime dev)
if(TARGET genesis_plugin_cuda)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# Depends from the ELF files (dpkg-shlibdeps): libdnnl, libgomp, libpcre2,
# libutf8proc, zlib, libstdc++ ... Boost is header-only: no run-time package.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME genesis)
# Descriptions: the first line is the package summary.
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "Genesis deep-learning framework: libraries, CPU plugins, tool
libgenesis (the C API), libgenesis_frontend (the C++ API), libgenesis_llm (models, tokenizer, SFT), the reference and \
oneDNN cpu backend plugins, and the genesis command-line tool.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME genesis-dev)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "cmake, pkgconf | pkg-config, g++")
set(CPACK_DEBIAN_DEV_DESCRIPTION "Genesis deep-learning framework: development files
Headers of the C API, the C++ frontend (C++20) and the plugin SDK, the CMake \
package (find_package(Genesis), genesis_add_plugin), pkg-config files, \
documentation and examples' sources.")

# The toolkit's cuBLAS is not a Debian package: dpkg-shlibdeps skips it
# (--ignore-missing-info) and the package only depends on genesis.
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME genesis-cuda)
set(CPACK_COMPONENT_CUDA_DEPENDS runtime)
set(CPACK_DEBIAN_CUDA_DESCRIPTION "Genesis deep-learning framework: CUDA backend plugin
The cuda device type.  Needs the NVIDIA driver and the cuBLAS and cuBLASLt \
libraries of the CUDA toolkit it was built with; without a GPU it loads and \
reports zero devices.")
include(CPack)
