# vs_hip.cmake - how the AMD build (-DVS_GPU=AMD) compiles .hip sources, in one place.
#
# Two toolchains (cache variable VS_HIP_TOOLCHAIN, AUTO by default):
#   ROCM   CMake's HIP language: a ROCm install (/opt/rocm, ROCm 6 or later for gfx942), its clang,
#          its device libraries. What an MI300X machine uses.
#   CLANG  Debian 12's HIP 5.2 runtime (libamdhip64-dev) with Debian's clang++-19: CMake's HIP
#          language cannot be enabled there (CMake finds no ROCm root: Debian keeps hip-lang's
#          package under /usr/lib/<triplet>/cmake, and its device libraries, rocm-device-libs 5.2,
#          have no gfx942 bitcode). Each .hip source is compiled by a custom command as
#          `clang++-19 -x hip --offload-arch=<arch> -nogpulib -nogpuinc`, exactly as the gfx942
#          gate compiles it (no device library: hip_compat.h's vs_* helpers instead of threadIdx,
#          __syncthreads, expf), and the host objects link against libamdhip64. The binary links
#          and runs; on a machine without an AMD GPU the runtime reports no device. Needs
#          clang-tools-19 (clang-offload-bundler) besides clang-19 and lld-19.
#   AUTO   ROCM when check_language(HIP) finds a usable HIP compiler, else CLANG when clang++-19
#          and /usr/include/hip/hip_runtime.h are there, else a configure error naming both.
#
# vs_hip_add_sources(TARGET SOURCES src... INCLUDES dir...) adds the sources to TARGET compiled
# for VS_HIP_ARCH (gfx942 unless CMAKE_HIP_ARCHITECTURES says otherwise) and links the HIP runtime.

set(VS_HIP_TOOLCHAIN "AUTO" CACHE STRING "AMD build's HIP toolchain: AUTO, ROCM or CLANG")
set_property(CACHE VS_HIP_TOOLCHAIN PROPERTY STRINGS AUTO ROCM CLANG)
if(DEFINED CMAKE_HIP_ARCHITECTURES)
  set(VS_HIP_ARCH ${CMAKE_HIP_ARCHITECTURES})
else()
  set(VS_HIP_ARCH gfx942)
endif()

