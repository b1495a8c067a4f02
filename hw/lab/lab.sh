#!/usr/bin/env bash
# hw/lab/lab.sh - the device drivers against real kernel devices: a stock
# Debian kernel booted in QEMU (software emulation) gives a host-managed
# zoned null_blk device and a DAX /dev/pmem0 from memmap=, and the
# project's own test programs run on them inside the guest.
#
#   hw/lab/lab.sh [--build DIR] [--cache DIR] [--timeout S] [--selftest]
#
#   --build DIR   where the release build is (default out/; built with
#                 make if its programs are missing)
#   --cache DIR   where kernels are kept (default
#                 ${XDG_CACHE_HOME:-~/.cache}/fsoracle-lab)
#   --timeout S   give the guest S seconds (default 300)
#   --selftest    prove the lab fails when the guest does: one boot whose
#                 plan holds deliberately failing tests, one whose guest
#                 dies without a verdict; both must make the lab fail
#
# Steps, each cached:
#   1. kernel: the version linux-image-amd64 depends on (resolved with
#      apt-cache at most once a day, never written here), fetched with
#      `apt-get download`, unpacked, depmod'ed; only vmlinuz and the
#      modules the guest loads (in modprobe's order) are kept, under the
#      cache directory.
#   2. initramfs: busybox, mke2fs, the test programs and the shared
#      libraries ldd says they need, the modules, hw/lab/init and
#      hw/lab/layouts.  Rebuilt only when one of those changes.
#   3. boot: qemu-system-x86_64 -accel tcg -cpu max (KVM here is PVM,
#      which a stock kernel cannot use); the guest's /init writes its
#      verdict to isa-debug-exit, so QEMU exits 1 when every test passed
#      and 3 when one failed, 0 when the guest died without a verdict.
#
# The console goes to BUILD/lab/console.log; lines the guest starts with
# "lab:" are shown as it runs.  The summary lists every layout with its
# tests and verdicts.  Exit status: 0 all passed, 1 a test failed or the
# guest gave no verdict, 2 usage or a missing tool, 3 the kernel or the
# initramfs could not be made.
set -u
cd "$(dirname "$0")/../.."
top=$PWD
build=out
cache=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/fsoracle-lab
timeout_s=300
selftest=0

usage() { sed -n '2,/^set -u/p' "$0" | sed -n 's/^# \{0,1\}//p' >&2; exit 2; }
die() { echo "lab: $1" >&2; exit "${2:-3}"; }
say() { echo "lab: $*"; }

while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=${2:?}; shift 2 ;;
	--cache) cache=${2:?}; shift 2 ;;
	--timeout) timeout_s=${2:?}; shift 2 ;;
	--selftest) selftest=1; shift ;;
	-h|--help) usage ;;
	*) echo "lab: unknown argument '$1'" >&2; usage ;;
	esac
done
case "$timeout_s" in ''|*[!0-9]*) die "--timeout wants seconds, not '$timeout_s'" 2 ;; esac

# The modules the guest loads, with everything they depend on.
# crc32c-intel only loads on a CPU with SSE4.2 (-cpu max has it) and
# makes mkfs.ext4 fast; the guest does without it.
modules="configfs null_blk libnvdimm nd_e820 nd_pmem ext4 crc32c-intel"
# The programs the guest runs, from the build directory.
progs="fsoracle tests/test_hw_zoned tests/test_hw_pmem"

for t in qemu-system-x86_64 busybox cpio gzip depmod modprobe dpkg-deb \
	 apt-get apt-cache mke2fs ldd sha256sum timeout; do
	command -v "$t" >/dev/null ||
		die "'$t' is missing (ci/deps installs what the lab needs)" 2
done
[ -f /etc/mke2fs.conf ] || die "/etc/mke2fs.conf is missing (package e2fsprogs)" 2
if ldd "$(command -v busybox)" >/dev/null 2>&1; then
	die "$(command -v busybox) is linked dynamically; the guest needs busybox-static" 2
fi

# ---- 1. the kernel ---------------------------------------------------

# The versioned kernel package linux-image-amd64 depends on, or nothing.
kernel_package() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n1
}

