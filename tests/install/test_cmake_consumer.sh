#!/usr/bin/env bash
# A CMake project finds an installed Sonde with find_package(sonde 1.1 REQUIRED), links
# sonde::sonde and runs; then the same after the prefix is moved (the package file locates
# everything relative to itself).
set -euo pipefail
build=$1 src=$2
command -v cmake >/dev/null || { echo "SKIP: cmake is not installed"; exit 77; }
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
cfg=$(find "$dest" -name sondeConfig.cmake | head -n1)
[ -n "$cfg" ] || { echo "sondeConfig.cmake was not installed"; exit 1; }
[ -f "$(dirname "$cfg")/sondeConfigVersion.cmake" ] || { echo "sondeConfigVersion.cmake was not installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$(find "$dest" -name sonde.pc | head -n1)")
mkdir "$dest/consumer"
cp "$src/examples/consumer.c" "$dest/consumer/"
cat > "$dest/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.13)
project(sonde_consumer C)
find_package(sonde 1.1 REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE sonde::sonde)
CMAKE
run_consumer() {  # the prefix to find Sonde in
  rm -rf "$dest/b"
  cmake -S "$dest/consumer" -B "$dest/b" -DCMAKE_PREFIX_PATH="$1" >"$dest/cmake.log" 2>&1 \
    || { cat "$dest/cmake.log"; echo "cmake configure failed with prefix $1"; exit 1; }
  cmake --build "$dest/b" >"$dest/build.log" 2>&1 || { cat "$dest/build.log"; echo "cmake build failed"; exit 1; }
  "$dest/b/consumer" | grep -q "buffer stats" || { echo "the CMake-built consumer did not run"; exit 1; }
}
run_consumer "$dest$prefix"
# A version the package does not satisfy is refused.
sed -i 's/find_package(sonde 1.1 REQUIRED)/find_package(sonde 2.0 REQUIRED)/' "$dest/consumer/CMakeLists.txt"
if cmake -S "$dest/consumer" -B "$dest/b2" -DCMAKE_PREFIX_PATH="$dest$prefix" >/dev/null 2>&1; then
  echo "find_package(sonde 2.0) accepted a 1.x Sonde"; exit 1
fi
sed -i 's/find_package(sonde 2.0 REQUIRED)/find_package(sonde 1.1 REQUIRED)/' "$dest/consumer/CMakeLists.txt"
mv "$dest$prefix" "$dest/moved"
run_consumer "$dest/moved"
echo "3 passed, 0 failed"
