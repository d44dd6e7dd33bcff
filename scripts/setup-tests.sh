#!/usr/bin/env bash
# Installs what the tests, fuzzers and benchmarks need beyond scripts/setup.sh
# (which builds and runs offcpud): Debian packages and the npm packages of
# the browser tests. Idempotent; run as root. scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium, fonts-dejavu-core: the flame graph browser tests.
# mariadb-server, mariadb-client, sysbench: the MariaDB end-to-end test.
# golang-go: only for `go tool pprof`, the reference reader of --format pprof's test
# and of the Pyroscope push request's profiles.
# libc6-dbg: libc's DWARF, for bench/symbolize_bench and the symbol tests' libc frames.
# fio: the random-read load of bench/io_overhead.py.
# libclang-rt-14-dev: libFuzzer and the sanitizers (scripts/fuzz.sh, build-asan).
# systemd: systemd-analyze verify of the units (test_systemd, the package test).
# debhelper, lintian: the Debian package test (scripts/test-package.sh).
# bpftrace: the reference tracer of bench/overhead.py.
# protobuf-compiler: `protoc --decode`, the reference reader of the Pyroscope push request.
packages=(chromium fonts-dejavu-core mariadb-server mariadb-client sysbench golang-go
	  libclang-rt-14-dev libc6-dbg fio systemd debhelper lintian bpftrace protobuf-compiler)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup-tests: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages of the integration tests: playwright-core drives Debian's
# chromium for the flame graph browser test; ajv checks speedscope output.
# (Node itself comes with the machine image; Debian's older node is not used.)
if command -v npm >/dev/null; then
	(cd tests/integration && npm install --no-audit --no-fund --no-package-lock \
		--loglevel=error >/dev/null) || echo "setup-tests: npm install failed; browser tests will skip"
fi
