#!/usr/bin/env bash
# tests/cli.sh - the fsoracle program as a user and a script see it:
# output formats, exit statuses, persistence, bad input, and agreement with
# xfs_io: its output text on an XFS loop mount (as root, where loop
# devices work), else the bytes it leaves on this machine's filesystem.
#
#   tests/cli.sh [PATH/TO/fsoracle]     (VALGRIND=1 runs every call under
#                                        valgrind, failing on any error)
set -u
FSO=${1:-out/fsoracle}
tmp=$(mktemp -d)
xfs_mnt=
cleanup() { [ -n "$xfs_mnt" ] && umount "$xfs_mnt" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
pass=0 fail=0

run() { # run the program, under valgrind if asked
	if [ -n "${VALGRIND:-}" ]; then
		valgrind -q --error-exitcode=99 --leak-check=full \
			--errors-for-leak-kinds=definite "$FSO" "$@"
	else
		"$FSO" "$@"
	fi
}
. "$(dirname "$0")/checks.sh"

# --- the issue's example: truncate keeps 0xab up to 4999, nothing past EOF
expect_status 0 "io example" -- run io mem:64m -c "pwrite -S 0xab 0 1m" \
	-c "truncate 5000" -c "pread -v 4090 20"
expect_grep "$tmp/out" '^00000ffa:  ab ab ab ab ab ab ab ab ab ab ab ab ab ab ab ab  \.{16}$' "pread -v dump"
expect_grep "$tmp/out" '^0000100a:  ab ab ab ab  \.\.\.\.$' "pread -v dump, last line"
expect_grep "$tmp/out" '^read 20/20 bytes at offset 4090$' "pread inside EOF"
expect_status 0 "io read across EOF" -- run io mem:64m -c "pwrite -S 0xab 0 1m" \
	-c "truncate 5000" -c "pread -v 4990 20"
expect_grep "$tmp/out" '^0000137e:  ab ab ab ab ab ab ab ab ab ab  \.{10}$' "0xab up to 4999"
expect_grep "$tmp/out" '^read 10/20 bytes at offset 4990$' "nothing past EOF"
expect_status 0 "io truncate up" -- run io mem:64m -c "pwrite -S 0xab 0 1m" \
	-c "truncate 5000" -c "truncate 1m" -c "pread -v 4992 16" -c "stat"
expect_grep "$tmp/out" '^00001380:  ab ab ab ab ab ab ab ab 00 00 00 00 00 00 00 00' "zeros from 5000"
expect_grep "$tmp/out" '^stat.size = 1048576$' "stat.size"

# --- xfs_io's words and their text, without XFS at hand (the loop-mount
#     comparison below checks the same against the kernel)
expect_status 0 "io words" -- run io -m reflink=1 mem:64m -c "pwrite -b 16k 0 64k" \
	-c "pread -v 0 16" -c "falloc 64k 64k" -c "fiemap -v" -c "seek -a -r 0" -c lsattr \
	-c "chattr +j" -c "lsattr -v" -c "open -f g" -c "reflink f0" -c "fiemap -v" \
	-c "help seek" -c quit -c stat
expect_grep "$tmp/out" '^64 KiB, 4 ops; ' "ops counted per -b buffer"
expect_grep "$tmp/out" '^00000000:  cd cd cd cd cd cd cd cd cd cd cd cd cd cd cd cd  \.{16}$' "pwrite without -S writes 0xcd"
expect_grep "$tmp/out" '^   1: \[128\.\.255\]: +[0-9]+\.\.[0-9]+ +128 0x801$' "fiemap -v: unwritten, last"
expect_grep "$tmp/out" '^HOLE	65536$' "seek: the unwritten range is a hole"
expect_grep "$tmp/out" '^-p--------------- f0 $' "lsattr in xfs_io's letters"
expect_grep "$tmp/out" '^\[prealloc, journal-data\] f0 $' "lsattr -v names the engine's flags"
expect_grep "$tmp/out" '^linked 0/0 bytes at offset 0$' "a whole-file reflink, as xfs_io prints it"
expect_grep "$tmp/out" '^   0: \[0\.\.127\]: +[0-9]+\.\.[0-9]+ +128 0x2001$' "fiemap -v: shared, last"
expect_grep "$tmp/out" '^seek -a \| -d \| -h \[-r\] \[-s\] off -- locate the next data and/or hole$' "help CMD"
expect_nogrep "$tmp/out" '^fd.path' "quit stops the list"
expect_status 1 "io errors named by the call" -- run io mem:64m -c "fpunch 0 0" -c "truncate 5"
expect_grep "$tmp/err" '^fallocate: Invalid argument$' "fallocate: Invalid argument"

# --- null: keeps metadata only, so a 64 TiB device costs nothing
expect_status 0 "null:64t" -- run io null:64t -c "pwrite -S 1 0 1g" -c "truncate 5000" -c stat
expect_grep "$tmp/out" '^stat.size = 5000$' "null:64t stat"

# --- bmap shows unwritten extents; counters are printed by name
expect_status 0 "bmap" -- run io mem:64m -c "falloc 0 64k" -c "pwrite -S 1 0 4k" -c "bmap -vp" -c counters
expect_grep "$tmp/out" '^ +1: \[8\.\.127\]: +[0-9]+\.\.[0-9]+ +0 \([0-9.]+\) +120 010000$' "bmap -vp flags unwritten"
expect_grep "$tmp/out" '^ *0: \[0\.\.7\]: ' "bmap first extent in 512-byte units"
expect_grep "$tmp/out" '^node_visits = [0-9]+$' "counters"
# --- delalloc and compressed writeback: nothing allocated before the
#     fsync, compressed extents flagged after it, the bytes read back
expect_status 0 "compress" -- run io -o compress=zstd mem:64m -c "open -f a" \
	-c "pwrite -S 0x41 0 256k" -c stat -c fsync -c "bmap -v" -c stat \
	-c drop_caches -c "pread -v 262140 4" -c counters
expect_grep "$tmp/out" '^stat.blocks = 0$' "compress: no blocks before writeback"
expect_grep "$tmp/out" 'compressed' "compress: bmap flags compressed extents"
expect_grep "$tmp/out" '^compressed_extents = 2$' "compress: 2 extents of 128k"
expect_grep "$tmp/out" '^0003fffc:  41 41 41 41' "compress: bytes read back"
expect_status 2 "compress with reflink" -- run io -m reflink=1 -o compress=zstd mem:64m -c stat
expect_status 0 "chattr +c" -- run io -o delalloc mem:64m -c "open -f b" \
	-c "chattr +c" -c "pwrite -S 7 0 128k" -c fsync -c counters
expect_grep "$tmp/out" '^compressed_extents = 1$' "chattr +c compresses one file"
expect_status 2 "compress=bad" -- run io -o compress=lz4 mem:64m -c stat

# --- file: devices persist across invocations; fsck checks them
img="$tmp/img"
expect_status 0 "mkfs file" -- run mkfs -m bs=4k,maxrecs=4,journal=256 "file:$img,size=32m"
expect_status 0 "write file" -- run io "file:$img" -c "open -f data" -c "pwrite -S 0x5a 100 8000"
expect_status 0 "read back" -- run io "file:$img" -c "open data" -c "pread -v 8096 8" -c stat
expect_grep "$tmp/out" '^00001fa0:  5a 5a 5a 5a  [.Z]{4}$' "persisted bytes"
expect_grep "$tmp/out" '^stat.size = 8100$' "persisted size"
expect_status 0 "fsck clean" -- run fsck "file:$img"
expect_grep "$tmp/out" 'clean' "fsck says clean"

# --- corrupted image: one byte of the inode table flipped
cp "$img" "$tmp/bad"
itab=$(( (2 + 256) * 4096 ))   # journal=256: the inode table starts at block 258
printf '\xff' | dd of="$tmp/bad" bs=1 seek=$((itab + 300)) conv=notrunc status=none
expect_status 4 "fsck corrupted" -- run fsck "file:$tmp/bad"
expect_grep "$tmp/err" 'corrupt|checksum' "corruption message"
expect_status 4 "io corrupted" -- run io "file:$tmp/bad" -c stat

# --- a crash or remount whose mount fails leaves no filesystem: the words
#     that call the engine themselves (stat, bmap, statfs, ...) say so
#     instead of following a null one (they crashed).  The superblock's
#     nth read fails, for every n up to past the mount after the crash
seen=
for n in $(seq 1 12); do
	run io "faulty[read=$n,off=0,len=512,sticky]:mem:64m" -c "pwrite 0 4k" -c crash \
		-c stat -c statx -c lsattr -c "chattr +j" -c statfs -c counters -c bmap \
		-c fiemap -c "seek -d 0" -c "copy_range f0" -c "dedupe f0 0 0 4k" \
		>"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ "$st" -ge 1 ] && [ "$st" -le 4 ]; then ok; else
		bad "io after a failed mount (read=$n): exit $st"; head -3 "$tmp/err"; fi
	grep -q '^crash: Input/output error$' "$tmp/err" && seen=1 && cp "$tmp/err" "$tmp/err.crash"
done
[ -n "$seen" ] && ok || bad "no read fault made the mount after the crash fail"
expect_grep "$tmp/err.crash" '^stat: Input/output error$' "stat without a filesystem says why"
# --- a target that keeps no bytes (null:, nopagedata) against one that
#     does: refused at the start, saying why (it was a data mismatch on
#     the first verify: a false alarm by construction); against its like
#     it runs
expect_status 2 "run on null: against the model" -- run run --seed 1 \
	--ops 200 --dev null:64m
expect_grep "$tmp/err" "keeps no file data .* so model cannot be compared" \
	"the refusal names both targets"
expect_status 2 "run nopagedata against the model" -- run run --seed 1 \
	--ops 200 --mount nopagedata -q
expect_status 0 "run on null: against its like" -- run run --seed 1 \
	--ops 2000 --targets engine:null:64m,naive:null:64m -q

# --- a failed open leaves the open file as it was, as xfs_io's (the
#     next write went to the missing name and created it)
expect_status 1 "io open of a missing file" -- run io mem:64m -c "open -fd a" \
	-c "open other" -c "pwrite 0 4k" -c stat -c "open other"
expect_grep "$tmp/out" '^fd.path = "a"$' "the write went to the file open before"
expect_grep "$tmp/out" '^fd.flags = non-sync,direct' "still opened for direct I/O"
expect_grep "$tmp/err" '^other: No such file or directory$' "the second open still fails"
[ "$(grep -c '^other: No such' "$tmp/err")" = 2 ] && ok ||
	bad "open of a missing file made it"
# and a failed open gives back the name's slot: 9 failed opens of new
# names, then a new file (8 names at most; the 9th was refused)
opens=()
for i in 1 2 3 4 5 6 7 8 9; do opens+=(-c "open missing$i"); done
expect_status 1 "io after 9 failed opens" -- run io mem:64m "${opens[@]}" \
	-c "open -f real" -c "pwrite 0 1k" -c stat
expect_grep "$tmp/out" '^fd.path = "real"$' "a new name still has a slot"
expect_nogrep "$tmp/err" "too many files" "no slot was used up"

# --- --keep-image on an image holding a file the log never names: refused
#     with the file's name (every listing after a crash counted it as a
#     stray: a false exit 13), and the file is still there after
"$FSO" mkfs "file:$tmp/kept.img,size=64m" >/dev/null
run io "file:$tmp/kept.img" -c "open -f other" -c "pwrite 0 4k" \
	-c "open -f f0" -c "pwrite 0 2k" >/dev/null 2>&1
printf '#! fsoracle targets=engine:file:%s,model\npwrite 0 4k\ncrash\n' \
	"$tmp/kept.img" >"$tmp/kept.ops"
for cmd in replay minimize; do
	expect_status 2 "$cmd --keep-image, an image with another file" -- \
		run "$cmd" --keep-image "$tmp/kept.ops"
	expect_grep "$tmp/err" "holds 'other', a file the op log does not name" \
		"$cmd says which file"
done
expect_status 2 "run --keep-image, an image with another file" -- run run \
	--keep-image --targets "engine:file:$tmp/kept.img,model" --ops 10 --seed 1
run io "file:$tmp/kept.img" -c "open other" -c "stat" -c "open f0" -c stat \
	>"$tmp/out" 2>&1
expect_grep "$tmp/out" '^stat.size = 4096$' "the other file is still there"
expect_grep "$tmp/out" '^stat.size = 2048$' "and the log's f0 (nothing unlinked)"

# no filesystem to audit at the end is the failed mount's error: the
# device's (exit 3; it was 4, a corrupted image) ...
expect_status 3 "io whose crash's mount failed" -- run io \
	"faulty[read=4,off=0,len=512,sticky]:mem:64m" -c "pwrite 0 4k" -c crash
# a soak on a device that fails an I/O on purpose: the engine's error is
# reported as a mismatch, and the report says the device was told to fail
expect_status 13 "run on a faulty device" -- run run --dev "faulty[read=2000]:mem:64m" \
	--targets engine,model --seed 1 --ops 20000 -q --log "$tmp/faulty.ops"
expect_grep "$tmp/err" "its device failed 1 I/O on purpose" "the report names the injected fault"
# A command that meets an extent-tree leaf damaged on the image fails
# (the image is corrupted) and shuts the filesystem down: the sync after
# it fails too, nothing of the half-made unlink is written, the crash's
# mount recovers the last commit, and the audit at the end finds the
# damage (exit 4)
expect_status 0 "mkfs for the damaged leaf" -- run mkfs -m bs=4k,maxrecs=4,journal=256 \
	"file:$tmp/leaf.img,size=32m"
extents=()
for i in $(seq 0 12); do extents+=(-c "pwrite $((i * 8192)) 4096"); done
expect_status 0 "a file of 13 extents" -- run io "file:$tmp/leaf.img" -c "open -f a" \
	"${extents[@]}"
leaf=$(LC_ALL=C grep -obUaP '\x42\x4f\x53\x46' "$tmp/leaf.img" | cut -d: -f1 |
	awk '$1 % 4096 == 0 && $1 / 4096 > 258 { print $1 / 4096 }' | sed -n 3p)
printf '\xff' | dd of="$tmp/leaf.img" bs=1 seek=$((leaf * 4096 + 300)) conv=notrunc status=none
expect_status 4 "io whose unlink met a damaged leaf" -- run io "file:$tmp/leaf.img" \
	-c "open a" -c "unlink a" -c sync -c crash
expect_grep "$tmp/err" "^unlink: Structure needs cleaning$" "the unlink fails"
expect_grep "$tmp/err" "^sync: Input/output error$" "the shut-down filesystem refuses the sync"
expect_grep "$tmp/err" "audit after the commands failed: .*bad checksum" "the audit's reason"

# --- bad input: a clear line, non-zero at the end; as xfs_io, the other
#     commands still run (the pwrite before the unknown word, the stat
#     after it)
cp "$img" "$tmp/before"
expect_status 2 "unknown command" -- run io "file:$img" -c "open data" -c "pwrite -S 1 0 4k" \
	-c "frobnicate 1" -c stat
expect_grep "$tmp/err" '^command "frobnicate" not found$' "names the unknown word"
expect_grep "$tmp/out" '^stat.size = 8100$' "the command after it ran"
cmp -s "$img" "$tmp/before" && bad "the pwrite before the unknown word did not run" || ok
expect_status 2 "bad number" -- run io mem:64m -c "pwrite 0 12q" -c "pwrite 0 1"
expect_grep "$tmp/out" "^non-numeric length argument -- 12q$" "bad number said as xfs_io says it"
expect_grep "$tmp/out" '^wrote 1/1 bytes at offset 0$' "the next command ran"
expect_status 2 "bad spec" -- run io foo:1g -c stat
expect_status 2 "bad size" -- run mkfs mem:12x
expect_status 2 "no device" -- run fsck
expect_status 4 "not an image" -- run fsck mem:1m
expect_status 2 "unknown subcommand" -- run frobnicate
expect_status 2 "bad mkfs option" -- run mkfs -m maxrecs=2 mem:1m
# a device too small for the layout is bad input, and says by how much
# (at 64 KiB a block the default journal of 256 blocks is 16 MiB)
expect_status 2 "mkfs on a device too small" -- run mkfs -m bs=64k mem:8m
expect_grep "$tmp/err" 'needs 264 blocks of 65536 bytes up to the inode table \(a journal of 256 blocks\), more than the device.s 128: a smaller journal' "mkfs says what does not fit"
expect_status 3 "run on a device too small" -- run run --ops 10 --dev mem:8m --mkfs bs=64k
expect_grep "$tmp/err" 'mem:8m: cannot format: the filesystem needs' "run says what does not fit"
for c in mkfs fsck io mount; do
	expect_status 0 "$c --help" -- run "$c" --help
	expect_grep "$tmp/out" '^usage: fsoracle' "$c --help"
done

# --- the same commands through xfs_io and through fsoracle io print the
#     same text.  On XFS (an image file, mkfs.xfs, a loop mount: root
#     only, within a minute) both run a script over f0 after a first one
#     wrote g, and stdout and stderr must match line for line after
#     normalising only what must differ: the timing half of the rate
#     lines, inode numbers, the times stat -v prints (the engine keeps
#     none), the has-xattr flag (XFS here labels every file; the engine
#     has no xattrs), and device block numbers in bmap/fiemap rows (with
#     the padding they widen).  Without XFS, xfs_io on this machine's
#     filesystem must leave the same bytes.
xfs_norm() { # the normalisation above, of one output
	sed -E 's/; [0-9.]+ sec \(.*\)$/; T/; s/^stat\.ino = .*/stat.ino = I/
		/^stat\.[amcb]time = /d
		s/^(fsxattr\.xflags = 0x)8000000?/\1/; s/^(fsxattr\.xflags = .*\[[-a-zA-Z]{16})X\]/\1-]/
		s/^([-a-zA-Z]{16})X([ /])/\1-\2/
		s/\[has-xattr\]/[]/; s/, has-xattr//
		/^[ \t]*[0-9]+: \[/{s/[0-9]+\.\.[0-9]+( +[0-9]+ \()[0-9]+\.\.[0-9]+\)/B..B\1B..B)/
			s/(\]:? +)[0-9]+\.\.[0-9]+/\1B..B/; s/ +/ /g}' "$1"
}
xfs_same() { # xfs_same DESC PREP -- CMDS...: PREP ';'-separated, on g
	local desc=$1 prep=() cmds=() c
	IFS=';' read -ra c <<<"$2"; shift 3
	for x in "${c[@]}"; do prep+=(-c "$x"); done
	for x in "$@"; do cmds+=(-c "$x"); done
	rm -f "$xfs_mnt"/f0 "$xfs_mnt"/g "$tmp/compat.img"
	(cd "$xfs_mnt" && timeout 60 xfs_io -f "${prep[@]}" g >/dev/null 2>&1 &&
		timeout 60 xfs_io -f "${cmds[@]}" f0 >"$tmp/x.out" 2>"$tmp/x.err")
	run mkfs -m reflink=1 "file:$tmp/compat.img,size=64m" >/dev/null &&
		run io "file:$tmp/compat.img" -c "open -f g" "${prep[@]}" >/dev/null 2>&1
	run io "file:$tmp/compat.img" -c "open -f f0" "${cmds[@]}" >"$tmp/f.out" 2>"$tmp/f.err"
	if [ -s "$tmp/x.out" ] && diff <(xfs_norm "$tmp/x.out") <(xfs_norm "$tmp/f.out") >"$tmp/d.out" &&
	   diff "$tmp/x.err" "$tmp/f.err" >"$tmp/d.err"; then ok; else
		bad "$desc: xfs_io on XFS and fsoracle io print different text"
		head -20 "$tmp/d.out" "$tmp/d.err" 2>/dev/null | sed 's/^/    /'; fi
}
xfs_why=
if ! command -v xfs_io >/dev/null || ! command -v mkfs.xfs >/dev/null; then
	xfs_why="xfs_io or mkfs.xfs not installed (xfsprogs)"