if(NOT DEFINED VS_HIP_TOOLCHAIN_RESOLVED)
  set(_vs_tc ${VS_HIP_TOOLCHAIN})
  if(_vs_tc STREQUAL "AUTO")
    include(CheckLanguage)
    check_language(HIP)
    if(CMAKE_HIP_COMPILER)
      set(_vs_tc ROCM)
    else()
      set(_vs_tc CLANG)
    endif()
  endif()
  if(_vs_tc STREQUAL "CLANG")
    find_program(VS_HIP_CLANGXX NAMES clang++-19)
    find_program(VS_HIP_BUNDLER NAMES clang-offload-bundler-19 clang-offload-bundler
                 HINTS /usr/lib/llvm-19/bin)
    find_library(VS_HIP_AMDHIP64 NAMES amdhip64)
    if(NOT VS_HIP_CLANGXX OR NOT VS_HIP_BUNDLER OR NOT VS_HIP_AMDHIP64 OR NOT EXISTS /usr/include/hip/hip_runtime.h)
      message(FATAL_ERROR "VS_GPU=AMD: no HIP toolchain: CMake's HIP language found no ROCm install, and the "
              "Debian one needs clang++-19 ('${VS_HIP_CLANGXX}'), clang-offload-bundler (clang-tools-19: "
              "'${VS_HIP_BUNDLER}'), libamdhip64 ('${VS_HIP_AMDHIP64}') and /usr/include/hip "
              "(run tools/install-deps, or install ROCm)")
    endif()
    execute_process(COMMAND ${VS_HIP_CLANGXX} -print-resource-dir OUTPUT_VARIABLE VS_HIP_RESOURCE_DIR
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    # The HIP runtime calls the code makes beyond HIP 5.0's core, checked in libamdhip64 itself (C
    # linkage): the virtual memory calls have a fallback (VS_HIP_NO_VMM: sparse buffers refused, the
    # old task layout; harness/gpu/gpu_device.hip), the graph calls have none.
    include(CheckLibraryExists)
    set(VS_HIP_NO_VMM OFF)
    foreach(fn hipMemCreate hipMemAddressReserve hipMemAddressFree hipMemMap hipMemUnmap hipMemSetAccess
               hipMemRelease hipMemGetAllocationGranularity)
      check_library_exists(${VS_HIP_AMDHIP64} ${fn} "" VS_HIP_HAS_${fn})
      if(NOT VS_HIP_HAS_${fn})
        message(WARNING "${VS_HIP_AMDHIP64} lacks ${fn}: built with VS_HIP_NO_VMM (sparse buffers refused; "
                "page-offset tasks take the old layout, docs/DESIGN.md)")
        set(VS_HIP_NO_VMM ON)
      endif()
    endforeach()
    foreach(fn hipStreamBeginCapture hipStreamEndCapture hipGraphInstantiateWithFlags hipGraphLaunch)
      check_library_exists(${VS_HIP_AMDHIP64} ${fn} "" VS_HIP_HAS_${fn})
      if(NOT VS_HIP_HAS_${fn})
        message(FATAL_ERROR "${VS_HIP_AMDHIP64} lacks ${fn}, which graph-replay timing needs (no fallback)")
      endif()
    endforeach()
  elseif(NOT _vs_tc STREQUAL "ROCM")
    message(FATAL_ERROR "VS_HIP_TOOLCHAIN is '${VS_HIP_TOOLCHAIN}', expected AUTO, ROCM or CLANG")
  endif()
  set(VS_HIP_TOOLCHAIN_RESOLVED ${_vs_tc})
  message(STATUS "validate_skill HIP toolchain: ${VS_HIP_TOOLCHAIN_RESOLVED} (${VS_HIP_ARCH})")
endif()
if(VS_HIP_TOOLCHAIN_RESOLVED STREQUAL "ROCM")
  # enable_language must run at file scope, in the directory common to every target that uses HIP:
  # here (this file is included by the top level), not in vs_hip_add_sources.
  if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
    set(CMAKE_HIP_ARCHITECTURES ${VS_HIP_ARCH})
  endif()
  enable_language(HIP)
  find_package(hip REQUIRED)
endif()

# vs_hip_add_sources(TARGET SOURCES src... INCLUDES dir...)
function(vs_hip_add_sources target)
  cmake_parse_arguments(ARG "" "" "SOURCES;INCLUDES" ${ARGN})
  if(VS_HIP_TOOLCHAIN_RESOLVED STREQUAL "ROCM")
    set_source_files_properties(${ARG_SOURCES} PROPERTIES LANGUAGE HIP)
    target_sources(${target} PRIVATE ${ARG_SOURCES})
    target_include_directories(${target} PRIVATE ${ARG_INCLUDES})
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:HIP>:-O3 -Wall -Wextra>)
    target_link_libraries(${target} PUBLIC hip::host stdc++)
    return()
  endif()
  set(incs)
  foreach(d ${ARG_INCLUDES})
    list(APPEND incs -I${d})
  endforeach()
  set(defs)
  if(VS_HIP_NO_VMM)
    set(defs -DVS_HIP_NO_VMM)
  endif()
  foreach(src ${ARG_SOURCES})
    get_filename_component(name ${src} NAME_WE)
    set(obj ${CMAKE_CURRENT_BINARY_DIR}/${target}_${name}.hip.o)
    add_custom_command(OUTPUT ${obj}
      COMMAND ${VS_HIP_CLANGXX} -x hip --offload-arch=${VS_HIP_ARCH} -nogpulib -nogpuinc -D__HIP_PLATFORM_AMD__
              -isystem ${VS_HIP_RESOURCE_DIR} -std=c++17 -O3 -fPIC -Wall -Wextra ${defs} ${incs}
              -MD -MF ${obj}.d -c ${src} -o ${obj}
      DEPENDS ${src} DEPFILE ${obj}.d
      COMMENT "HIP (clang++-19, ${VS_HIP_ARCH}, no device library) ${name}.hip" VERBATIM)
    target_sources(${target} PRIVATE ${obj})
  endforeach()
  # A library of these objects alone has no language of its own: the C linker links it (and the
  # C++ runtime the host stubs need).
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
  target_link_libraries(${target} PUBLIC ${VS_HIP_AMDHIP64} stdc++)
endfunction()
