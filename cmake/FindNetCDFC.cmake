# Find the PARALLEL (MPI) build of netCDF-C, whatever else is installed beside it.
#
# A serial netCDF-C often sits next to the parallel one (Debian: libnetcdf-dev, pulled in by
# NCO and CDO, puts the serial nc-config on PATH and netcdf.h in /usr/include beside
# libnetcdf-mpi-dev). Every candidate is looked at and the first PARALLEL one wins:
#   1. NETCDFC_ROOT (CMake variable or environment): a prefix with include/ and lib/
#   2. every nc-config on PATH, in PATH order (HPC environment modules, source builds)
#   3. pkg-config netcdf-mpi (Debian's parallel build), then netcdf
#   4. Debian's parallel build by its directory, /usr/lib/<multiarch>/netcdf/mpi
# A candidate is parallel when its include directory holds netcdf_par.h and netcdf_meta.h says
# NC_HAS_PARALLEL 1. No parallel candidate is a configure error naming every candidate seen.
#
# Nothing here is cached: every configure (also a re-run in an existing build directory) looks
# again, so a library that changed is picked up, and the configure re-runs by itself when the
# found library's netcdf_meta.h or an nc-config on PATH changes.
# Defines the imported target NetCDFC::netcdf and NETCDFC_VERSION, NETCDFC_HAS_PARALLEL,
# NETCDFC_INCLUDE_DIR, NETCDFC_PAR_HEADER, NETCDFC_LIBRARY, NETCDFC_FOUND_BY.

# Cache entries an earlier version of this module left behind would shadow the search below.
foreach(_v NETCDFC_INCLUDE_DIR NETCDFC_LIBRARY NC_CONFIG)
  unset(${_v} CACHE)
endforeach()

# _nc_check(<how> <include dir> <library> <extra include dirs>): records a candidate; the first
# parallel one becomes the result.
macro(_nc_check how inc lib extra)
  set(_c_par "no")
  set(_c_ver "")
  if(EXISTS "${inc}/netcdf_meta.h")
    file(STRINGS "${inc}/netcdf_meta.h" _c_meta REGEX "^#define[ \t]+NC_(VERSION|HAS_PARALLEL)[ \t]")
    string(REGEX MATCH "NC_VERSION[ \t]+\"([^\"]*)\"" _m "${_c_meta}")
    set(_c_ver "${CMAKE_MATCH_1}")
    if(EXISTS "${inc}/netcdf_par.h" AND _c_meta MATCHES "NC_HAS_PARALLEL[ \t]+1")
      set(_c_par "yes")
    endif()
  endif()
  if(NOT EXISTS "${inc}/netcdf.h" OR NOT EXISTS "${lib}")
    set(_c_par "no")
    list(APPEND _nc_seen "${how}: incomplete (netcdf.h in '${inc}', library '${lib}')")
  elseif(_c_par STREQUAL "yes")
    list(APPEND _nc_seen "${how}: netCDF-C ${_c_ver} parallel (${inc})")
  else()
    list(APPEND _nc_seen "${how}: netCDF-C ${_c_ver} serial (no netcdf_par.h / NC_HAS_PARALLEL in ${inc})")
  endif()
  if(_c_par STREQUAL "yes" AND NOT NETCDFC_INCLUDE_DIR)
    set(NETCDFC_FOUND_BY "${how}")
    set(NETCDFC_INCLUDE_DIR "${inc}")
    set(NETCDFC_PAR_HEADER "${inc}/netcdf_par.h")
    set(NETCDFC_LIBRARY "${lib}")
    set(NETCDFC_VERSION "${_c_ver}")
    set(NETCDFC_HAS_PARALLEL "yes")
    set(_nc_extra_inc ${extra})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${inc}/netcdf_meta.h")
  endif()
endmacro()

# The library file named `name` (libNAME.so or .a) in `dirs`, else in the default paths; uncached.
function(_nc_library out name)
  find_library(_nc_lib_tmp NAMES ${name} HINTS ${ARGN} NO_DEFAULT_PATH)
  if(NOT _nc_lib_tmp)
    find_library(_nc_lib_tmp NAMES ${name})
  endif()
  set(${out} "${_nc_lib_tmp}" PARENT_SCOPE)
  unset(_nc_lib_tmp CACHE)