# Unpack the package's .deb and keep what the guest needs in $1.
make_kernel() { # make_kernel DIR PACKAGE
	local dir=$1 pkg=$2 tmp deb kv line path name
	tmp=$(mktemp -d "$cache/tmp.XXXXXX") || return 1
	deb=$(ls "$cache"/"${pkg}"_*.deb 2>/dev/null | tail -n1)
	if [ -z "$deb" ]; then
		say "downloading $pkg (apt-get download)"
		if ! (cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1); then
			if [ "$(id -u)" -eq 0 ]; then
				say "download failed; refreshing the package lists and retrying"
				apt-get update -qq >/dev/null 2>&1
			fi
			(cd "$tmp" && apt-get download -q "$pkg" >/dev/null) || {
				rm -rf "$tmp"; echo "lab: apt-get download $pkg failed" >&2; return 1; }
		fi
		mv "$tmp"/"${pkg}"_*.deb "$cache"/ || return 1
		deb=$(ls "$cache"/"${pkg}"_*.deb | tail -n1)
	fi
	say "unpacking $(basename "$deb")"
	dpkg-deb -x "$deb" "$tmp/root" || { rm -rf "$tmp"; return 1; }
	kv=$(ls "$tmp/root/lib/modules" | head -n1)
	[ -n "$kv" ] && [ -f "$tmp/root/boot/vmlinuz-$kv" ] || {
		rm -rf "$tmp"; echo "lab: no kernel or modules in $deb" >&2; return 1; }
	depmod -b "$tmp/root" "$kv" || { rm -rf "$tmp"; return 1; }
	mkdir -p "$tmp/keep/modules"
	: >"$tmp/keep/modules/order"
	for m in $modules; do
		line=$(modprobe -d "$tmp/root" -S "$kv" --show-depends "$m" 2>&1) || {
			rm -rf "$tmp"; echo "lab: module $m: $line" >&2; return 1; }
		while read -r what path _; do
			[ "$what" = insmod ] || continue
			name=$(basename "$path" .ko)
			grep -qx "$name" "$tmp/keep/modules/order" && continue
			cp "$path" "$tmp/keep/modules/$name.ko" || { rm -rf "$tmp"; return 1; }
			echo "$name" >>"$tmp/keep/modules/order"
		done <<<"$line"
	done
	cp "$tmp/root/boot/vmlinuz-$kv" "$tmp/keep/vmlinuz" &&
		cp "$tmp/root/boot/config-$kv" "$tmp/keep/config" &&
		echo "$kv" >"$tmp/keep/release" || { rm -rf "$tmp"; return 1; }
	rm -rf "$dir"
	mv "$tmp/keep" "$dir" && rm -rf "$tmp"
}

mkdir -p "$cache" || die "cannot create the cache directory $cache"
modkey=$(echo "$modules" | sha256sum | cut -c1-8)
# apt-cache is slow on a busy machine: its answer is kept for a day.
if [ -n "$(find "$cache/resolved" -mmin -1440 2>/dev/null)" ]; then
	pkg=$(cat "$cache/resolved")
else
	pkg=$(kernel_package)
	if [ -z "$pkg" ] && [ "$(id -u)" -eq 0 ]; then
		say "apt-cache knows no linux-image-amd64; running apt-get update"
		apt-get update -qq >/dev/null 2>&1
		pkg=$(kernel_package)
	fi
	[ -n "$pkg" ] && echo "$pkg" >"$cache/resolved"
fi
if [ -n "$pkg" ]; then
	kdir=$cache/$pkg-$modkey
	if [ ! -f "$kdir/release" ]; then
		make_kernel "$kdir" "$pkg" || die "could not make the kernel from $pkg"
	fi
else
	kdir=$(ls -d "$cache"/linux-image-*-"$modkey" 2>/dev/null | tail -n1)
	[ -n "$kdir" ] && [ -f "$kdir/release" ] ||
		die "cannot resolve linux-image-amd64 (apt-cache) and no kernel is cached in $cache"
	say "apt-cache knows no linux-image-amd64; using the cached $(basename "$kdir")"
