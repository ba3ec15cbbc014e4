#!/bin/bash
# Usage: . scripts/gpu/build.sh LOGFILE   (sourced from the repository root by the other scripts here)
# The Release build on the GPU machine, its log appended to LOGFILE. That machine has the SQLite
# runtime only: SQLITE_INCLUDE names a folder with sqlite3.h (default .device/include).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSQLite3_INCLUDE_DIR="${SQLITE_INCLUDE:-$PWD/.device/include}" \
  -DSQLite3_LIBRARY=/usr/lib/x86_64-linux-gnu/libsqlite3.so.0 >> "$1" 2>&1 || { tail -20 "$1"; exit 1; }
cmake --build build -j16 >> "$1" 2>&1 || { grep -B2 -A6 "error" "$1" | head -60; exit 1; }
