# Run by cmake --install (install(SCRIPT) in CMakeLists.txt): copies python/fusedtune into the
# Python folder for the install prefix and records there, in _library_path.txt, the library's
# path relative to the package, so that a moved prefix still finds its library.
# Set before it runs: FT_PY_SRC, FT_PY_DIR (FUSEDTUNE_PYTHON_DIR), FT_PY_EXE, FT_LIBDIR,
# FT_LIBNAME, FT_BUILD_DIR.
set(prefix "${CMAKE_INSTALL_PREFIX}")
set(on_path "")
if(FT_PY_DIR)
  if(IS_ABSOLUTE "${FT_PY_DIR}")
    set(dest "${FT_PY_DIR}")
  else()
    set(dest "${prefix}/${FT_PY_DIR}")
  endif()
else()
  # The folder of sys.path under the prefix (Debian: lib/python3/dist-packages), else the
  # prefix's site-packages by sysconfig (lib/python3.X/site-packages).
  set(rc 1)
  if(FT_PY_EXE)
    execute_process(
      COMMAND "${FT_PY_EXE}" -c [=[
import os, sys, sysconfig
prefix = os.path.realpath(sys.argv[1])
for p in sys.path:
    rp = os.path.realpath(p)
    if os.path.basename(rp) in ("site-packages", "dist-packages") and rp.startswith(prefix + os.sep):
        print(os.path.relpath(rp, prefix)); print("on sys.path"); break
else:
    path = sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
    print(os.path.relpath(path, prefix)); print("")
]=] "${prefix}"
      OUTPUT_VARIABLE out RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  if(rc EQUAL 0 AND out)
    string(REPLACE "\n" ";" out "${out}")
    list(GET out 0 rel)
    list(LENGTH out n)
    if(n GREATER 1)
      list(GET out 1 on_path)
    endif()
  else()
    set(rel "lib/python3/dist-packages")
  endif()
  set(dest "${prefix}/${rel}")
endif()

if(IS_ABSOLUTE "${FT_LIBDIR}")
  set(lib "${FT_LIBDIR}/${FT_LIBNAME}")
else()
  set(lib "${prefix}/${FT_LIBDIR}/${FT_LIBNAME}")
endif()
file(RELATIVE_PATH lib_rel "${dest}/fusedtune" "${lib}")
file(WRITE "${FT_BUILD_DIR}/python_install/_library_path.txt" "${lib_rel}\n")
file(INSTALL DESTINATION "${dest}" TYPE DIRECTORY FILES "${FT_PY_SRC}"
     FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
file(INSTALL DESTINATION "${dest}/fusedtune" TYPE FILE FILES "${FT_BUILD_DIR}/python_install/_library_path.txt")
if(on_path)
  message(STATUS "fusedtune: Python package installed in ${dest}/fusedtune (on ${FT_PY_EXE}'s sys.path), "
                 "finding the library at ${lib_rel} from there")
else()
  message(STATUS "fusedtune: Python package installed in ${dest}/fusedtune, finding the library at ${lib_rel} "
                 "from there; ${dest} is not on python3's sys.path: add it to PYTHONPATH")
endif()