endfunction()

set(NETCDFC_INCLUDE_DIR "")
set(_nc_seen "")
set(_nc_extra_inc "")

# 1. an explicit prefix
if(NOT NETCDFC_ROOT AND DEFINED ENV{NETCDFC_ROOT})
  set(NETCDFC_ROOT "$ENV{NETCDFC_ROOT}")
endif()
if(NETCDFC_ROOT)
  _nc_library(_lib netcdf "${NETCDFC_ROOT}/lib" "${NETCDFC_ROOT}/lib64")
  _nc_check("NETCDFC_ROOT ${NETCDFC_ROOT}" "${NETCDFC_ROOT}/include" "${_lib}" "")
endif()

# 2. every nc-config on PATH
if(CMAKE_HOST_UNIX)
  string(REPLACE ":" ";" _nc_path "$ENV{PATH}")
else()
  set(_nc_path "$ENV{PATH}")
endif()
set(_nc_configs "")
foreach(_d IN LISTS _nc_path)
  if(_d AND EXISTS "${_d}/nc-config" AND NOT IS_DIRECTORY "${_d}/nc-config")
    get_filename_component(_real "${_d}/nc-config" REALPATH)
    if(NOT _real IN_LIST _nc_configs)
      list(APPEND _nc_configs "${_real}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_d}/nc-config")
      execute_process(COMMAND "${_d}/nc-config" --includedir OUTPUT_VARIABLE _inc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      execute_process(COMMAND "${_d}/nc-config" --libdir OUTPUT_VARIABLE _libdir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      execute_process(COMMAND "${_d}/nc-config" --cflags OUTPUT_VARIABLE _cflags OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      string(REGEX MATCHALL "-I[^ ]+" _extra "${_cflags}")
      string(REPLACE "-I" "" _extra "${_extra}")
      _nc_library(_lib netcdf "${_libdir}")
      _nc_check("nc-config ${_d}/nc-config" "${_inc}" "${_lib}" "${_extra}")
    endif()
  endif()
endforeach()

# 3. pkg-config (called directly: pkg_check_modules caches its answers between configures)
find_program(_nc_pkgconfig_tmp NAMES pkg-config pkgconf)
set(_nc_pkgconfig "${_nc_pkgconfig_tmp}")
unset(_nc_pkgconfig_tmp CACHE)
if(_nc_pkgconfig)
  foreach(_mod netcdf-mpi netcdf)
    execute_process(COMMAND "${_nc_pkgconfig}" --exists ${_mod} RESULT_VARIABLE _rc)
    if(_rc EQUAL 0)
      execute_process(COMMAND "${_nc_pkgconfig}" --variable=prefix ${_mod} OUTPUT_VARIABLE _prefix OUTPUT_STRIP_TRAILING_WHITESPACE)
      execute_process(COMMAND "${_nc_pkgconfig}" --variable=includedir ${_mod} OUTPUT_VARIABLE _incdir OUTPUT_STRIP_TRAILING_WHITESPACE)
      execute_process(COMMAND "${_nc_pkgconfig}" --cflags-only-I ${_mod} OUTPUT_VARIABLE _cflags OUTPUT_STRIP_TRAILING_WHITESPACE)
      execute_process(COMMAND "${_nc_pkgconfig}" --variable=libdir ${_mod} OUTPUT_VARIABLE _libdir OUTPUT_STRIP_TRAILING_WHITESPACE)
      execute_process(COMMAND "${_nc_pkgconfig}" --libs-only-L ${_mod} OUTPUT_VARIABLE _ldirs OUTPUT_STRIP_TRAILING_WHITESPACE)
      execute_process(COMMAND "${_nc_pkgconfig}" --libs-only-l ${_mod} OUTPUT_VARIABLE _lnames OUTPUT_STRIP_TRAILING_WHITESPACE)
      string(REGEX MATCHALL "-I[^ ]+" _extra "${_cflags}")
      string(REPLACE "-I" "" _extra "${_extra}")
      string(REGEX MATCHALL "-L[^ ]+" _ldirs "${_ldirs}")
      string(REPLACE "-L" "" _ldirs "${_ldirs}")
      string(REGEX MATCH "-l(netcdf[^ ]*)" _m "${_lnames}")
      _nc_library(_lib "${CMAKE_MATCH_1}" ${_ldirs} "${_libdir}")
      # Debian's netcdf-mpi.pc says includedir=/usr/include (the serial headers' place, when
      # libnetcdf-dev is installed too): its headers are under the prefix.
      set(_inc "${_incdir}")
      if(EXISTS "${_prefix}/include/netcdf.h")
        set(_inc "${_prefix}/include")
      endif()
      _nc_check("pkg-config ${_mod}" "${_inc}" "${_lib}" "${_extra}")
    endif()
  endforeach()
endif()

# 4. Debian's parallel build by its directory (no pkg-config)
file(GLOB _nc_debian LIST_DIRECTORIES true "/usr/lib/*/netcdf/mpi")
foreach(_d IN LISTS _nc_debian)
  if(EXISTS "${_d}/include/netcdf.h")
    _nc_library(_lib netcdf "${_d}" "${_d}/lib")
    _nc_check("directory ${_d}" "${_d}/include" "${_lib}" "")
  endif()
endforeach()

list(REMOVE_ITEM _nc_extra_inc "/usr/include")   # an implicit directory; first it would shadow ours
list(REMOVE_DUPLICATES _nc_seen)
string(REPLACE ";" "\n     " _nc_seen_text "${_nc_seen}")
if(NOT NETCDFC_INCLUDE_DIR)
  set(_nc_msg "no parallel (MPI) build of netCDF-C found; climio's MPI programs need netcdf_par.h.")
  if(_nc_seen)
    string(APPEND _nc_msg "\n  Looked at:\n     ${_nc_seen_text}")
  endif()
  string(APPEND _nc_msg "\n  Install it (Debian: apt-get install libnetcdf-mpi-dev), load a parallel netCDF-C module "
                        "(its nc-config on PATH), or set NETCDFC_ROOT to its prefix.")
  if(NetCDFC_FIND_REQUIRED)
    message(FATAL_ERROR "${_nc_msg}")
  endif()
  message(STATUS "${_nc_msg}")
  set(NetCDFC_FOUND FALSE)
  return()
endif()

message(STATUS "climio: netCDF-C ${NETCDFC_VERSION} parallel, found by ${NETCDFC_FOUND_BY}\n"
               "     include ${NETCDFC_INCLUDE_DIR} (netcdf_par.h: ${NETCDFC_PAR_HEADER})\n"
               "     library ${NETCDFC_LIBRARY}")
if(_nc_seen MATCHES "serial")
  message(STATUS "climio: netCDF-C builds seen (the first parallel one is used):\n     ${_nc_seen_text}")
endif()
# Say so when the library changed since this build directory's last configure.
set(_nc_signature "${NETCDFC_INCLUDE_DIR}|${NETCDFC_LIBRARY}|${NETCDFC_VERSION}")
if(DEFINED CLIMIO_NETCDFC_SIGNATURE AND NOT CLIMIO_NETCDFC_SIGNATURE STREQUAL _nc_signature)
  message(STATUS "climio: netCDF-C changed since the last configure (was ${CLIMIO_NETCDFC_SIGNATURE}); "
                 "what uses it is rebuilt")
endif()
set(CLIMIO_NETCDFC_SIGNATURE "${_nc_signature}" CACHE INTERNAL "netCDF-C of the last configure")

set(NetCDFC_FOUND TRUE)
set(NETCDFC_FOUND TRUE)
if(NOT TARGET NetCDFC::netcdf)
  add_library(NetCDFC::netcdf UNKNOWN IMPORTED)
endif()
set_target_properties(NetCDFC::netcdf PROPERTIES
  IMPORTED_LOCATION "${NETCDFC_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${NETCDFC_INCLUDE_DIR};${_nc_extra_inc}")