elif [ "$(id -u)" -ne 0 ]; then
	xfs_why="not root: no loop mount"
else
	truncate -s 320m "$tmp/xfs.img" && mkfs.xfs -q -f "$tmp/xfs.img" 2>"$tmp/mkfs.err" &&
		mkdir -p "$tmp/xfs" && timeout 60 mount -o loop "$tmp/xfs.img" "$tmp/xfs" 2>"$tmp/mount.err" &&
		xfs_mnt=$tmp/xfs ||
		xfs_why="no XFS loop mount here: $(cat "$tmp/mkfs.err" "$tmp/mount.err" 2>/dev/null | head -1)"
fi
if [ -n "$xfs_mnt" ]; then
	xfs_same "pwrite, pread, stat, maps, seek, remaps, errors" "pwrite -S 0x11 0 64k;fsync" -- \
		"falloc 0 1m" "pwrite -S 0x11 0 64k" "pwrite 128k 64k" "pwrite -b 3000 300k 10000" \
		"pwrite -w 400k 4k" "pwrite -W 404k 4k" "pwrite -D -b 1k 408k 4k" "fsync" \
		"seek -a 0" "seek -a -r 0" "seek -a -r -s 0" "seek -d 64k" "seek -h 0" "seek -h -r 0" \
		"seek -d 2m" "bmap" "bmap -v" "bmap -vp" "fiemap" "fiemap -v" "fiemap -l" \
		"pread 0 100000" "pread -b 64k 0 100000" "pread 2m 10" "pread 1000 1500" \
		"pread -v 65530 12" "stat" "stat -v" "statx" "lsattr" "lsattr -v" "lsattr -a" \
		"reflink g 0 512k 64k" "dedupe g 0 640k 4k" "dedupe g 0 0 4k" \
		"bmap -v" "fiemap -v" "stat" "reflink g" "copy_range -s 4k -d 8k -l 4k g" \
		"copy_range -d 1m g" "pread -v 1052670 4" "fpunch 0 0" "fzero 0 0" "truncate x" \
		"fcollapse 1 1" "finsert 1 1" "falloc x 1" "pwrite 0 y" "reflink g x 0 1" \
		"frobnicate" "sync_range 0 4k" "fadvise -d 0 4k" "help quit" \
		"pwrite -V 2 -b 4k 0 16k" "quit" "stat"
	xfs_same "copy_range of a whole file, into a longer one" "pwrite -S 0x22 0 20000" -- \
		"pwrite 0 64k" "copy_range g" "pread -v 19990 12" "copy_range -s 4k g" "pread 0 1m"
	xfs_same "fiemap ranges, seek around EOF, truncate" "pwrite -S 0x11 0 4k" -- \
		"falloc 0 1m" "pwrite 64k 64k" "pwrite 512k 4k" "fsync" "fiemap 64k 64k" \
		"fiemap -v 100k" "fiemap -l 0 4k" "seek -d -s 700k" "seek -h 1m" "seek -a -r 520k" \
		"truncate 100000" "seek -a -r 0" "seek -a -r -s 0" "seek -h -r 0" "seek -a 70000" \
		"fiemap -v" "pread -v 99990 20" "truncate 0" "bmap" "bmap -v" "fiemap" "fiemap -v" \
		"seek -a 0" "pwrite 0 5000" "seek -a -r 0" "seek -h 4096" "fiemap -v 4096"
	rm -f "$xfs_mnt"/f0
	(cd "$xfs_mnt" && timeout 60 xfs_io -f -d -c "pwrite 0 4k" -c "pwrite 1 512" -c "pwrite 512 512" \
		-c "pread 0 512" -c "pread 1 512" -c "stat" f0 >"$tmp/x.out" 2>"$tmp/x.err")
	run io mem:64m -c "open -fd f0" -c "pwrite 0 4k" -c "pwrite 1 512" -c "pwrite 512 512" \
		-c "pread 0 512" -c "pread 1 512" -c "stat" >"$tmp/f.out" 2>"$tmp/f.err"
	if [ -s "$tmp/x.out" ] && diff <(xfs_norm "$tmp/x.out") <(xfs_norm "$tmp/f.out") >"$tmp/d.out" &&
	   diff "$tmp/x.err" "$tmp/f.err" >"$tmp/d.err"; then ok; else
		bad "O_DIRECT: xfs_io -d on XFS and fsoracle io open -d print different text"
		head -20 "$tmp/d.out" "$tmp/d.err" | sed 's/^/    /'; fi
	# the comparison must be able to fail: a changed size is caught
	sed -i 's/^stat.size = .*/stat.size = 1/' "$tmp/f.out"
	if diff <(xfs_norm "$tmp/x.out") <(xfs_norm "$tmp/f.out") >/dev/null; then
		bad "the normalisation hides a changed stat.size"; else ok; fi
