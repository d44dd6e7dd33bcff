#!/usr/bin/env bash
# Installs the Debian packages offcpud needs to build and run, creates its
# group, then builds into ./build. What only the tests need is installed by
# scripts/setup-tests.sh. Idempotent; run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

# python3: CMake's configure step looks for it (the integration tests' runner).
# libmicrohttpd-dev: offcpuctl serve's HTTP server.
# libprotobuf-c-dev, protobuf-c-compiler: the Pyroscope and OTLP push messages (proto/push).
# libcurl4-openssl-dev: the pusher's HTTP and TLS (daemon/push).
packages=(build-essential cmake pkg-config clang bpftool libbpf-dev libelf-dev libdw-dev
	  zlib1g-dev libuv1-dev libcjson-dev libsqlite3-dev libsystemd-dev libipt-dev python3
	  libmicrohttpd-dev libprotobuf-c-dev protobuf-c-compiler libcurl4-openssl-dev)
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

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOFFCPU_WERROR=ON >/dev/null
echo "setup: building (log: build/build.log)"
cmake --build build -j"$(nproc)" >build/build.log 2>&1 || { cat build/build.log; exit 1; }
