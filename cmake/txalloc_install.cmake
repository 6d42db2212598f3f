# make install: headers, libtxalloc.a, libtxalloc.so, a pkg-config file and a CMake package
# (find_package(txalloc) gives txalloc::txalloc, the static non-overriding library, and
# txalloc::txalloc_shared, the drop-in).
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/txalloc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(install_targets txalloc)
if(TARGET txalloc_shared)
  list(APPEND install_targets txalloc_shared)
endif()
install(TARGETS ${install_targets} EXPORT txallocTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT txallocTargets NAMESPACE txalloc:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/txalloc)

file(WRITE ${PROJECT_BINARY_DIR}/txallocConfig.cmake.in
     "@PACKAGE_INIT@\ninclude(CMakeFindDependencyMacro)\nfind_dependency(Threads)\n"
     "include(\${CMAKE_CURRENT_LIST_DIR}/txallocTargets.cmake)\n")
configure_package_config_file(${PROJECT_BINARY_DIR}/txallocConfig.cmake.in
  ${PROJECT_BINARY_DIR}/txallocConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/txalloc)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/txallocConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/txallocConfig.cmake ${PROJECT_BINARY_DIR}/txallocConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/txalloc)

configure_file(${PROJECT_SOURCE_DIR}/cmake/txalloc.pc.in ${PROJECT_BINARY_DIR}/txalloc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/txalloc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