else
	echo "skip: xfs_io text on XFS ($xfs_why); comparing the bytes on this machine's filesystem"
fi
if command -v xfs_io >/dev/null; then
	cmds=(-c "pwrite -S 0x11 0 100k" -c "truncate 5000" -c "pwrite -S 0x22 70000 3000"
	      -c "falloc -k 0 200k" -c "fpunch 1000 2000" -c "fzero 60000 12000"
	      -c "truncate 90000" -c "pwrite 8191 2" -c "pread -v 0 90000")
	: >"$tmp/host"
	xfs_io "${cmds[@]}" "$tmp/host" 2>&1 | grep -E '^[0-9a-f]{8}:' >"$tmp/want"
	run io mem:64m "${cmds[@]}" 2>&1 | grep -E '^[0-9a-f]{8}:' >"$tmp/got"
	if [ -s "$tmp/want" ] && cmp -s "$tmp/want" "$tmp/got"; then ok; else
		bad "fsoracle io and xfs_io disagree"; diff "$tmp/want" "$tmp/got" | head -5; fi
else
	echo "skip: xfs_io not installed (xfsprogs)"
fi

# --- a realtime device: an empty file made realtime allocates whole rt
#     extents (untouched blocks unwritten), a truncate-down tail reads zero
#     after extension, and the image mounts only with its rt device
expect_status 0 "io rt" -- run io -r mem:64m -m rtextsize=16k mem:64m -c "chattr +r" \
	-c "pwrite -S 0xab 5000 3000" -c "bmap -vp" -c statfs -c lsattr
