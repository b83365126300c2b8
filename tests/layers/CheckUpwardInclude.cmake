# ctest script: scripts/check-layers.py fails on a small tree with a deliberate upward include
# (and a source file in no layer), names each one, and passes the same tree once they are gone.
#   cmake -DPYTHON=PATH -DCHECK=scripts/check-layers.py -DOUT=DIR -P CheckUpwardInclude.cmake
file(REMOVE_RECURSE "${OUT}")
# frontend/ sits below compiler/graph/: the include in Program.h goes up, the one in Graph.h down.
file(WRITE "${OUT}/frontend/Program.h" "#pragma once\n#include \"compiler/graph/Graph.h\"\n")
file(WRITE "${OUT}/compiler/graph/Graph.h" "#pragma once\n#include \"frontend/Program.h\"\n")
file(WRITE "${OUT}/compiler/graph/Graph.cpp" "#include \"compiler/graph/Graph.h\"\n#include <vector>\n")
# A folder the layer table does not know.
file(WRITE "${OUT}/compiler/misc/Odd.cpp" "#include \"frontend/Program.h\"\n")
# Tests may include any layer.
file(WRITE "${OUT}/tests/unit/graph/GraphTests.cpp" "#include \"compiler/graph/Graph.h\"\n")

execute_process(COMMAND "${PYTHON}" "${CHECK}" --root "${OUT}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "check-layers.py exited ${rc} on the fixture, expected 1:\n${out}${err}")
endif()
set(expected
  "compiler/misc/Odd.cpp: in no layer (add its folder to the table in scripts/check-layers.py)\n"
  "frontend/Program.h:2: upward include of \"compiler/graph/Graph.h\" (layer frontend includes layer graph above it)\n")
string(CONCAT expected ${expected})
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "check-layers.py reported, on the fixture:\n${out}\nexpected exactly:\n${expected}")
endif()

# Without the upward include and the stray folder, the same tree passes.
file(WRITE "${OUT}/frontend/Program.h" "#pragma once\n")
file(REMOVE_RECURSE "${OUT}/compiler/misc")
execute_process(COMMAND "${PYTHON}" "${CHECK}" --root "${OUT}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check-layers.py exited ${rc} on the fixed fixture, expected 0:\n${out}${err}")
endif()
