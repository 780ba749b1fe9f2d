# Generates a C++ header embedding the search agent's kernel template files
# (run at build time by agent/CMakeLists.txt, like the problems' prompts).
# Inputs: SRC (agent/templates), FILES (comma-separated, relative to SRC),
# OUT (header to write).
string(REPLACE "," ";" FILES "${FILES}")
set(_body "// Generated from agent/templates/ by agent/templates/embed.cmake: do not edit.\n")
string(APPEND _body "#pragma once\n#include <string_view>\nnamespace pkforge::agent {\n")
string(APPEND _body "struct KernelTemplateFile {\n  std::string_view name;  // path under agent/templates/\n  std::string_view text;\n};\n")
string(APPEND _body "inline constexpr KernelTemplateFile kKernelTemplateFiles[] = {\n")
foreach(f ${FILES})
  file(READ ${SRC}/${f} _text)
  string(APPEND _body "    {\"${f}\", R\"PKFTPL(${_text})PKFTPL\"},\n")
endforeach()
string(APPEND _body "};\n}  // namespace pkforge::agent\n")
file(WRITE ${OUT}.tmp "${_body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
