#!/usr/bin/env bash
# Installs the Debian packages offcpud needs (build and test), then builds
# into ./build. Idempotent; run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

# golang-go: only for `go tool pprof`, the reference reader of --format pprof's test.
# libc6-dbg: libc's DWARF, for bench/symbolize_bench (and nicer libc frames).
# fio: the random-read load of bench/io_overhead.py.
packages=(build-essential cmake pkg-config clang bpftool libbpf-dev libelf-dev libdw-dev
	  zlib1g-dev libuv1-dev libcjson-dev libsqlite3-dev libsystemd-dev python3 systemd
	  chromium fonts-dejavu-core mariadb-server mariadb-client sysbench golang-go
	  libclang-rt-14-dev libipt-dev libc6-dbg fio)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The group whose members may use offcpuctl (socket_group, allowed_groups).
getent group offcpu >/dev/null || groupadd --system offcpu

# npm packages of the integration tests: playwright-core drives Debian's
# chromium for the flame graph browser test; ajv checks speedscope output.
# (Node itself comes with the machine image; Debian's older node is not used.)
if command -v npm >/dev/null; then
	(cd tests/integration && npm install --no-audit --no-fund --no-package-lock \
		--loglevel=error >/dev/null) || echo "setup: npm install failed; browser tests will skip"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOFFCPU_WERROR=ON >/dev/null
echo "setup: building (log: build/build.log)"
cmake --build build -j"$(nproc)" >build/build.log 2>&1 || { cat build/build.log; exit 1; }