expect_grep "$tmp/out" '^ EXT: FILE-OFFSET      RT-BLOCK-RANGE   TOTAL FLAGS$' "rt bmap header"
expect_grep "$tmp/out" '^   0: \[0\.\.7\]:          0\.\.7                 8 010000$' "rt padding before"
expect_grep "$tmp/out" '^   1: \[8\.\.15\]:         8\.\.15                8 000000$' "rt written block"
expect_grep "$tmp/out" '^   2: \[16\.\.31\]:        16\.\.31              16 010000$' "rt padding after"
expect_grep "$tmp/out" '^rp--------------- f0 $' "lsattr: realtime, unwritten blocks"
expect_grep "$tmp/out" '^statfs.f_rtbfree = 16380$' "rt free blocks"
rtimg="$tmp/rtimg" rtdev="$tmp/rtdev"
expect_status 0 "mkfs rt" -- run mkfs -r "file:$rtdev,size=16m" -m rtextsize=64k "file:$rtimg,size=32m"
expect_status 0 "write rt" -- run io -r "file:$rtdev" "file:$rtimg" -c "open -f data" \
	-c "chattr +r" -c "pwrite -S 0x5a 0 200k" -c "truncate 5000" -c counters
expect_grep "$tmp/out" '^rt_extents_freed = 3$' "truncate frees whole rt extents only"
expect_status 2 "rt image without its rt device" -- run io "file:$rtimg" -c stat
expect_grep "$tmp/err" 'has a realtime device' "names the missing device"
expect_status 0 "rt tail after extension" -- run io -r "file:$rtdev" "file:$rtimg" \
	-c "open data" -c "truncate 100k" -c "pread -v 4992 16"
expect_grep "$tmp/out" '^00001380:  5a 5a 5a 5a 5a 5a 5a 5a 00 00 00 00 00 00 00 00' "rt tail reads zero"
expect_status 0 "fsck rt image" -- run fsck -r "file:$rtdev" "file:$rtimg"
expect_grep "$tmp/out" 'clean' "fsck -r says clean"
expect_status 2 "fsck rt image without -r" -- run fsck "file:$rtimg"
expect_grep "$tmp/err" 'realtime device' "fsck names the missing rt device"
expect_status 1 "chattr +r on a file with data" -- run io -r mem:64m mem:64m \
	-c "pwrite -S 1 0 1" -c "chattr +r"
expect_grep "$tmp/err" '^chattr: cannot set flags on f0: Invalid argument$' "chattr refused"
expect_status 2 "rtextsize without -r" -- run mkfs -m rtextsize=64k mem:64m
# the data device's own file as its realtime device: realtime writes
# overwrote the inode table (mkfs and io took it, fsck then found the
# filesystem destroyed); refused, through a symlink too
expect_status 2 "mkfs -r the data device's file" -- run mkfs -r "file:$tmp/same.img,size=8m" "file:$tmp/same.img"
expect_grep "$tmp/err" "realtime device file:$tmp/same.img,size=8m is the data device's file too" "mkfs says why"
ln -sf "$rtimg" "$tmp/rtimg.link"
expect_status 2 "io -r the data device's file" -- run io -r "file:$tmp/rtimg.link" "file:$rtimg" -c stat
expect_grep "$tmp/err" "is the data device's file too" "io says why"
expect_status 2 "fsck -r the data device's file" -- run fsck -r "file:$rtimg" "file:$rtimg"
expect_grep "$tmp/err" "is the data device's file too" "fsck says why"
expect_status 0 "the image is as it was" -- run fsck -r "file:$rtdev" "file:$rtimg"
expect_status 0 "run with rt" -- run run --seed 1 --ops 5000 -q --targets engine,model \
	--rtdev mem:64m --mkfs rtextsize=16k

# --- twins: the engine, naive and fallback targets compared beyond what a
#     reader sees when a log's check= asks.  Under delalloc the fallback of
#     the delalloc path allocates at the write (direct I/O), the optimized
#     path at writeback: the same bytes, other block counts until then
printf '#! fsoracle dev=mem:8m mkfs=reflink=1 mount=delalloc targets=engine,fallback,model check=twins=stat+free\npwrite 0 1\nwriteback\n' \
	>"$tmp/twins.ops"
expect_status 15 "twins differ in block counts" -- run replay --log - "$tmp/twins.ops"
expect_grep "$tmp/err" '^twin state mismatch|^fsoracle: twin state mismatch \(exit 15\) between engine:mem:8m \(good\) and fallback:mem:8m' "the twins named"
expect_grep "$tmp/err" 'the size or block count of f0 differ .*check twins=stat' "the part and file named"
sed 's/ check=[^ ]*//' "$tmp/twins.ops" >"$tmp/twins0.ops"
expect_status 0 "without check= only what a reader sees" -- run replay "$tmp/twins0.ops"
expect_status 15 "--check asks the same" -- run replay --check twins=stat --log - "$tmp/twins0.ops"
expect_status 2 "a bad --check" -- run replay --check twins=size "$tmp/twins0.ops"
expect_grep "$tmp/err" "unknown twin part 'size'" "the bad part named"
printf 'pwrite 0 8k\nreflink f0 0 8k 8k\npwrite 9k 1\n' >"$tmp/cow.ops"
expect_status 0 "cow twins agree on all" -- run replay --targets naive,engine,fallback,model \
	--mkfs reflink=1,bs=1k --mount pagecache=0 --check each,twins=all "$tmp/cow.ops"
# the delalloc fallback writes at the pwrite, the optimized path later
expect_status 15 "delalloc twins write other images" -- run replay --check twins=image \
	--log - "$tmp/twins0.ops"
expect_grep "$tmp/err" 'the device images differ .*check twins=image' "the image part named"
# twins whose trees came apart (small nodes): where blocks lie is compared
# no more from there, and the summary says so (it was a false exit 15)
expect_status 0 "twins whose trees came apart" -- run replay \
	corpus/regressions/twins-whose-trees-came-apart-place-blocks-elsewhere.ops
expect_grep "$tmp/out" "twins' trees came apart, and in the last 1 op\(s\), from the first where their blocks lay elsewhere, they were compared by size and block count only" "replay says the trees came apart"
# the forget twins write the same image, before a cut and after recovery
printf '#! fsoracle dev=mem:512k mkfs=bs=1024,maxrecs=4,inodes=16,journal=256 mount=data=ordered targets=naive,engine,fallback check=twins=image\nchattr +j\npwrite 0 3k\nsync\nunlink f0\nfile f1\npwrite 0 5k\nfsync\npwrite 1k 2k\n%s\n' \
	crash >"$tmp/forget.ops"
expect_status 0 "forget twins: one image, recovery from a crash too" -- run replay "$tmp/forget.ops"
sed 's/^crash$/cut 0 7/' "$tmp/forget.ops" >"$tmp/forget-cut.ops"
expect_status 0 "... and from a cut" -- run replay "$tmp/forget-cut.ops"

