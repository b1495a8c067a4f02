#!/usr/bin/env bash
# tests/fuse.sh - `fsoracle mount` as the tools people test filesystems
# with see it: xfs_io leaves the same bytes as `fsoracle io`, the host
# target through the kernel agrees with the engine and the model, the
# counters and flags are readable, a clean unmount leaves a clean image, a
# SIGKILL loses nothing that was fsynced, and bad input says why.
#
#   tests/fuse.sh [PATH/TO/fsoracle] [--ops N]
#
# --ops: ops of the host-target run (default 100000).  Exit 77 (skipped,
# with the reason) where there is no /dev/fuse, no fusermount3, or the
# program was built without FUSE.  Every mount is undone on exit, pass or
# fail.  No network.
set -u
FSO=out/fsoracle OPS=100000
while [ $# -gt 0 ]; do
	case $1 in
	--ops) OPS=$2; shift 2 ;;
	*) FSO=$1; shift ;;
	esac
done
FSO=$(realpath "$FSO")

skip() { echo "fuse: skipped: $*"; exit 77; }
[ -c /dev/fuse ] || skip "no /dev/fuse on this machine"
command -v fusermount3 >/dev/null || skip "no fusermount3 (Debian package fuse3)"
for t in xfs_io setfattr; do
	command -v $t >/dev/null || skip "no $t (ci/deps installs it)"
done
"$FSO" mount --help | grep -q 'no FUSE support' &&
	skip "$FSO was built without libfuse3"

