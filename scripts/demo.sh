#!/usr/bin/env bash
# Sets up (packages, build), starts offcpud on its default socket, runs the
# ground-truth workload and prints a capture of it as folded stacks.
# Run as root. The daemon keeps running afterwards; stop it with
#   kill $(cat /run/offcpud/offcpud.pid)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

sock=/run/offcpud/offcpud.sock
ctl=(build/ctl/offcpuctl --socket "$sock")
if ! "${ctl[@]}" status >/dev/null 2>&1; then
	mkdir -p /run/offcpud
	nohup build/daemon/offcpud --socket "$sock" >/run/offcpud/offcpud.log 2>&1 &
	echo $! >/run/offcpud/offcpud.pid
	for _ in $(seq 100); do "${ctl[@]}" status >/dev/null 2>&1 && break; sleep 0.1; done
fi
"${ctl[@]}" status

# The workload waits for a line on stdin, so the capture sees all of it.
coproc WORKLOAD { build/tests/offcpu_workload --wait-go; }
workload_pid=$WORKLOAD_PID # bash unsets it when the coprocess ends
read -r _ pid <&"${WORKLOAD[0]}"
echo "demo: capturing the workload (pid $pid) for 3 seconds" >&2
"${ctl[@]}" capture --pid "$pid" --seconds 3 -o /tmp/offcpud-demo.folded &
capture=$!
for _ in $(seq 100); do
	"${ctl[@]}" --json status | grep -q '"captures_running":[1-9]' && break
	sleep 0.05
done
echo go >&"${WORKLOAD[1]}"
wait "$capture"
wait "$workload_pid" || true
cat /tmp/offcpud-demo.folded
echo "demo: folded stacks also in /tmp/offcpud-demo.folded (flamegraph.pl-ready)" >&2
