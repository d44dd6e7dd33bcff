#!/usr/bin/env bash
# The Debian package's test: builds it with dpkg-buildpackage from a clean
# copy of this checkout, checks it with lintian (no errors), installs it
# (dpkg -i), runs the installed daemon (on a temporary socket and database)
# and client, removes it, purges it, and checks what each step leaves.
# Exits 77 (skipped) where it would touch an offcpud not its own. Run as
# root; ctest runs it as "package" (tests/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { echo "skipped: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

((EUID == 0)) || skip "installs a package: needs root"
for tool in dpkg-buildpackage dh lintian systemd-analyze; do
	command -v "$tool" >/dev/null || skip "$tool is missing (scripts/setup-tests.sh installs it)"
done
[[ $(dpkg-query -W -f='${Status}' offcpud 2>/dev/null) == "" || \
   $(dpkg-query -W -f='${Status}' offcpud 2>/dev/null) == "unknown ok not-installed" ]] ||
	skip "an offcpud package is installed here; this test installs and purges its own"
for path in /var/lib/offcpud /etc/offcpud.conf; do
	[[ ! -e $path ]] || skip "$path exists here and purging the package would delete it"
done
[[ -z $(find /etc/systemd/system -name '*offcpu*' 2>/dev/null) ]] ||
	skip "/etc/systemd/system has offcpud units or drop-ins of its own here"

work=$(mktemp -d /tmp/offcpud-package.XXXXXX)
installed=0 daemon_pid=
cleanup() {
	[[ -z $daemon_pid ]] || { kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null || true; }
	((installed == 0)) || dpkg --purge offcpud >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

# A clean checkout: the tracked files and the untracked ones git does not ignore.
src=$work/offcpud
mkdir "$src"
if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$src"
else
	tar --exclude='./build*' --exclude=node_modules -cf - . | tar -xf - -C "$src"
fi
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
arch=$(dpkg --print-architecture)
deb=$work/offcpud_${version}_${arch}.deb
echo "package: dpkg-buildpackage -b -us -uc (log: $work/build.log while it runs)"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -b -us -uc) \
	>"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; fail "dpkg-buildpackage failed"; }
[[ -f $deb ]] || fail "no $deb"
grep -q -- "-fstack-protector-strong" "$src"/obj-*/CMakeCache.txt ||
	fail "the build did not use dpkg-buildflags' CFLAGS"

echo "package: lintian"
# (lintian warns that it runs as root: this test must, to install the package)
lintian --fail-on error "$deb" || fail "lintian reports errors"

# What the package holds and says.
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/sbin/offcpud ./usr/bin/offcpuctl ./etc/offcpud.conf \
	 ./lib/systemd/system/offcpud.service ./lib/systemd/system/offcpud.socket \
	 ./lib/systemd/system/offcpu-export.service ./lib/systemd/system/offcpu-export.timer \
	 ./usr/lib/sysusers.d/offcpud.conf ./usr/share/man/man8/offcpud.8.gz \
	 ./usr/share/man/man8/offcpuctl.8.gz; do
	grep -qx -- "$f" <<<"$contents" || fail "$f is not in the package"
done
depends=$(dpkg-deb -f "$deb" Depends)

echo "package: dpkg -i"
installed=1
dpkg -i "$deb" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "dpkg -i failed"; }
[[ $(dpkg-query -W -f='${Conffiles}' offcpud) == *" /etc/offcpud.conf "* ]] ||
	fail "/etc/offcpud.conf is not a conffile"
getent group offcpu >/dev/null || fail "no group offcpu after install"
[[ $(stat -c %a /var/lib/offcpud) == 700 ]] || fail "/var/lib/offcpud is not 0700"
# Enabled as Debian does for daemons (deb-systemd-helper's symlinks, also without
# systemd as PID 1); the export timer is installed, not enabled.
[[ -L /etc/systemd/system/multi-user.target.wants/offcpud.service ]] || fail "offcpud.service not enabled"
[[ -L /etc/systemd/system/sockets.target.wants/offcpud.socket ]] || fail "offcpud.socket not enabled"
[[ ! -e /etc/systemd/system/timers.target.wants/offcpu-export.timer ]] || fail "the export timer was enabled"
systemd-analyze verify /lib/systemd/system/offcpud.service /lib/systemd/system/offcpud.socket \
	/lib/systemd/system/offcpu-export.service /lib/systemd/system/offcpu-export.timer ||
	fail "systemd-analyze verify of the installed units"
