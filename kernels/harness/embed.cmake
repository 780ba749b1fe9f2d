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
  # A reference that is another problem's (`#include "../<other>/reference_host.cc"`,
  # e.g. allgather_gemm_at) is served with that file's text in place of the
  # include, so the agent sees the code it must beat.
  string(REGEX MATCHALL "#include \"\\.\\./[a-z0-9_]+/reference_host\\.cc\"" _incs "${_ref}")
  foreach(_inc IN LISTS _incs)
    string(REGEX REPLACE "^#include \"\\.\\./([a-z0-9_]+)/.*$" "\\1" _other "${_inc}")
    file(READ ${SRC}/${_other}/reference_host.cc _other_text)
    string(REPLACE "${_inc}" "// ---- ../${_other}/reference_host.cc ----\n${_other_text}" _ref "${_ref}")
  endforeach()
  string(APPEND _p "  if (n == \"${p}\") return R\"PKFEMBED(${_prompt})PKFEMBED\";\n")
  string(APPEND _r "  if (n == \"${p}\") return R\"PKFEMBED(${_ref})PKFEMBED\";\n")
endforeach()
string(APPEND _p "  return {};\n}\n")
string(APPEND _r "  return {};\n}\n")
file(WRITE ${OUT}.tmp "${_body}${_p}${_r}}  // namespace pkforge::kernels\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