fi
say "kernel $(cat "$kdir/release") ($kdir)"

# ---- 2. the initramfs ------------------------------------------------

for p in $progs; do
	[ -x "$build/$p" ] && continue
	say "building $build (make -j2 O=$build)"
	make -s -j2 O="$build" || die "the build in $build failed"
	break
done
for p in $progs; do
	[ -x "$build/$p" ] || die "$build/$p is missing after the build"
done

labdir=$build/lab
mkdir -p "$labdir"
mke2fs_bin=$(command -v mke2fs)
inputs="$(for p in $progs; do echo "$build/$p"; done)
hw/lab/init
hw/lab/layouts
$(command -v busybox)
$mke2fs_bin
$kdir/release
$kdir/modules/order"
stamp=$( { echo "$inputs"; echo "$inputs" | xargs sha256sum; } | sha256sum | cut -c1-16)

if [ -f "$labdir/initrd.gz" ] && [ "$(cat "$labdir/initrd.stamp" 2>/dev/null)" = "$stamp" ]; then
	say "initramfs up to date ($labdir/initrd.gz)"
else
	say "building the initramfs"
	root=$labdir/root
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,mnt/pmem,lab/bin,modules} || exit 3
	cp "$(command -v busybox)" "$root/bin/busybox" || exit 3
	for a in $(busybox --list); do
		[ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
	done
	for p in $progs; do
		cp "$build/$p" "$root/lab/bin/$(basename "$p")" || exit 3
	done
	# Not named mke2fs or mkfs.ext4: busybox's shell would run its own
	# applet of that name instead.
	cp "$mke2fs_bin" "$root/lab/bin/e2mkfs" || exit 3
	cp /etc/mke2fs.conf "$root/etc/" || exit 3
	# The shared libraries of every program, where ldd finds them.
	for lib in $(ldd "$root"/lab/bin/* | grep -v ':$' | grep -o '/[^ ]*' | sort -u); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib" || exit 3
	done
	cp "$kdir"/modules/*.ko "$kdir/modules/order" "$root/modules/" || exit 3
	cp hw/lab/init "$root/init" && chmod 755 "$root/init" || exit 3
	cp hw/lab/layouts "$root/lab/layouts" || exit 3
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$labdir/initrd.gz.tmp" ||
		die "cpio of the initramfs failed"
	mv "$labdir/initrd.gz.tmp" "$labdir/initrd.gz"
	echo "$stamp" >"$labdir/initrd.stamp"
	rm -rf "$root"
	say "initramfs $(du -k "$labdir/initrd.gz" | cut -f1) KiB"
fi

# ---- 3. boot ---------------------------------------------------------

# boot PLAN LOG: run the guest; sets rc to QEMU's exit status.
boot() {
	local plan=$1 log=$2 start end
	say "booting $(cat "$kdir/release") under QEMU (TCG, -cpu max), plan '$plan'"
	start=$(date +%s.%N)
	timeout -k 5 "$timeout_s" qemu-system-x86_64 -accel tcg -cpu max \
		-m 2G -smp 1 -nographic -no-reboot -nic none -monitor none \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$kdir/vmlinuz" -initrd "$labdir/initrd.gz" \
		-append "console=ttyS0 quiet panic=-1 memmap=256M!1G fsolab.plan=$plan" \
		</dev/null 2>&1 | tr -d '\r' | tee "$log" |
		sed -un 's/^lab: /lab:   guest: /p'
	rc=${PIPESTATUS[0]}
	end=$(date +%s.%N)
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
}

# The summary of a console log: each section's tests, one line each.
# Sections are "lab-begin LAYOUT WHAT" .. "lab-end LAYOUT WHAT RC"; the
# test programs inside print "ok NAME", "FAIL NAME", "skip NAME: why".
summary() { # summary LOG
	awk '
	/^lab-begin / { lay = $2; what = $3; n = 0; next }
	/^lab-end / {
		if (n == 0)
			printf "  %-14s %-24s %s\n", $2, $3, ($4 == 0 ? "ok" : "FAIL (exit " $4 ")")
		else if ($4 != 0 && nfail == 0)
			printf "  %-14s %-24s FAIL (exit %s, no test failed)\n", $2, $3, $4
		lay = ""; nfail = 0; next
	}
	lay != "" && /^(ok|FAIL|skip) +[a-z_0-9]+/ {
		v = $1; t = $2; sub(/:$/, "", t); n++
		if (v == "FAIL") nfail++
		why = ""
		if (v == "skip") { why = $0; sub(/^skip +[a-z_0-9]+: */, "", why); why = " (" why ")" }
		printf "  %-14s %-24s %-4s %s%s\n", lay, what, v, t, why
	}
	/^lab-note / { sub(/^lab-note /, ""); print "  note: " $0 }
	' "$1"
}

