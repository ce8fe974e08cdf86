# cmake -DBUILD_DIR=... -DPREFIX=... -DSITE=<relative site dir> -DPYTHON=... -P install_check.cmake
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${err}")
endif()
if(NOT EXISTS ${PREFIX}/${SITE}/vkml/__init__.py)
  message(FATAL_ERROR "the package is not in ${PREFIX}/${SITE}/vkml")
endif()
# From another directory, with nothing of the build tree on the path.
execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${PREFIX}/${SITE} PYTHONDONTWRITEBYTECODE=1
                        ${PYTHON} -c "import vkml; assert vkml.__file__.startswith('${PREFIX}/'), vkml.__file__; print(vkml.__file__, vkml.device_count())"
                WORKING_DIRECTORY ${PREFIX} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import vkml from ${PREFIX}/${SITE} failed:\n${out}${err}")
endif()
message(STATUS "installed and imported: ${out}")
file(REMOVE_RECURSE ${PREFIX})
