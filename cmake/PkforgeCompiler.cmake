# Compiler set-up shared by every target: ccache, warnings, CUDA detection.

find_program(PKFORGE_CCACHE ccache)
if(PKFORGE_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER "${PKFORGE_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${PKFORGE_CCACHE}")
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${PKFORGE_CCACHE}")
endif()

# Warnings apply to our own targets only (pkforge_add_library / _executable /
# _test), never to generated protobuf code.
set(PKFORGE_WARNING_FLAGS -Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor
    -Wno-missing-field-initializers)
if(PKFORGE_WARNINGS_AS_ERRORS)
  list(APPEND PKFORGE_WARNING_FLAGS -Werror)
endif()

# CUDA is optional: the cuda backend builds whenever nvcc is found.
set(PKFORGE_HAVE_CUDA OFF)
if(PKFORGE_ENABLE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(PKFORGE_HAVE_CUDA ON)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    message(STATUS "pkforge: CUDA ${CUDAToolkit_VERSION} found, cuda backend enabled")
  else()
    message(STATUS "pkforge: nvcc not found, cuda backend disabled (host backend only)")
  endif()
endif()
