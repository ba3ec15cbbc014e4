#!/bin/bash
# Sourced by the scripts/h200_*.sh checks: the Release build on the GPU machine (SQLite runtime
# only there: SQLITE_INCLUDE names a folder with sqlite3.h), its log appended to $1.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSQLite3_INCLUDE_DIR="${SQLITE_INCLUDE:-$PWD/.device/include}" \
  -DSQLite3_LIBRARY=/usr/lib/x86_64-linux-gnu/libsqlite3.so.0 >> "$1" 2>&1 || { tail -20 "$1"; exit 1; }
cmake --build build -j16 >> "$1" 2>&1 || { grep -B2 -A6 "error" "$1" | head -60; exit 1; }
