# FindDNNL.cmake - oneDNN (Debian libdnnl-dev) as the imported target DNNL::dnnl.
#
# Sets DNNL_FOUND, DNNL_INCLUDE_DIR, DNNL_LIBRARY, DNNL_VERSION.  Honours
# DNNL_ROOT / $DNNL_ROOT as an extra search prefix.  A config package
# (dnnl-config.cmake, shipped by upstream builds) is tried first.
find_package(dnnl CONFIG QUIET)
if(dnnl_FOUND AND TARGET DNNL::dnnl)
  set(DNNL_FOUND TRUE)
  set(DNNL_VERSION ${dnnl_VERSION})
  return()
endif()

find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp
  HINTS ${DNNL_ROOT} $ENV{DNNL_ROOT} PATH_SUFFIXES include)
find_library(DNNL_LIBRARY NAMES dnnl
  HINTS ${DNNL_ROOT} $ENV{DNNL_ROOT} PATH_SUFFIXES lib lib64)

if(DNNL_INCLUDE_DIR AND EXISTS ${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h)
  file(STRINGS ${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h _dnnl_ver REGEX "#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define DNNL_VERSION_${part} ([0-9]+).*" "\\1" DNNL_VERSION_${part} "${_dnnl_ver}")
  endforeach()
  set(DNNL_VERSION "${DNNL_VERSION_MAJOR}.${DNNL_VERSION_MINOR}.${DNNL_VERSION_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(DNNL REQUIRED_VARS DNNL_LIBRARY DNNL_INCLUDE_DIR VERSION_VAR DNNL_VERSION)

if(DNNL_FOUND AND NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES
    IMPORTED_LOCATION ${DNNL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${DNNL_INCLUDE_DIR})
endif()
mark_as_advanced(DNNL_INCLUDE_DIR DNNL_LIBRARY)