tmp=$(mktemp -d)
pids=() mnts=()
cleanup() {
	for m in "${mnts[@]}"; do
		grep -q " $m fuse" /proc/mounts && fusermount3 -u -z "$m" 2>/dev/null
	done
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
pass=0 fail=0
. "$(dirname "$0")/checks.sh"
check() { # check DESC CMD...: CMD must succeed
	local desc=$1; shift
	if "$@"; then ok; else bad "$desc"; fi
}
mounted() { grep -q " $1 fuse" /proc/mounts; }

# mnt_up MNT ARGS...: `fsoracle mount -f ARGS... MNT` in the background,
# back when the mount is live (pid in $srv); 1 if the server died first.
mnt_up() {
	local m=$1; shift
	mkdir -p "$m"
	mnts+=("$m")
	"$FSO" mount -f "$@" "$m" 2>"$tmp/server.err" &
	srv=$!
	pids+=("$srv")
	for _ in $(seq 100); do
		mounted "$m" && return 0
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
	echo "server for $m did not come up:"; sed 's/^/    /' "$tmp/server.err"
	return 1
}
# mnt_down MNT: fusermount3 -u, then wait for the server to finish
# (the engine commits after the kernel lets go); 1 unless it exits 0.
mnt_down() {
	fusermount3 -u "$1" || return 1
	wait "$srv"
}

m=$tmp/mnt

# --- help and bad input, before anything is mounted
expect_status 0 "mount --help" -- "$FSO" mount --help
expect_grep "$tmp/out" '^usage: fsoracle mount' "mount --help"
expect_grep "$tmp/out" 'ENOTTY|EOPNOTSUPP' "--help names what FUSE does not pass"
mkdir -p "$m"
expect_status 2 "unknown option" -- "$FSO" mount -x mem:64m "$m"
expect_status 2 "bad mount option" -- "$FSO" mount -o naive=nosuch mem:64m "$m"
expect_grep "$tmp/err" 'nosuch' "names the bad path"
expect_status 2 "missing mount point" -- "$FSO" mount mem:64m "$tmp/nowhere"
expect_status 2 "no mount point" -- "$FSO" mount mem:64m
"$FSO" mkfs -m journal=256 "file:$tmp/raw,size=16m" >/dev/null &&
	truncate -s 16m "$tmp/zero"
expect_status 4 "not an image" -- "$FSO" mount "file:$tmp/zero" "$m"
cp "$tmp/raw" "$tmp/bad"
printf '\xff' | dd of="$tmp/bad" bs=1 seek=$(( (2 + 256) * 4096 + 300 )) \
	conv=notrunc status=none  # journal=256: the inode table starts at block 258
expect_status 4 "corrupted image" -- "$FSO" mount "file:$tmp/bad" "$m"
expect_grep "$tmp/err" 'corrupt|checksum' "says the image is corrupted"
if unshare -m true 2>/dev/null; then
	expect_status 3 "no /dev/fuse" -- unshare -m sh -c \
		"mount -t tmpfs none /dev && exec '$FSO' mount mem:64m '$m'"
	expect_grep "$tmp/err" '/dev/fuse' "names /dev/fuse"
else
	echo "skip: no mount namespace to hide /dev/fuse in"
fi
mounted "$m" && bad "a refused mount left a mount behind"

# --- daemon mode: returns once the mount is live
"$FSO" mount mem:64m "$m"; rc=$?
mnts+=("$m")
check "daemon mount returns 0" [ "$rc" -eq 0 ]
check "daemon mount is live" mounted "$m"
expect_status 2 "busy mount point" -- "$FSO" mount mem:64m "$m"
expect_grep "$tmp/err" 'busy' "says busy"
check "daemon unmounts" fusermount3 -u "$m"

# --- xfs_io on the mount leaves the bytes `fsoracle io` leaves
same_as_io() { # same_as_io DESC XFS_IO-ARGS...: on file f, names relative
	local desc=$1; shift
	rm -f "$m/f"; : >"$m/f"
	(cd "$m" && xfs_io "$@" f) 2>&1 | grep -E '^[0-9a-f]{8}:' >"$tmp/want"
	"$FSO" io mem:64m "$@" 2>&1 | grep -E '^[0-9a-f]{8}:' >"$tmp/got"
	if [ -s "$tmp/want" ] && cmp -s "$tmp/want" "$tmp/got"; then ok; else
		bad "xfs_io on the mount and fsoracle io disagree: $desc"
		diff "$tmp/want" "$tmp/got" | head -5
	fi
}
if mnt_up "$m" mem:64m; then
	same_as_io "the cli.sh sequence" -c "pwrite -S 0x11 0 100k" -c "truncate 5000" \
		-c "pwrite -S 0x22 70000 3000" -c "falloc -k 0 200k" -c "fpunch 1000 2000" \
		-c "fzero 60000 12000" -c "truncate 90000" -c "pwrite -S 0x33 8191 2" \
		-c "pread -v 0 90000"
	same_as_io "truncate down and up" -c "pwrite -S 0xab 0 1m" -c "truncate 5000" \
		-c "truncate 1m" -c "pread -v 0 1m"
	same_as_io "zero range keeping the size, read across EOF" \
		-c "pwrite -S 0xab 0 64k" -c "fzero -k 4000 100k" -c "pwrite -S 0x5a 9000 10" \
		-c "fsync" -c "pread -v 0 70000"
	same_as_io "fallocate past EOF, punch, fdatasync" -c "falloc 0 48k" \
		-c "pwrite -S 0x77 4095 8194" -c "fpunch 8k 4k" -c "fdatasync" \
		-c "pread -v 0 48k"
	# (copy_file_range is compared by the host-target run below: xfs_io
	# repeats commands over every file it has open)
	# SEEK_DATA / SEEK_HOLE: data at 64k..68k only
	rm -f "$m/s"
	xfs_io -f -c "truncate 1m" -c "pwrite -S 1 64k 4k" -c "seek -d 0" \
		-c "seek -h 64k" "$m/s" >"$tmp/out" 2>&1
	expect_grep "$tmp/out" '^DATA[[:space:]]+65536$' "SEEK_DATA finds the written block"
	expect_grep "$tmp/out" '^HOLE[[:space:]]+69632$' "SEEK_HOLE finds its end"
	# what FUSE never passes, and what the flat namespace has not
	xfs_io -c "fcollapse 0 4k" "$m/s" >"$tmp/out" 2>&1
	expect_grep "$tmp/out" 'Operation not supported' "fcollapse: EOPNOTSUPP"
	mkdir "$m/d" 2>"$tmp/out"
	expect_grep "$tmp/out" 'not permitted' "mkdir: EPERM"
	check "no directory was made" [ ! -e "$m/d" ]
	# unlink of an open file: readable until closed, then gone
	xfs_io -c "pwrite -S 0x66 0 10000" "$m/s" >/dev/null
	exec 3<"$m/s"
	rm "$m/s"
	check "an unlinked open file is still readable" \
		[ "$(head -c 10000 <&3 | tr -d 'f' | wc -c)" -eq 0 ]
	exec 3<&-
	sleep 0.2
	check "and is gone after its close" [ -z "$(ls -A "$m" | grep -v '^f$\|^src$')" ]
	check "clean unmount" mnt_down "$m"
fi

# --- compressed delalloc writeback under the mount: same bytes, and the
#     engine compressed them; SEEK_DATA sees delayed data
if mnt_up "$m" -o compress=zstd mem:64m; then
	echo 1 >"$m/.fsoracle/reset"
	same_as_io "compressed writeback" -c "pwrite -S 0x41 0 256k" -c fsync \
		-c "pwrite -S 0x42 1000 10" -c "pread -v 262000 200" -c "pread -v 900 200"
	expect_grep "$m/.fsoracle/counters" '^compressed_extents = [1-9]' "the mount compressed"
	rm -f "$m/s"
	xfs_io -f -c "truncate 1m" -c "pwrite -S 1 64k 4k" -c "seek -d 0" "$m/s" >"$tmp/out" 2>&1
	expect_grep "$tmp/out" '^DATA[[:space:]]+65536$' "SEEK_DATA finds delayed data"
	check "clean unmount" mnt_down "$m"
fi

# --- counters, reset, paths, file flags
if mnt_up "$m" -m reflink=1 mem:64m; then
	check ".fsoracle is not in readdir" sh -c "! ls -a '$m' | grep -q fsoracle"
	echo 1 >"$m/.fsoracle/reset"
	cp "$m/.fsoracle/counters" "$tmp/c0"
	expect_grep "$tmp/c0" '^tx_commits = 0$' "reset zeroes the counters"
	xfs_io -f -c "pwrite -S 1 0 64k" -c fsync "$m/cow" >/dev/null
	cp "$m/.fsoracle/counters" "$tmp/c1"
	expect_grep "$tmp/c1" '^tx_commits = [1-9]' "fsync commits, the counters say"
	check "counters are read-only" sh -c "! echo 1 2>/dev/null >'$m/.fsoracle/counters'"
	setfattr -n user.fsoracle.flags -v +o "$m/cow"
	check "flags read back" [ "$(getfattr --absolute-names --only-values -n user.fsoracle.flags "$m/cow")" = "+o" ]
	setfattr -n user.fsoracle.flags -v +c "$m/cow" 2>"$tmp/out"
	expect_grep "$tmp/out" 'not supported' "+c on a reflink filesystem: EOPNOTSUPP"
	echo 1 >"$m/.fsoracle/reset"
	xfs_io -d -c "pwrite -S 2 8k 4k" -c fsync "$m/cow" >/dev/null
	cp "$m/.fsoracle/counters" "$tmp/c2"
	expect_grep "$tmp/c2" '^cow_remaps = [1-9]' "an always-COW overwrite remaps"
	echo "naive=cow_end fallback=none" >"$m/.fsoracle/paths"
	expect_grep "$m/.fsoracle/paths" '^naive=cow_end fallback=none$' "paths set"
	check "bad paths refused" sh -c "! echo naive=bogus 2>/dev/null >'$m/.fsoracle/paths'"
	check "bad flag word refused" sh -c "! setfattr -n user.fsoracle.flags -v +z '$m/cow' 2>/dev/null"
	check "clean unmount" mnt_down "$m"
fi

# --- a realtime device: +r on an empty file puts its data there
if mnt_up "$m" --rtdev mem:64m -m rtextsize=16k mem:64m; then
	: >"$m/r"
	setfattr -n user.fsoracle.flags -v +r "$m/r"
	xfs_io -c "pwrite -S 1 5000 3000" "$m/r" >/dev/null
	expect_grep "$m/.fsoracle/counters" '^rt_extents_allocated = 1$' "one 16k rt extent"
	setfattr -n user.fsoracle.flags -v -r "$m/r" 2>"$tmp/out"
	expect_grep "$tmp/out" 'Invalid argument' "-r on a file with blocks: EINVAL, as XFS"
	: >"$m/x"
	xfs_io -c "chattr +r" -c "lsattr -v" "$m/x" >"$tmp/out" 2>&1
	expect_grep "$tmp/out" '^\[realtime\]' "xfs_io chattr +r sets the realtime flag"
	check "which the xattr shows" [ "$(getfattr --absolute-names --only-values -n user.fsoracle.flags "$m/x")" = "+r" ]
	chattr +j "$m/x" 2>"$tmp/out"
	expect_grep "$tmp/out" 'Invalid argument' "chattr +j on a realtime file: EINVAL"
	xfs_io -c "chattr -r" "$m/x" && chattr +j "$m/x"
	lsattr "$m/x" >"$tmp/out"
	expect_grep "$tmp/out" '^-*j-* ' "chattr +j, as lsattr reads it"
	check "chattr +A: not supported" sh -c "! chattr +A '$m/x' 2>/dev/null"
	check "clean unmount" mnt_down "$m"
fi

# --- the host target through the kernel: engine, host:MNT, model agree
if mnt_up "$m" mem:64m; then
	expect_status 0 "run engine,host:MNT,model ($OPS ops)" -- "$FSO" run -q --seed 17 \
		--ops "$OPS" --targets "engine,host:$m,model"
	grep -E 'agreed|differ|FAIL' "$tmp/err" | head -3
	check "clean unmount" mnt_down "$m"
fi
if mnt_up "$m" -m reflink=1 mem:64m; then # copy_file_range clones here
	expect_status 0 "run on a reflink mount (5000 ops)" -- "$FSO" run -q --seed 3 \
		--ops 5000 --targets "engine,host:$m,model"
	check "clean unmount" mnt_down "$m"
fi

# --- a file: image: SIGTERM unmounts cleanly; SIGKILL loses only what
#     was not fsynced, and the next mount recovers the rest
img=$tmp/img
"$FSO" mkfs "file:$img,size=64m" >/dev/null
head -c 1048576 /dev/urandom >"$tmp/a"
if mnt_up "$m" "file:$img"; then
	cp "$tmp/a" "$m/kept"
	kill -TERM "$srv"
	wait "$srv"; rc=$?
	check "SIGTERM: the server exits 0" [ "$rc" -eq 0 ]
	check "SIGTERM: nothing left mounted" sh -c "! grep -q ' $m fuse' /proc/mounts"
	expect_status 0 "fsck after SIGTERM" -- "$FSO" fsck "file:$img"
fi
if mnt_up "$m" -o ro "file:$img"; then
	check "ro: the bytes are there" cmp -s "$tmp/a" "$m/kept"
	check "ro: writes refused" sh -c "! echo x 2>/dev/null >'$m/new'"
	check "ro: clean unmount" mnt_down "$m"
fi
if mnt_up "$m" "file:$img"; then
	xfs_io -f -c "pwrite -S 0x5a 0 256k" -c fsync "$m/synced" >/dev/null
	xfs_io -c "pwrite -S 0x6b 256k 256k" -c "pwrite -S 0x7c 0 4k" "$m/synced" >/dev/null
	xfs_io -f -c "pwrite -S 0x11 0 64k" "$m/unsynced" >/dev/null
	kill -KILL "$srv"
	wait "$srv" 2>/dev/null
	expect_status 2 "mount over the dead mount" -- "$FSO" mount "file:$img" "$m"
	expect_grep "$tmp/err" 'fusermount3 -u' "says how to clear it"
	fusermount3 -u "$m" 2>/dev/null
	if mnt_up "$m" "file:$img"; then
		expect_grep "$m/.fsoracle/counters" '^recovered_txns = [1-9]' "the mount recovered the journal"
		check "fsynced bytes survive the kill" sh -c \
			"head -c 262144 '$m/synced' | tail -c 258048 | tr -d 'Z' | wc -c | grep -qx 0"
		check "the first block: before or after the unsynced write" sh -c \
			"head -c 4096 '$m/synced' | tr -d 'Z|' | wc -c | grep -qx 0"
		check "earlier files intact" cmp -s "$tmp/a" "$m/kept"
		check "clean unmount after recovery" mnt_down "$m"
		expect_status 0 "fsck after the kill and remount" -- "$FSO" fsck "file:$img"
		expect_grep "$tmp/out" 'clean' "fsck says clean"
	fi
fi

echo "fuse: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