# --- running out of memory is no finding (exit 16): a model that cannot
#     hold 120 MiB next to the engine's 128 MiB device, under a limit of
#     about twice the device (valgrind needs far more room: not under it)
if [ -z "${VALGRIND:-}" ]; then
	printf '#! fsoracle dev=mem:128m\npwrite 0 120m\nfsync\n' >"$tmp/nomem.ops"
	limited() { bash -c 'ulimit -v 210000 && exec "$@"' limited "$FSO" "$@"; }
	expect_status 16 "out of memory replaying" -- limited replay --log "$tmp/nomem.fail.ops" "$tmp/nomem.ops"
	expect_grep "$tmp/err" '^fsoracle: out of memory \(not a finding\) \(exit 16\)$' "out of memory, said so"
	expect_grep "$tmp/err" 'returned -ENOMEM on model but [0-9]+ on engine:mem:128m' "who ran out"
	expect_grep "$tmp/err" "an allocation failed there, under this process's memory limit: no finding" "what it means"
	expect_nogrep "$tmp/err" 'shrink:' "nothing to shrink"
	expect_status 0 "the log replays with the memory it needs" -- run replay "$tmp/nomem.fail.ops"
	expect_status 1 "minimize: nothing to minimize" -- limited minimize -q "$tmp/nomem.ops"
	expect_grep "$tmp/err" 'ran out of memory replaying it \(exit 16\), which is no finding' "minimize says why"
fi

# --- swarm rounds: a failing round's log records its draw and replays as is
expect_status 10 "swarm run finds a planted bug" -- run run --seed 2 --ops 20000 \
	--round 500 --jobs 1 -q --targets engine,planted:punch_short --log "$tmp/swarm.ops"
expect_grep "$tmp/swarm.ops" '^# swarm round 7: kinds ' "the failing round is the seventh"
expect_grep "$tmp/swarm.ops" '^# swarm round [0-9]+: kinds ' "the log says what the round drew"
expect_grep "$tmp/swarm.ops" '^#! fsoracle .*mount=[a-z]' "the header has the round's mount options"
expect_status 10 "the swarm log replays as is" -- run replay --log "$tmp/swarm.fail.ops" "$tmp/swarm.ops"
expect_grep "$tmp/swarm.ops" '^#! fsoracle .*mkfs=([^ ]*,)?inodes=64[ ,]' "the inode table is sized to 4 files"
expect_status 10 "a table for 8 files" -- run run --seed 4 --ops 20000 --files 8 \
	--round 500 -q --targets engine,planted:punch_short --log "$tmp/swarm8.ops"
expect_grep "$tmp/swarm8.ops" '^#! fsoracle .*mkfs=([^ ]*,)?inodes=128[ ,]' "16 inode slots a file"
expect_status 10 "inodes= given is kept" -- run run --seed 4 --ops 20000 --mkfs inodes=40,bs=2k \
	--round 500 -q --targets engine,planted:punch_short --log "$tmp/swarm40.ops"
expect_grep "$tmp/swarm40.ops" '^#! fsoracle .*mkfs=inodes=40,bs=2k[ ,]' "... and not added to"
# --- --jobs: rounds side by side in worker processes, each round the
#     same as one job runs it (the counts agree), a failure's log named
#     as --log says and replaying; what cannot be shared is refused
expect_status 0 "two jobs" -- run run --seed 3 --ops 12000 --round 2000 \
	--targets engine,model --jobs 2
expect_grep "$tmp/err" '^  2 jobs: worker processes run the rounds side by side' "run says it has two jobs"
expect_grep "$tmp/err" 'all agreed after 12000 ops .*; 2 jobs, [0-9]+ ops/s each\)$' "the summary counts both"
sed -n 's/.*checked ops\/s (\([^;]*\);.*/\1/p' "$tmp/err" >"$tmp/jobs2"
expect_status 0 "one job" -- run run --seed 3 --ops 12000 --round 2000 \
	--targets engine,model --jobs 1
sed -n 's/.*checked ops\/s (\([^)]*\)).*/\1/p' "$tmp/err" >"$tmp/jobs1"
if [ -s "$tmp/jobs1" ] && cmp -s "$tmp/jobs1" "$tmp/jobs2"; then ok; else
	bad "one job and two ran other rounds: '$(cat "$tmp/jobs1")' vs '$(cat "$tmp/jobs2")'"; fi
expect_status 10 "two jobs find a planted bug" -- run run --seed 4 --ops 20000 \
	--round 500 --jobs 2 -q --targets engine,planted:punch_short --log "$tmp/jobs.ops"
expect_grep "$tmp/err" "op log \([0-9]+ ops\) written to $tmp/jobs\.ops" "the first failure takes --log's name"
expect_status 10 "... which replays" -- run replay --log "$tmp/jobs.fail.ops" "$tmp/jobs.ops"
# the reproduce line's --ops runs the rounds up to the failure again, with
# one job too; here the failure is found at the end of its round
expect_status 10 "two jobs, a failure found at a round's end" -- run run --seed 4 \
	--ops 20000 --round 500 --jobs 2 -q --targets engine,planted:punch_short \
	--verify-every 100000 --audit-every 100000 \
	--weights remount=0,crash=0,cut=0,pread=0 --log "$tmp/jobs-end.ops"
upto=$(sed -n 's/.*reproduce: fsoracle run --seed 4 --ops \([0-9]*\) .*/\1/p' "$tmp/err")
expect_status 10 "... repeats with the reproduce line's --ops ($upto), one job" -- \
	run run --seed 4 --ops "${upto:-1}" --round 500 --jobs 1 -q \
	--targets engine,planted:punch_short --verify-every 100000 \
	--audit-every 100000 --weights remount=0,crash=0,cut=0,pread=0 \
	--log "$tmp/jobs-end1.ops"
expect_status 2 "--jobs with a faulty layer" -- run run --seed 1 --ops 30000 --jobs 2 \
	--dev "faulty[read=2000]:mem:64m"
expect_grep "$tmp/err" 'has a faulty layer, whose I/O counts run across rounds' "... says why"
expect_status 2 "--jobs 0" -- run run --seed 1 --ops 100 --jobs 0
expect_grep "$tmp/err" "--jobs: bad count '0'" "--jobs 0 is refused"
expect_status 2 "--jobs with --export-fsx" -- run run --seed 1 --ops 30000 --jobs 2 \
	--export-fsx "$tmp/j.fsxops"
expect_grep "$tmp/err" 'export-fsx writes one stream of ops, from one job' "... says why"
expect_status 2 "--jobs on a file: device" -- run run --seed 1 --ops 30000 --jobs 2 \
	--dev "file:$tmp/jobs.img,size=64m"
expect_grep "$tmp/err" 'keeps its bytes on a persistent device, which every worker would share' "... says why"
expect_status 0 "--no-swarm" -- run run --seed 1 --ops 3000 --no-swarm -q
expect_nogrep "$tmp/err" 'swarm rounds' "--no-swarm runs the fixed mix"
expect_status 0 "swarm by default" -- run run --seed 1 --ops 3000 -q
expect_grep "$tmp/err" 'swarm rounds of 10000 ops' "run says it draws swarm rounds"

# --- fsx export: a passing soak goes out as an .fsxops log whose every
#     line keeps to fsx's grammar and limits, and whose replay line
#     carries the -N, -l and -o it needs; it replays here as it ran.
#     Real fsx (xfstests ltp/fsx) is not packaged in Debian, so it runs
#     only where FSX=/path/to/fsx is given (as root, on a scratch dir).
fsx_grammar() { # fsx_grammar LOG: 0 if every line is one fsx replays
	awk '
	function hex(s,  v, i) { v = 0; for (i = 3; i <= length(s); i++)
		v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
	/^# replay: fsx / { for (i = 1; i <= NF; i++) { if ($i == "-N") n = $(i+1)
		if ($i == "-l") l = $(i+1); if ($i == "-o") o = $(i+1) } next }
	/^#/ { next }
	{ lines++
	  four = $1 ~ /^(copy|clone|dedupe|exchange)_range$/
	  if ($1 !~ /^(read|write|truncate|fallocate|punch_hole|zero_range|collapse_range|insert_range|copy_range|clone_range|dedupe_range|exchange_range)$/) { print "op: " $0; bad = 1 }
	  for (i = 2; i <= 4 + four; i++) if ($i !~ /^0x[0-9a-f]+$/) { print "number: " $0; bad = 1 }
	  for (i = 5 + four; i <= NF; i++) if ($i != "close_open" && !($i == "keep_size" && $1 ~ /^(fallocate|zero_range)$/) && !($i == "unshare" && $1 == "fallocate")) { print "flag: " $0; bad = 1 }
	  len = hex($3); end = hex($2) + len
	  if (four) end = hex($4) + len
	  if ($1 == "truncate") end = len
	  if (len > o + 0 || end > l + 0) { print "past -o " o " or -l " l ": " $0; bad = 1 } }
	END { if (!n || lines != n) { print "-N " n ", " lines " op lines"; bad = 1 }
	      exit bad }' "$1"
}
expect_status 0 "run --export-fsx" -- run run --seed 3 --ops 4000 -q --export-fsx "$tmp/soak.fsxops"
expect_grep "$tmp/err" 'fsx log: .*soak.fsxops, [1-9][0-9]* op lines' "run says where the fsx log went"
expect_grep "$tmp/soak.fsxops" '^# replay: fsx -q -N [0-9]+ -l [0-9]+ -o [0-9]+ --replay-ops' "replay line with -N, -l, -o"
expect_nogrep "$tmp/soak.fsxops" '^fsync' "no fsync line fsx would run without -i"
if fsx_grammar "$tmp/soak.fsxops" >"$tmp/gram"; then ok; else
	bad "exported soak breaks fsx's grammar"; head -5 "$tmp/gram"; fi
