#!/usr/bin/env bash
# Installs the Debian packages Sonde needs, when they are missing and we are root.
# Sourced by scripts/test.sh and scripts/demo.sh.
SONDE_PACKAGES=(
  meson ninja-build pkg-config cmake g++ clang python3 python3-numpy
  libcmocka-dev libzstd-dev zstd libffi-dev libcli11-dev nlohmann-json3-dev
  libzip-dev zlib1g-dev liblz4-dev
  libdw-dev libelf-dev doxygen abigail-tools clang-format groff-base man-db
  liblttng-ust-dev lttng-tools uftrace ltrace valgrind
  chromium nodejs
  openmpi-bin libopenmpi-dev
)

sonde_install_deps() {
  local missing=()
  for p in "${SONDE_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "missing Debian packages (run as root to install them): ${missing[*]}" >&2
    return 0
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# npm packages, into node_modules/ at the source root (git-ignored), installed together in one
# npm call (a later `npm install --no-save` of one package would remove the other):
#   speedscope  the flame-graph viewer that the browser tests of tests/report load exports into;
#   koffi       the FFI library the Node package (bindings/node) is built on.
# Skipped when both are present; without npm the tests that need them are skipped (exit 77).
SONDE_NPM_PACKAGES=(speedscope@1.25.0 koffi@2.16.3)

sonde_install_npm() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  [ -f "$root/node_modules/speedscope/dist/release/index.html" ] &&
    [ -f "$root/node_modules/koffi/package.json" ] && return 0
  if ! command -v npm >/dev/null && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null || true
  fi
  if ! command -v npm >/dev/null; then
    echo "npm is missing: the speedscope browser test and the Node binding test will be skipped" >&2
    return 0
  fi
  echo "installing ${SONDE_NPM_PACKAGES[*]} into $root/node_modules"
  npm install --prefix "$root" --no-save --no-package-lock --no-audit --no-fund "${SONDE_NPM_PACKAGES[@]}" >/dev/null
}