/usr/sbin/offcpud --help | grep -q "default /etc/offcpud.conf" || fail "the default config is not /etc/offcpud.conf"
# Every library the programs need (DT_NEEDED) comes from a package the
# Depends line names.
dep_names=$(sed -e 's/ ([^)]*)//g' -e 's/ *| */\n/g' -e 's/, /\n/g' <<<"$depends")
for bin in /usr/sbin/offcpud /usr/bin/offcpuctl; do
	for soname in $(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}'); do
		lib=$(ldd "$bin" | awk -v s="$soname" '$1 == s {print $3}')
		[[ -n $lib ]] || fail "$bin: $soname not found"
		pkg=$({ dpkg -S "$lib" || dpkg -S "$(readlink -f "$lib")"; } 2>/dev/null | head -1 | cut -d: -f1)
		[[ -n $pkg ]] || fail "$bin: no package holds $lib"
		grep -qxF "$pkg" <<<"$dep_names" || fail "$bin needs $soname ($pkg), not in Depends: $depends"
	done
done

echo "package: the installed daemon and client"
conf=$work/offcpud.conf
printf 'socket_path = %s\nsocket_mode = 0600\ndatabase = %s\n' "$work/offcpud.sock" "$work/offcpud.db" >"$conf"
/usr/sbin/offcpud --config "$conf" >"$work/offcpud.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1200); do # 2 minutes: BPF loading is slow on a loaded host
	[[ -S $work/offcpud.sock ]] && break
	kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/offcpud.log"; fail "the installed offcpud exited"; }
	sleep 0.1
done
ctl=(/usr/bin/offcpuctl --socket "$work/offcpud.sock")
"${ctl[@]}" status | grep -q "^  offcpu " || fail "offcpuctl status"
"${ctl[@]}" capture --seconds 1 -o "$work/capture.folded" || fail "offcpuctl capture"
[[ -s $work/capture.folded ]] || fail "an empty capture"
kill "$daemon_pid"
wait "$daemon_pid" || fail "offcpud did not stop cleanly: $(cat "$work/offcpud.log")"
daemon_pid=

echo "package: dpkg -r, dpkg -P"
files=$(dpkg -L offcpud | grep -v -e '^/\.$' -e '^/etc$' -e '^/lib$' -e '^/usr' -e '^/lib/systemd$' \
	-e '^/lib/systemd/system$' || true)
files+=$'\n'$(dpkg -L offcpud | grep -e '^/usr/sbin/' -e '^/usr/bin/' -e '^/usr/share/man/man8/offcpu' \
	-e '^/usr/share/doc/offcpud' -e '^/usr/lib/sysusers.d/offcpud')
dpkg -r offcpud >"$work/remove.log" 2>&1 || { cat "$work/remove.log"; fail "dpkg -r failed"; }
[[ ! -e /usr/sbin/offcpud && ! -e /usr/bin/offcpuctl ]] || fail "programs left after dpkg -r"
[[ -f /etc/offcpud.conf && -d /var/lib/offcpud ]] || fail "dpkg -r must keep the conffile and the state"
dpkg --purge offcpud >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "dpkg --purge failed"; }
installed=0
left=()
while read -r f; do
	[[ -z $f || ! -e $f ]] || left+=("$f")
done <<<"$files"
for f in /etc/offcpud.conf /var/lib/offcpud /etc/systemd/system/multi-user.target.wants/offcpud.service \
	 /etc/systemd/system/sockets.target.wants/offcpud.socket; do
	[[ ! -e $f && ! -L $f ]] || left+=("$f")
done
# deb-systemd-helper's record of what it enabled goes with the package too.
while read -r f; do
	[[ -z $f ]] || left+=("$f")
done < <(find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled \
	-name '*offcpu*' 2>/dev/null)
((${#left[@]} == 0)) || fail "purge left: ${left[*]}"
# Left on purpose: the group offcpu (Debian leaves system groups).
echo "package: ok ($(basename "$deb"); purge leaves only the group offcpu)"