printf 'write 0x0 0x20000 0x0\n# replay: fsx -q -N 1 -l 131072 -o 65536\n' >"$tmp/over.fsxops"
if fsx_grammar "$tmp/over.fsxops" >/dev/null; then bad "grammar check passes an op past -o"; else ok; fi
expect_status 0 "the exported soak replays" -- run replay --targets engine,model "$tmp/soak.fsxops"
expect_status 2 "--export-fsx with --files 2" -- run run --ops 10 --files 2 --export-fsx "$tmp/x.fsxops"
expect_status 3 "run --export-fsx into a missing directory" -- run run --ops 10 -q --export-fsx "$tmp/nodir/x.fsxops"
expect_grep "$tmp/err" 'export-fsx: cannot write .*nodir/x.fsxops: No such file or directory' "run says the fsx log cannot be written"
expect_nogrep "$tmp/err" 'all agreed' "run soaked nothing for an fsx log it cannot write"
printf 'open -f a\npwrite 0 80k\nfsync\nopen -f b\npwrite 4k 4k\nfile a\npread 0 8k\n' >"$tmp/two.ops"
expect_status 0 "decode --to fsx, one log per file" -- run decode --format text --to fsx -o "$tmp/two.fsxops" "$tmp/two.ops"
expect_grep "$tmp/two.a.fsxops" '^write 0x0 0x14000 0x0$' "a's log"
expect_grep "$tmp/two.a.fsxops" '^#fsync 0x0 0x0 0x14000$' "a's fsync as a comment"
expect_grep "$tmp/two.a.fsxops" '^# replay: fsx -q -N 2 -l 81920 -o 81920 ' "a's replay line"
expect_grep "$tmp/two.b.fsxops" '^write 0x1000 0x1000 0x0$' "b's log"
fsx_grammar "$tmp/two.a.fsxops" >/dev/null && fsx_grammar "$tmp/two.b.fsxops" >/dev/null && ok ||
	bad "per-file logs break fsx's grammar"
printf 'open -f a\npwrite 0 8k\nopen -f b\ncopy_range -s 0 -d 0 -l 4k a\n' >"$tmp/tied.ops"
expect_status 2 "decode --to fsx, files tied by copy_range" -- run decode --format text --to fsx -o "$tmp/tied.fsxops" "$tmp/tied.ops"
expect_grep "$tmp/err" 'ties a to b' "names the op that ties the files"
if [ -n "${FSX:-}" ]; then
	mkdir -p "$tmp/fsxdir"
	eval "set -- $(sed -n 's/^# replay: fsx \(.*\) --replay-ops.*/\1/p' "$tmp/soak.fsxops")"
	if "$FSX" "$@" --replay-ops "$tmp/soak.fsxops" "$tmp/fsxdir/testfile" >"$tmp/fsx.out" 2>&1; then ok; else
		bad "real fsx does not replay the exported soak"; tail -5 "$tmp/fsx.out"; fi
else
	echo "skip: real fsx replay (xfstests is not packaged here; set FSX=/path/to/ltp/fsx)"
fi

# --- devices: the grammar, descriptions, bad specs
expect_status 0 "devices grammar" -- run devices
expect_grep "$tmp/out" 'zoned:mem' "grammar names zoned:mem"
expect_grep "$tmp/out" 'zoned:null' "grammar names zoned:null"
expect_grep "$tmp/out" 'crash' "grammar names the crash layer"
expect_status 0 "devices describe" -- run devices mem:1m zoned:mem,size=64m,zone=8m
expect_grep "$tmp/out" '^mem:1m: ' "describes mem:1m"
expect_grep "$tmp/out" '^zoned:mem,size=64m,zone=8m: ' "describes the zoned device"
expect_status 0 "devices describe zoned:null" -- run devices zoned:null,size=32g,zone=16g,append_max=672k
expect_grep "$tmp/out" 'over null .data dropped, reads zeros' "says zoned:null stores no data"
expect_status 2 "devices bad spec" -- run devices mem:1m bogus:1
expect_grep "$tmp/err" "bogus:1" "names the bad spec"
expect_grep "$tmp/out" '^mem:1m: ' "still describes the good one"

# --- the seed-path switches as mount options
expect_status 0 "naive= mount option" -- run io -o naive=rt_truncate,forget,cache=64 mem:64m \
	-c "pwrite -S 1 0 8k" -c "truncate 100" -c stat
expect_grep "$tmp/out" '^stat.size = 100$' "naive mount works"
expect_status 2 "naive= unknown path" -- run io -o naive=nosuch mem:64m -c stat
expect_grep "$tmp/err" "nosuch" "names the unknown path"

# --- reflink and a realtime device do not go together: say so
expect_status 2 "mkfs reflink with rt" -- run mkfs -r mem:64m -m reflink=1 mem:64m
expect_grep "$tmp/err" 'reflink cannot go with a realtime device' "mkfs names the conflict"
expect_status 2 "io reflink with rt" -- run io -m reflink=1 -r mem:64m mem:64m -c stat
expect_grep "$tmp/err" 'reflink cannot go with a realtime device' "io names the conflict"

# --- exchangerange swaps two files' ranges (sizes stay); bmap -c lists
#     the COW fork: a write to a shared block leaves unwritten staging
#     preallocated after it, as xfs_io -c 'bmap -c' shows it
expect_status 0 "exchangerange" -- run io mem:64m -c "open -f a" \
	-c "pwrite -S 0x61 0 8k" -c "open -f b" -c "pwrite -S 0x62 0 16k" \
	-c "exchangerange -s 0 -d 4k -l 8k a" -c "pread -v 4k 16" -c stat \
	-c "open a" -c "pread -v 0 16" -c stat
expect_grep "$tmp/out" '^00001000:  61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61  a{16}$' "b holds a's bytes"
expect_grep "$tmp/out" '^00000000:  62 62 62 62 62 62 62 62 62 62 62 62 62 62 62 62  b{16}$' "a holds b's bytes"
expect_grep "$tmp/out" '^stat.size = 16384$' "b keeps its size"
expect_grep "$tmp/out" '^stat.size = 8192$' "a keeps its size"
expect_status 1 "exchangerange unaligned" -- run io mem:64m -c "pwrite 0 16k" \
	-c "open -f b" -c "pwrite 0 16k" -c "exchangerange -s 0 -d 0 -l 3k f0"
expect_grep "$tmp/err" '^exchangerange: Invalid argument$' "exchangerange says why"
expect_status 0 "bmap -c" -- run io -m reflink=1 mem:64m -c "open -f a" \
	-c "pwrite -S 1 0 32k" -c "open -f b" -c "reflink a 0 0 32k" \
	-c "pwrite -S 2 4k 4k" -c "bmap -c" -c "bmap -c -vp"
