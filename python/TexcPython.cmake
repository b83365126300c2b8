# Whether to build the Python module (docs/python.md). AUTO: when nanobind is found, for the
# Python of the repository's virtual environment (.venv, made by scripts/python-env.sh) unless
# Python_EXECUTABLE says otherwise. The module links the same static libraries as the command
# line, so they are then compiled as position-independent code (the kernels are JIT-generated
# and are not affected).
set(TEXC_PYTHON AUTO CACHE STRING "Build the Python module texc: AUTO (when nanobind is found), ON or OFF")
set_property(CACHE TEXC_PYTHON PROPERTY STRINGS AUTO ON OFF)
set(TEXC_PYTHON_ENABLED OFF)
set(TEXC_PYTHON_REASON "TEXC_PYTHON=OFF")
if(NOT TEXC_PYTHON STREQUAL "OFF" AND NOT TEXC_SANITIZE AND NOT TEXC_FUZZ)
  if(NOT Python_EXECUTABLE AND EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
    set(Python_EXECUTABLE "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  endif()
  find_package(Python 3.9 COMPONENTS Interpreter Development.Module QUIET)
  if(Python_FOUND)
    execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                    OUTPUT_VARIABLE texc_nanobind_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE texc_nanobind_rc ERROR_QUIET)
    if(texc_nanobind_rc EQUAL 0)
      list(APPEND CMAKE_PREFIX_PATH "${texc_nanobind_dir}")
    endif()
    find_package(nanobind CONFIG QUIET)
  endif()
  if(nanobind_FOUND)
    set(TEXC_PYTHON_ENABLED ON)
    set(CMAKE_POSITION_INDEPENDENT_CODE ON)
    message(STATUS "Python module: on (${Python_EXECUTABLE}, nanobind ${nanobind_VERSION})")
  else()
    set(TEXC_PYTHON_REASON "nanobind not found for Python '${Python_EXECUTABLE}' (run scripts/python-env.sh)")
  endif()
elseif(TEXC_SANITIZE OR TEXC_FUZZ)
  set(TEXC_PYTHON_REASON "not built with TEXC_SANITIZE or TEXC_FUZZ")
endif()
if(NOT TEXC_PYTHON_ENABLED)
  if(TEXC_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "TEXC_PYTHON=ON: ${TEXC_PYTHON_REASON}")
  endif()
  message(STATUS "Python module: off (${TEXC_PYTHON_REASON})")
endif()
