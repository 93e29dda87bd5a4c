# The version and feature variables are not cached, so every configure (also a re-run in an
# existing build directory) goes through the discovery below.
#
# Find the netCDF-C library, preferring a parallel (MPI) build.
#
# Order: nc-config on PATH (HPC environment modules, source builds), then
# pkg-config `netcdf-mpi` (Debian's parallel build, whose CMake package config
# points at a non-existent include dir), then pkg-config `netcdf`.
# Defines the imported target NetCDFC::netcdf and NETCDFC_VERSION,
# NETCDFC_HAS_PARALLEL, NETCDFC_INCLUDE_DIR, NETCDFC_LIBRARY, NETCDFC_FOUND_BY.

find_program(NC_CONFIG nc-config)
find_package(PkgConfig QUIET)

set(_nc_found FALSE)
if(NC_CONFIG)
  execute_process(COMMAND ${NC_CONFIG} --includedir OUTPUT_VARIABLE _nc_inc OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${NC_CONFIG} --libdir OUTPUT_VARIABLE _nc_libdir OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${NC_CONFIG} --version OUTPUT_VARIABLE _nc_ver OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${NC_CONFIG} --has-parallel OUTPUT_VARIABLE _nc_par OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REGEX REPLACE "^netCDF " "" NETCDFC_VERSION "${_nc_ver}")
  set(NETCDFC_HAS_PARALLEL "${_nc_par}")
  set(NETCDFC_FOUND_BY "nc-config")
  find_path(NETCDFC_INCLUDE_DIR netcdf.h HINTS "${_nc_inc}" NO_DEFAULT_PATH)
  find_library(NETCDFC_LIBRARY NAMES netcdf HINTS "${_nc_libdir}" NO_DEFAULT_PATH)
  set(_nc_found TRUE)
endif()

if(NOT _nc_found AND PKG_CONFIG_FOUND)
  foreach(_mod netcdf-mpi netcdf)
    pkg_check_modules(_NCPC QUIET ${_mod})
    if(_NCPC_FOUND)
      pkg_get_variable(_nc_prefix ${_mod} prefix)
      find_path(NETCDFC_INCLUDE_DIR netcdf.h
        HINTS "${_nc_prefix}/include" ${_NCPC_INCLUDE_DIRS} NO_DEFAULT_PATH)
      find_library(NETCDFC_LIBRARY NAMES ${_NCPC_LIBRARIES} HINTS ${_NCPC_LIBRARY_DIRS})
      set(NETCDFC_VERSION "${_NCPC_VERSION}")
      if(EXISTS "${NETCDFC_INCLUDE_DIR}/netcdf_par.h" AND _mod STREQUAL "netcdf-mpi")
        set(NETCDFC_HAS_PARALLEL "yes")
      else()
        set(NETCDFC_HAS_PARALLEL "no")
      endif()
      set(NETCDFC_FOUND_BY "pkg-config ${_mod}")
      set(_nc_extra_inc ${_NCPC_INCLUDE_DIRS})
      break()
    endif()
  endforeach()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NetCDFC
  REQUIRED_VARS NETCDFC_LIBRARY NETCDFC_INCLUDE_DIR
  VERSION_VAR NETCDFC_VERSION)

if(NetCDFC_FOUND AND NOT TARGET NetCDFC::netcdf)
  add_library(NetCDFC::netcdf UNKNOWN IMPORTED)
  set_target_properties(NetCDFC::netcdf PROPERTIES
    IMPORTED_LOCATION "${NETCDFC_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NETCDFC_INCLUDE_DIR};${_nc_extra_inc}")
endif()