expect_grep "$tmp/out" '^	0: \[0\.\.15\]: hole$' "bmap -c: the hole before the staging"
expect_grep "$tmp/out" '^	1: \[16\.\.63\]: [0-9]+\.\.[0-9]+$' "bmap -c: the staging"
expect_grep "$tmp/out" '^   1: \[16\.\.63\]: +[0-9]+\.\.[0-9]+ +0 \([0-9.]+\) +48 010000$' "bmap -c -vp flags unwritten"
expect_status 1 "bmap -c without reflink" -- run io mem:64m -c "pwrite 0 4k" -c "bmap -c"
expect_grep "$tmp/err" '^bmap: Operation not supported$' "bmap -c needs reflink"
expect_status 2 "bmap bad flag" -- run io mem:64m -c "bmap -x"

# --- cutall: a power cut at every durability point of a log (the long
#     form of tests/test_corpus_cuts.c); a device that lies about an
#     fsync must make it fail
printf 'open -f f0\npwrite 0 40k\nfsync\nopen -f f1\npwrite 0 8k\nfsync\n' >"$tmp/cut.ops"
expect_status 0 "cutall --help" -- run cutall --help
expect_grep "$tmp/out" '^usage: fsoracle cutall' "cutall --help"
expect_status 0 "cutall" -- run cutall --device mem --subsets 2 "$tmp/cut.ops"
expect_grep "$tmp/out" '^cutall: 1 runs \(0 not cut, 0 errors\), [1-9][0-9]* points, [1-9][0-9]* cut, [1-9][0-9]* crash states checked, 0 failures' "cutall summary"
expect_status 1 "cutall on a lying device" -- run cutall --device mem --subsets 0 --lie-sync 1 "$tmp/cut.ops"
expect_grep "$tmp/out" 'size mismatch at recovery: f0' "cutall reports the lost fsynced file"
expect_status 0 "cutall a corpus log on every device" -- run cutall --whole --subsets 1 \
	"$(dirname "$0")/../corpus/regressions/fsync-survives-crash.ops"
expect_status 2 "cutall bad device" -- run cutall --device tape "$tmp/cut.ops"
expect_status 2 "cutall --point with two logs" -- run cutall --point 1 "$tmp/cut.ops" "$tmp/cut.ops"
printf 'pwrite 0 12q\n' >"$tmp/bad.ops"
expect_status 2 "cutall an unreadable log" -- run cutall --device mem "$tmp/bad.ops"
# a header asking for options that cannot be, and a point the log does
# not have, are bad input as in replay (they were exit 3, a run that
# could not be set up)
printf '#! fsoracle mkfs=bs=3\nfsync\n' >"$tmp/badhdr.ops"
expect_status 2 "cutall a log with a bad header" -- run cutall --device mem "$tmp/badhdr.ops"
expect_grep "$tmp/err" 'bs must be a power of two' "cutall names the bad header option"
expect_status 2 "cutall --point past the log's points" -- run cutall --device mem --point 999 "$tmp/cut.ops"
expect_grep "$tmp/err" 'point 999: the sequence has [0-9]+' "cutall says how many points there are"
# a directory given as a log says so (it was "Input/output error")
mkdir -p "$tmp/a-dir"
for c in replay minimize decode encode; do
	expect_status 2 "$c a directory" -- run $c "$tmp/a-dir"
	expect_grep "$tmp/err" 'a-dir: Is a directory$' "$c names a directory as one"
done
# a directory without .ops files is refused, not read as no logs given
# (which ran the default corpus of the current directory instead)
mkdir -p "$tmp/no-logs/corpus/regressions" "$tmp/no-logs/fuzz/seeds" "$tmp/empty"
cp "$tmp/cut.ops" "$tmp/no-logs/corpus/regressions/"
cp "$tmp/cut.ops" "$tmp/no-logs/fuzz/seeds/"
fso_abs=$(cd "$(dirname "$FSO")" && pwd)/$(basename "$FSO")
in_no_logs() { (cd "$tmp/no-logs" && FSO=$fso_abs run "$@"); }
expect_status 2 "cutall a directory without logs" -- in_no_logs cutall --device mem --subsets 0 "$tmp/empty"
expect_grep "$tmp/err" "empty: a directory without \\.ops files" "cutall says the directory has no logs"

