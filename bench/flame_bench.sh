#!/bin/bash
# flame_bench: times the flame graph path on a generated folded file (by
# default 200000 lines of ~26 frames, sorted as offcpud and stackcollapse
# write them) and prints one JSON line: wall time and peak RSS of
#   - flame_render (the library alone: parse, merge, then SVG; and again with
#     speedscope JSON),
#   - offcpuctl flamegraph FILE -o out.svg, when the build has that command,
#   - flamegraph.pl, with --baseline (about 20 s; FLAMEGRAPH_PL or PATH).
# Targets: 20 times faster than flamegraph.pl's ~21 s (so <= 1 s), <= 150 MB.
#
# usage: bench/flame_bench.sh [--lines N] [--names MIN:MAX] [--unsorted]
#                             [--baseline] [--keep DIR]
# BUILD_DIR (default build/) supplies the binaries; missing ones are
# compiled from source with ${CC:-cc} -O2.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
lines=200000
names=20:60
sorted=true
baseline=false
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
	${CC:-cc} -std=gnu11 -O2 -I"$root/render" -o "$render" "$root/bench/flame_render.c" \
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

# run NAME CMD...: runs CMD under GNU time; prints {"wall_s":..,"max_rss_mb":..}
# and leaves CMD's standard error in $work/NAME.err.
run() {
	local name=$1
	shift
	if ! /usr/bin/time -f '%e %M' -o "$work/$name.time" "$@" 2>"$work/$name.err" >/dev/null; then
		echo "flame_bench: $name failed:" >&2
		cat "$work/$name.err" >&2
		exit 1
	fi
	read -r wall rss <"$work/$name.time"
	awk -v w="$wall" -v r="$rss" 'BEGIN { printf "{\"wall_s\":%.2f,\"max_rss_mb\":%.1f", w, r / 1024 }'
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
if [[ -n $ctl ]]; then
	json+=',"offcpuctl":'$(run ctl "$ctl" flamegraph "$input" -o "$out/offcpuctl.svg")'}'
else
	json+=',"offcpuctl":null'
fi
if $baseline; then
	pl=${FLAMEGRAPH_PL:-$(command -v flamegraph.pl || command -v flamegraph || true)}
	if [[ -n $pl ]]; then
		json+=',"flamegraph_pl":'$(run baseline perl "$pl" "$input")'}'
	else
		json+=',"flamegraph_pl":null,"flamegraph_pl_note":"not found: set FLAMEGRAPH_PL"'
	fi
fi
[[ -n $keep ]] && cp "$input" "$keep/"
echo "$json}"
