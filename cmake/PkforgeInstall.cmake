# `cmake --install` rules and the Debian package (CPack). Included last from
# the top-level CMakeLists.txt, when every target exists.
#
# Layout under the prefix (/usr in the .deb, /usr/local by default):
#   bin/pkforge, pkforge-orchestrator, pkforge-executor, pkforge-worker,
#       pkforge-sandbox, pkforge-cuda-rank (when CUDA was built)
#       The executor finds the worker next to itself and the candidate header
#       at <bin>/../include (executor/config.cc), so the layout is relocatable.
#   include/pkforge/candidate.h          the ABI every candidate compiles against
#   share/pkforge/config/*.json          sample configs (copy to /etc/pkforge/)
#   lib/systemd/system/*.service         systemd units
#   share/doc/pkforge/                   README, docs, deploy walkthrough
#
# Operators: `cmake --build build && cmake --install build --prefix /opt/pkforge --strip`,
# or `cd build && cpack -G DEB` for a .deb (dependencies from dpkg-shlibdeps).
include(GNUInstallDirs)

set(_pkforge_programs pkforge pkforge-orchestrator pkforge-executor pkforge-worker pkforge-sandbox)
if(TARGET pkforge-cuda-rank)
  list(APPEND _pkforge_programs pkforge-cuda-rank)
endif()
install(TARGETS ${_pkforge_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT pkforge)
install(FILES ${PROJECT_SOURCE_DIR}/kernels/include/pkforge/candidate.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pkforge COMPONENT pkforge)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/config/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/pkforge/config COMPONENT pkforge
        FILES_MATCHING PATTERN "*.json" PATTERN "*.env")
# Units go where systemd looks: /usr/lib/systemd/system in the .deb and
# /usr/local/lib/systemd/system by default (both on systemd's search path).
# Their ExecStart names /usr/bin; other prefixes override it with a drop-in
# (deploy/README.md).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/systemd/
        DESTINATION lib/systemd/system COMPONENT pkforge FILES_MATCHING PATTERN "*.service")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT pkforge)
install(FILES ${PROJECT_SOURCE_DIR}/kernels/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT pkforge RENAME kernels-protocol.md)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT pkforge RENAME deploy.md)
install(FILES ${PROJECT_SOURCE_DIR}/sandbox/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT pkforge RENAME sandbox.md)
install(FILES ${PROJECT_SOURCE_DIR}/storage/schema.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT pkforge)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT pkforge FILES_MATCHING PATTERN "*.md")

set(CPACK_PACKAGE_NAME pkforge)
set(CPACK_PACKAGE_VENDOR "pkforge")
set(CPACK_PACKAGE_CONTACT "pkforge maintainers <pkforge@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "LLM agents optimizing multi-GPU kernels: orchestrator, executor, sandboxed harness")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)               # RelWithDebInfo binaries are ~50 MB each with debug info
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # pkforge_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip) # xz costs minutes on CI's 2 cores
# Library dependencies come from dpkg-shlibdeps (gRPC, protobuf, abseil, ...).
# libcudart/libnccl/libcublas of pkforge-cuda-rank are NVIDIA's, not Debian's:
# dpkg-shlibdeps skips them (--ignore-missing-info) and the GPU host provides
# them (deploy/README.md). bubblewrap is the executor's sandbox; g++ compiles
# host-backend candidates.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "bubblewrap, g++")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "sqlite3")
include(CPack)