# judge LOG RC: 0 when the guest passed and said so every way it can.
judge() {
	local log=$1 rc=$2
	case "$rc" in
	1) ;;
	3) echo "lab: the guest reported a failure (isa-debug-exit 3)"; return 1 ;;
	0) echo "lab: no verdict: the guest stopped without writing one (panic or early exit); see $log"; return 1 ;;
	124|137) echo "lab: the guest ran out of time (${timeout_s} s); see $log"; return 1 ;;
	*) echo "lab: QEMU failed (exit $rc); see $log"; return 1 ;;
	esac
	grep -q '^lab-done' "$log" || { echo "lab: the guest gave a verdict but never finished its plan"; return 1; }
	grep -q '^lab-end ' "$log" || { echo "lab: the guest ran no test"; return 1; }
	if grep -q '^lab-end .* [1-9][0-9]*$' "$log"; then
		echo "lab: a test failed but the guest reported success"; return 1
	fi
	return 0
}

show_failures() { # the output of each failed section
	awk '/^lab-begin / { buf = ""; on = 1 } on { buf = buf $0 "\n" }
	     /^lab-end / { on = 0; if ($4 != 0) printf "%s", buf }' "$1" | tail -n 60
}

run_plan() { # run_plan PLAN: boot, summarize, judge; returns the verdict
	local plan=$1 log=$labdir/console-$1.log verdict
	boot "$plan" "$log"
	echo "lab: summary ($plan, $secs s, QEMU exit $rc):"
	summary "$log"
	judge "$log" "$rc"
	verdict=$?
	if [ "$verdict" -ne 0 ] && [ "$selftest" -eq 0 ]; then
		echo "lab: output of the failed tests (whole console: $log):"
		show_failures "$log"
	fi
	return "$verdict"
}

if [ "$selftest" -eq 0 ]; then
	run_plan full
	v=$?
	[ "$v" -eq 0 ] && echo "lab: all passed" || echo "lab: FAILED"
	exit "$v"
fi

# --selftest: each plan below must make the lab fail, and for the
# reason it was built for.
p=0 f=0
check() { # check NAME COND-STATUS
	if [ "$2" -eq 0 ]; then p=$((p + 1)); echo "lab selftest: ok   $1"
	else f=$((f + 1)); echo "lab selftest: FAIL $1"; fi
}
run_plan selftest
v=$?
log=$labdir/console-selftest.log
check "a failing guest test fails the lab" "$([ "$v" -ne 0 ] && [ "$rc" -eq 3 ]; echo $?)"
check "the summary names the failed soak" \
	"$(summary "$log" | grep -q 'selftest .*planted-soak .*FAIL'; echo $?)"
check "the summary names each failed zone rule" \
	"$(summary "$log" | grep -q 'selftest .*rules-missing-dev *FAIL *zoned_dev_write_at_write_pointer'; echo $?)"
check "passing tests in the same boot still read ok" \
	"$(summary "$log" | grep -q 'selftest .*rules-emulated *ok *zoned_dev_write_at_write_pointer'; echo $?)"
run_plan noverdict
v=$?
check "a guest that dies without a verdict fails the lab" "$([ "$v" -ne 0 ] && [ "$rc" -eq 0 ]; echo $?)"
echo "lab selftest: $p passed, $f failed"
[ "$f" -eq 0 ]
