#!/bin/bash
# flame_bench: times the flame graph path on a generated folded file (by
# default 200000 lines of ~26 frames, names of 10 to 30 characters: about
# 100 MB, sorted as offcpud and stackcollapse write them) and prints one
# JSON line: wall time and peak RSS (GNU time's, as /usr/bin/time -v shows
# them) of
#   - flame_render (the library alone: parse, merge, then SVG; and again with
#     speedscope JSON),
#   - offcpuctl flamegraph FILE -o out.svg, when the build has that command,
#   - flamegraph.pl, when FLAMEGRAPH_PL names it (or with --baseline, from
#     PATH): about a minute.
# With flamegraph.pl, "ratio" holds its time and memory over offcpuctl's in
# this same run; targets: at least 20 times faster, at most a tenth of the
# memory. "speed" compares wall times, "cpu" CPU times (user + system),
# which a busy shared machine disturbs less; "ok" says whether the
# better of the two and the memory meet them.
# "tree_mb" is where most of offcpuctl's memory goes: 40 bytes per merged
# frame.
#
# usage: bench/flame_bench.sh [--lines N] [--names MIN:MAX] [--unsorted]
#                             [--baseline] [--keep DIR]
# BUILD_DIR (default build/) supplies the binaries; missing ones are
# compiled from source with ${CC:-cc} -O2.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
lines=200000
names=10:30
sorted=true
baseline=false
[[ -n ${FLAMEGRAPH_PL:-} ]] && baseline=true
keep=

while (($#)); do
	case $1 in
	--lines) lines=$2; shift ;;
	--names) names=$2; shift ;;
	--unsorted) sorted=false ;;
	--baseline) baseline=true ;;
	--keep) keep=$2; shift ;;
	*) echo "usage: $0 [--lines N] [--names MIN:MAX] [--unsorted] [--baseline] [--keep DIR]" >&2
	   exit 2 ;;
	esac
	shift
done
[[ -x /usr/bin/time ]] || { echo "flame_bench: needs GNU time (apt-get install time)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -n $keep ]] && mkdir -p "$keep"

# Binaries: from the build, else compiled here.
gen=$build/bench/flame_gen
render=$build/bench/flame_render
if [[ ! -x $gen ]]; then
	gen=$work/flame_gen
	${CC:-cc} -std=gnu11 -O2 -o "$gen" "$root/bench/flame_gen.c"
fi
if [[ ! -x $render ]]; then
	render=$work/flame_render
	svg=()
	# The SVG renderer needs flame_js.c, which CMake generates.
	if [[ -f $root/render/flame_svg.c && -f $build/render/flame_js.c ]]; then
		svg=("$root/render/flame_svg.c" "$build/render/flame_js.c")
	fi
	${CC:-cc} -std=gnu11 -O2 -I"$root/render" -I"$root/common" -o "$render" "$root/bench/flame_render.c" \
		"$root/render/flame.c" "$root/render/flame_speedscope.c" "${svg[@]}" -lm
fi
ctl=$build/ctl/offcpuctl
if [[ ! -x $ctl ]] || ! "$ctl" help 2>&1 | grep -q '^  flamegraph'; then
	ctl=
fi

input=$work/stacks.folded
if $sorted; then
	"$gen" -n "$lines" -l "$names" | LC_ALL=C sort >"$input"
else
	"$gen" -n "$lines" -l "$names" >"$input"
fi
bytes=$(stat -c %s "$input")

# run NAME CMD...: runs CMD under GNU time; prints
# {"wall_s":..,"max_rss_mb":..,"cpu_s":.. (user + system)} and leaves
# CMD's standard error in $work/NAME.err.
run() {
	local name=$1
	shift
	if ! /usr/bin/time -f '%e %M %U %S' -o "$work/$name.time" "$@" 2>"$work/$name.err" >/dev/null; then
		echo "flame_bench: $name failed:" >&2
		cat "$work/$name.err" >&2
		exit 1
	fi
	read -r wall rss user sys <"$work/$name.time"
	awk -v w="$wall" -v r="$rss" -v u="$user" -v s="$sys" 'BEGIN {
		printf "{\"wall_s\":%.2f,\"max_rss_mb\":%.1f,\"cpu_s\":%.2f", w, r / 1024, u + s }'
}

# flame_render prints its phases and the tree's size as JSON on stderr.
phases() {
	local line
	line=$(grep '^{' "$work/$1.err" | tail -1)
	printf ',"detail":%s}' "${line:-null}"
}

out=$work
[[ -n $keep ]] && out=$keep
json=$(awk -v l="$lines" -v b="$bytes" -v s="$sorted" \
	'BEGIN { printf "{\"bench\":\"flame\",\"lines\":%d,\"file_mb\":%.1f,\"sorted\":%s", l, b / 1048576, s }')
json+=',"flame_render":'$(run render "$render" -o "$out/out.svg" "$input")$(phases render)
json+=',"flame_render_speedscope":'$(run speedscope "$render" -j -o "$out/out.speedscope.json" \
	"$input")$(phases speedscope)
nodes=$(grep -o '"nodes":[0-9]*' "$work/render.err" | tail -1 | cut -d: -f2)
json+=',"tree_mb":'$(awk -v n="${nodes:-0}" 'BEGIN { printf "%.1f", n * 40 / 1048576 }')
if [[ -n $ctl ]]; then
	ctl_json=$(run ctl "$ctl" flamegraph "$input" -o "$out/offcpuctl.svg")
	json+=',"offcpuctl":'$ctl_json'}'
else
	json+=',"offcpuctl":null'
fi
if $baseline; then
	pl=${FLAMEGRAPH_PL:-$(command -v flamegraph.pl || command -v flamegraph || true)}
	if [[ -n $pl ]]; then
		pl_json=$(run baseline perl "$pl" "$input")
		json+=',"flamegraph_pl":'$pl_json'}'
		if [[ -n $ctl ]]; then
			json+=',"ratio":'$(awk -v a="$pl_json" -v b="$ctl_json" 'BEGIN {
				split(a, x, /[:,]/); split(b, y, /[:,]/)
				speed = x[2] / (y[2] > 0 ? y[2] : 0.01); mem = x[4] / y[4]
				cpu = x[6] / (y[6] > 0 ? y[6] : 0.01)
				printf "{\"speed\":%.1f,\"cpu\":%.1f,\"memory\":%.1f,\"ok\":%s}",
					speed, cpu, mem, ((speed >= 20 || cpu >= 20) && mem >= 10) ? "true" : "false" }')
		fi
	else
		json+=',"flamegraph_pl":null,"flamegraph_pl_note":"not found: set FLAMEGRAPH_PL"'
	fi
fi
[[ -n $keep ]] && cp "$input" "$keep/"
echo "$json}"
