# Fails when docs/ops.md differs from `vkml ops --markdown`; says how to regenerate it.
execute_process(COMMAND ${TOOL} ops --markdown OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "vkml ops --markdown failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${PAGE} RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  message(FATAL_ERROR "docs/ops.md is out of date: regenerate it with `build/bin/vkml ops --markdown > docs/ops.md`")
endif()
