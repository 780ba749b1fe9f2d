# Generates a C++ file embedding every problem's prompt.md and
# reference_host.cc (run at build time by kernels/CMakeLists.txt).
# Inputs: PROBLEMS (list), SRC (kernels/problems), OUT (file to write).
string(REPLACE "," ";" PROBLEMS "${PROBLEMS}")
set(_body "#include <string_view>\nnamespace pkforge::kernels {\n")
set(_p "std::string_view EmbeddedPrompt(std::string_view n) {\n")
set(_r "std::string_view EmbeddedReference(std::string_view n) {\n")
foreach(p ${PROBLEMS})
  file(READ ${SRC}/${p}/prompt.md _prompt)
  file(READ ${SRC}/${p}/reference_host.cc _ref)
  string(APPEND _p "  if (n == \"${p}\") return R\"PKFEMBED(${_prompt})PKFEMBED\";\n")
  string(APPEND _r "  if (n == \"${p}\") return R\"PKFEMBED(${_ref})PKFEMBED\";\n")
endforeach()
string(APPEND _p "  return {};\n}\n")
string(APPEND _r "  return {};\n}\n")
file(WRITE ${OUT}.tmp "${_body}${_p}${_r}}  // namespace pkforge::kernels\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