# --- the version, `help CMD` as `CMD --help`, and the manual page made
#     from the help texts (docs/mkman.sh --check fails when they drift)
expect_status 0 "--version" -- run --version
expect_grep "$tmp/out" '^fsoracle [0-9]+\.[0-9]+\.[0-9]+$' "--version prints the release"
for c in $(run --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p'); do
	run help "$c" >"$tmp/help1" 2>&1
	run "$c" --help >"$tmp/help2" 2>&1
	if [ -s "$tmp/help1" ] && cmp -s "$tmp/help1" "$tmp/help2"; then ok; else
		bad "help $c differs from $c --help"; fi
done
expect_status 2 "help of no such command" -- run help nosuch
expect_grep "$tmp/err" "unknown command 'nosuch'" "help nosuch says why"
root=$(dirname "$0")/..
expect_status 0 "docs/fsoracle.1 matches the help texts" -- "$root/docs/mkman.sh" --check "$FSO"
if command -v man >/dev/null && command -v groff >/dev/null; then
	expect_status 0 "man -l renders docs/fsoracle.1" -- env MANWIDTH=80 man -l "$root/docs/fsoracle.1"
	expect_grep "$tmp/out" '^ +usage: fsoracle perf ' "man page has the perf section"
	expect_status 0 "docs/fsoracle.1 has no roff warnings" -- groff -ww -man -z "$root/docs/fsoracle.1"
	expect_nogrep "$tmp/err" '.' "groff warnings"
fi

# --- perf reports: JSON with the version; a garbage or truncated report
#     is a clear error, never a crash
if run perf --compare /dev/null /dev/null 2>&1 | grep -q 'no JSON library'; then
	echo "cli: perf JSON tests skipped: this build has no JSON library"
else
	printf '{"schema": "fsoracle-perf/1", "scenarios": [ {"id": "000"' >"$tmp/trunc.json"
	expect_status 2 "perf --compare a truncated report" -- run perf --compare "$tmp/trunc.json" "$tmp/trunc.json"
	expect_grep "$tmp/err" 'trunc.json: not valid JSON: line 1 col [0-9]+: unexpected end of the text \(truncated\?\)' "truncated report named"
	printf 'schema: fsoracle-perf/1\n' >"$tmp/words.json"
	expect_status 2 "perf --compare a non-JSON file" -- run perf --compare "$tmp/words.json" "$tmp/words.json"
	expect_grep "$tmp/err" 'words.json: not valid JSON: line 1 col 1: ' "garbage report named"
	mkdir -p "$tmp/dir.json"
	expect_status 2 "perf --compare a directory" -- run perf --compare "$tmp/dir.json" "$tmp/dir.json"
	expect_grep "$tmp/err" 'dir.json: Is a directory$' "perf names a directory as one"
	head -c 4096 /dev/urandom >"$tmp/noise.json"
	expect_status 2 "perf --compare random bytes" -- run perf --compare "$tmp/noise.json" "$tmp/noise.json"
	# reports that cannot be written and a baseline that is none are
	# refused before the run, not after it with its results lost
	expect_status 3 "perf --json into a missing directory" -- run perf 003 --quick --repeats 1 --json "$tmp/nodir/r.json"
	expect_grep "$tmp/err" 'nodir/r.json: cannot write: No such file or directory' "perf says --json cannot be written"
	expect_nogrep "$tmp/err" '^perf 003' "perf ran nothing for a --json it cannot write"
	expect_status 2 "perf --baseline that is not a report" -- run perf 003 --quick --repeats 1 --baseline "$tmp/words.json"
	expect_grep "$tmp/err" 'words.json: not valid JSON' "perf says the baseline is not JSON"
	expect_nogrep "$tmp/err" '^perf 003' "perf ran nothing for a bad --baseline"
	expect_status 0 "perf --json" -- run perf 003 --quick --repeats 3 --json "$tmp/r.json"
	expect_grep "$tmp/r.json" "^  \"fsoracle_version\": \"$(run --version | cut -d' ' -f2)\",$" "report carries the version"
	expect_status 0 "perf --compare a report with itself" -- run perf --compare "$tmp/r.json" "$tmp/r.json"
fi

printf 'x\n' >"$tmp/svg-file"
expect_status 3 "perf --svg on a file" -- run perf 003 --quick --repeats 1 --svg "$tmp/svg-file"
expect_grep "$tmp/err" 'svg-file: Not a directory' "perf says --svg is not a directory"
expect_nogrep "$tmp/err" '^perf 003' "perf ran nothing for an --svg it cannot write"

# --- one device file given once, two engine targets: each gets its own
#     (the shared file was a false data mismatch at op 608 of seed 1)
for dev in "pmem:$tmp/pm.img,size=64m" "file:$tmp/f.img,size=64m"; do
	expect_status 0 "run engine,naive,model on one --dev ${dev%%:*}" -- \
		run run --targets engine,naive,model --dev "$dev" --seed 1 \
		--ops 1000 -q --log "$tmp/shared.ops"
	expect_grep "$tmp/err" "made each engine target's own: naive:${dev%%:*}:$tmp/(pm|f)\\.img\\.naive1" \
		"run says which device the naive target took (${dev%%:*})"
done
[ -f "$tmp/pm.img.naive1" ] && [ -f "$tmp/f.img.naive1" ] && ok ||
	bad "the naive target's own device files are missing"
expect_status 2 "two engine targets naming one device file" -- \
	run run --targets "engine:file:$tmp/g.img,size=64m,naive:file:$tmp/g.img,size=64m,model" --ops 10 -q
expect_grep "$tmp/err" "another engine target's too" "the refusal says why"

# --- persistent memory promises 8-byte stores: the header is rewritten
#     behind a persisted copy in its block's second sector, so a 512-byte
#     block cannot live there (a torn superblock at a cut inside chattr
#     +j was "Structure needs cleaning" on recovery, found by the crash
#     fuzz target); mkfs, run and mount refuse it, saying why
expect_status 2 "mkfs bs=512 on pmem" -- run mkfs -m bs=512 "pmem:$tmp/p5.img,size=8m"
expect_grep "$tmp/err" "needs blocks of at least 1024 bytes" "the refusal says why"
expect_status 0 "mkfs bs=512 on a file" -- run mkfs -m bs=512 "file:$tmp/p5.img,size=8m"
expect_status 2 "fsck of a 512-byte-block image as pmem" -- run fsck "pmem:$tmp/p5.img,size=8m"
expect_grep "$tmp/err" "block size 512 on persistent memory" "fsck says why"
# a block device whose cuts tear in 8-byte units gets the same copy, so
# the same floor (its headers were torn: EUCLEAN at the next mount)
expect_status 2 "mkfs bs=512 on a device that tears sectors" -- \
	run mkfs -m bs=512 "crash[atomic=8]:mem:8m"
expect_grep "$tmp/err" "whose writes tear in units smaller than a sector" \
	"the refusal says why"
expect_status 0 "mkfs bs=1k on a device that tears sectors" -- \
	run mkfs -m bs=1k "crash[atomic=8]:mem:8m"
for s in 0 1 2 3 4 5 6 7; do
	printf '%s\n' "#! fsoracle dev=pmem:$tmp/pj.img,size=6228k mkfs=bs=1024,maxrecs=4,inodes=16,journal=64 targets=engine,model seed=1" \
		"cut 4 $s" "file f1" "chattr +j" "file f2" "pwrite 0 8k" "fsync" "cut 2 $s" "chattr +j" >"$tmp/pj.ops"
	expect_status 0 "cuts inside chattr +j on pmem, 1k blocks, seed $s" -- run replay "$tmp/pj.ops"
done

# --- a header torn on pmem by one cut, then its copy torn by the next:
#     recovery repaired the first tear in memory only, so the next
#     copy-first write overwrote the one whole copy and a cut in it left
#     both torn ("block 1: bad checksum" at the mount after the crash;
#     pmem-cuts seeds 7, 9, 11, ... of the 200-seed sweep, minimized);
#     now a header whose copy in place does not verify is written in
#     place first
printf '%s\n' "#! fsoracle dev=pmem:$tmp/pt.img,size=64m mount=pagecache=16 targets=engine,naive,model seed=7" \
	"cut 7 52027" "file f3" "pwrite 0 1" "remount" "cut 7 44090" "file f1" \
	"pwrite 0 1" "file f2" "fsync" "crash" >"$tmp/pt.ops"
expect_status 0 "a torn pmem header, then a cut in its copy's rewrite" -- run replay "$tmp/pt.ops"

# --- minimize's OUT: one that cannot be made is refused before the
#     replays, and one whose write fails is exit 3 with the log on stdout
#     (both were exit 0, "written to OUT", the minimal log lost)
printf '#! fsoracle targets=engine,planted:punch_short\npwrite 0 64k\nfpunch 1000 5000\npwrite 0 1\npread 0 64k\n' \
	>"$tmp/punch.ops"
expect_status 3 "minimize -o into a missing directory" -- run minimize -q -o "$tmp/nodir/min.ops" "$tmp/punch.ops"
expect_grep "$tmp/err" "cannot write $tmp/nodir/min.ops: No such file or directory" "minimize says OUT cannot be written"
expect_nogrep "$tmp/err" 'written to' "minimize claims no log written"
if [ -w /dev/full ]; then
	expect_status 3 "minimize -o a full device" -- run minimize -q -o /dev/full "$tmp/punch.ops"
	expect_grep "$tmp/err" 'cannot write the minimal log to /dev/full: No space left on device' "minimize says the write failed"
	expect_grep "$tmp/out" '^fpunch ' "the minimal log goes to stdout instead"
fi
expect_status 0 "minimize -o a file" -- run minimize -q -o "$tmp/punch.min.ops" "$tmp/punch.ops"
expect_grep "$tmp/punch.min.ops" '^# fsoracle: data mismatch' "the minimal log has its failure"

# --- an option without its value says so, whichever option of the
#     command's own it is (the last one tried used to decide)
for c in "minimize -o" "minimize --max-runs" "run --seed" "run --export-fsx" \
	"replay --log" "prop --trials" "cutall --subsets" "replay --targets"; do
	expect_status 2 "$c without a value" -- run $c
	expect_grep "$tmp/err" "${c#* } needs a value\$" "$c: needs a value"
done

# --- a bad --ab-plant is refused at once, in its own name (it used to
#     reach B as --plant, whose failed child read as a regression)
expect_status 2 "perf --ab-plant with a bad value" -- run perf --ab "$FSO" 000 --ab-plant 000=x
expect_grep "$tmp/err" '^fsoracle perf: --ab-plant takes SCENARIO=PCT' "--ab-plant names itself"

# --- data=writeback on a zoned realtime device: a commit that maps
#     appended rt extents flushes the realtime device first, in every
#     data mode; a lazy writeback commit flushed nothing, so a cut lost
#     the appends and left mapped rt extents above the write pointer
#     (audit: "rt extents allocated at or above the write pointer";
#     zoned-delalloc soak seed 24, minimized)
printf '%s\n' "#! fsoracle dev=mem:64m rt=zoned:mem,size=8m,zone=1m,cap=768k,append_max=672k,max_open=4,max_active=4 mount=data=writeback,pagecache=16,delalloc targets=engine,naive,model seed=24" \
	"file f1" "chattr +r" "file f3" "chattr +rc" "file f1" "pwrite 0 1596k" \
	"file f3" "copy_range -s 0 -d 0 -l 544k f1" "fpunch 0 460288" \
	"file f1" "truncate 0" "cut 0 0" >"$tmp/zw.ops"
expect_status 0 "a cut after a data=writeback commit on a zoned realtime device" -- run replay "$tmp/zw.ops"

# --- perf --sample, the A/B child: a list of points, a line each in order
#     (one process per round and build); every spec checked before any runs
expect_status 0 "perf --sample of two points" -- run perf --sample 000:0:8192:1,000:0:16384:0 --sample-reps 1
expect_grep "$tmp/out" '^[0-9.]+ 15 0 96 96 0$' "--sample: the optimized 8k point, counters exact"
expect_grep "$tmp/out" '^[0-9.]+ 15 393216 32 96 0$' "--sample: then the naive 16k point (32 x 12 KiB zeroed)"
if [ "$(wc -l <"$tmp/out")" -eq 2 ]; then ok; else bad "--sample: one line per point"; fi
for bad in "000:0:8192:1," "000:0:8192:1x" "000:0:8192:1,009:0:1:1" "000:0:8192:2"; do
	expect_status 2 "perf --sample $bad" -- run perf --sample "$bad" --sample-reps 1
	expect_grep "$tmp/err" "^fsoracle perf: --sample takes ID:VARIANT:PARAM:TWIN" "--sample $bad: refused"
	if [ -s "$tmp/out" ]; then bad "--sample $bad: ran a point"; else ok; fi
done

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
