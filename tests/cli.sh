#!/usr/bin/env bash
# tests/cli.sh - the fsoracle program as a user and a script see it:
# output formats, exit statuses, persistence, bad input, and agreement with
# xfs_io on this machine's own filesystem.
#
#   tests/cli.sh [PATH/TO/fsoracle]     (VALGRIND=1 runs every call under
#                                        valgrind, failing on any error)
set -u
FSO=${1:-out/fsoracle}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

run() { # run the program, under valgrind if asked
	if [ -n "${VALGRIND:-}" ]; then
		valgrind -q --error-exitcode=99 --leak-check=full \
			--errors-for-leak-kinds=definite "$FSO" "$@"
	else
		"$FSO" "$@"
	fi
}
ok()   { pass=$((pass + 1)); }
bad()  { fail=$((fail + 1)); echo "FAIL: $*"; }
expect_status() { # expect_status WANT DESC -- CMD...
	local want=$1 desc=$2; shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
	if [ "$got" -eq "$want" ]; then ok; else
		bad "$desc: exit $got, want $want"; sed 's/^/    /' "$tmp/err" | head -5; fi
}
expect_grep() { # expect_grep FILE REGEX DESC
	if grep -qE -- "$2" "$1"; then ok; else bad "$3: no /$2/ in output"; sed 's/^/    /' "$1" | head -10; fi
}
expect_nogrep() {
	if grep -qE -- "$2" "$1"; then bad "$3: unexpected /$2/"; else ok; fi
}

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

# --- null: keeps metadata only, so a 64 TiB device costs nothing
expect_status 0 "null:64t" -- run io null:64t -c "pwrite -S 1 0 1g" -c "truncate 5000" -c stat
expect_grep "$tmp/out" '^stat.size = 5000$' "null:64t stat"

# --- bmap shows unwritten extents; counters are printed by name
expect_status 0 "bmap" -- run io mem:64m -c "falloc 0 64k" -c "pwrite -S 1 0 4k" -c "bmap -v" -c counters
expect_grep "$tmp/out" 'unwritten' "bmap flags unwritten"
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

# --- bad input: one clear line, non-zero, nothing written
cp "$img" "$tmp/before"
expect_status 2 "unknown command" -- run io "file:$img" -c "pwrite -S 1 0 4k" -c "frobnicate 1"
cmp -s "$img" "$tmp/before" && ok || bad "a rejected script wrote to the image"
expect_status 2 "bad number" -- run io mem:1m -c "pwrite 0 12q"
expect_grep "$tmp/err" "command 1" "bad number names the command"
expect_status 2 "bad spec" -- run io foo:1g -c stat
expect_status 2 "bad size" -- run mkfs mem:12x
expect_status 2 "no device" -- run fsck
expect_status 4 "not an image" -- run fsck mem:1m
expect_status 2 "unknown subcommand" -- run frobnicate
expect_status 2 "bad mkfs option" -- run mkfs -m maxrecs=2 mem:1m
for c in mkfs fsck io; do
	expect_status 0 "$c --help" -- run "$c" --help
	expect_grep "$tmp/out" '^usage: fsoracle' "$c --help"
done

# --- the same commands through xfs_io on this machine's filesystem leave
#     the same bytes (pwrite -S only: xfs_io's default pattern differs)
if command -v xfs_io >/dev/null; then
	cmds=(-c "pwrite -S 0x11 0 100k" -c "truncate 5000" -c "pwrite -S 0x22 70000 3000"
	      -c "falloc -k 0 200k" -c "fpunch 1000 2000" -c "fzero 60000 12000"
	      -c "truncate 90000" -c "pwrite -S 0x33 8191 2" -c "pread -v 0 90000")
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
	-c "pwrite -S 0xab 5000 3000" -c "bmap -v" -c statfs
expect_grep "$tmp/out" 'RT-BLOCK-RANGE' "rt bmap header"
expect_grep "$tmp/out" '^ *0: \[0\.\.7\]: 0\.\.7 +8 010000 unwritten rt$' "rt padding before"
expect_grep "$tmp/out" '^ *1: \[8\.\.15\]: 8\.\.15 +8 000000 rt$' "rt written block"
expect_grep "$tmp/out" '^ *2: \[16\.\.31\]: 16\.\.31 +16 010000 unwritten rt$' "rt padding after"
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
expect_grep "$tmp/out" '^chattr: invalid argument$' "chattr refused"
expect_status 2 "rtextsize without -r" -- run mkfs -m rtextsize=64k mem:64m
expect_status 0 "run with rt" -- run run --seed 1 --ops 5000 -q --targets engine,model \
	--rtdev mem:64m --mkfs rtextsize=16k

# --- swarm rounds: a failing round's log records its draw and replays as is
expect_status 10 "swarm run finds a planted bug" -- run run --seed 4 --ops 20000 \
	--round 500 -q --targets engine,planted:punch_short --log "$tmp/swarm.ops"
expect_grep "$tmp/swarm.ops" '^# swarm round [0-9]+: kinds ' "the log says what the round drew"
expect_grep "$tmp/swarm.ops" '^#! fsoracle .*mount=[a-z]' "the header has the round's mount options"
expect_status 10 "the swarm log replays as is" -- run replay "$tmp/swarm.ops"
expect_status 0 "--no-swarm" -- run run --seed 1 --ops 3000 --no-swarm -q
expect_nogrep "$tmp/err" 'swarm rounds' "--no-swarm runs the fixed mix"
expect_status 0 "swarm by default" -- run run --seed 1 --ops 3000 -q
expect_grep "$tmp/err" 'swarm rounds of 10000 ops' "run says it draws swarm rounds"

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
expect_grep "$tmp/err" 'reflink=1 cannot go with a realtime device' "mkfs names the conflict"
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
expect_grep "$tmp/out" '^exchangerange: invalid argument$' "exchangerange says why"
expect_status 0 "bmap -c" -- run io -m reflink=1 mem:64m -c "open -f a" \
	-c "pwrite -S 1 0 32k" -c "open -f b" -c "reflink a 0 0 32k" \
	-c "pwrite -S 2 4k 4k" -c "bmap -c" -c "bmap -c -v"
expect_grep "$tmp/out" '^   0: \[0\.\.15\]: hole$' "bmap -c: the hole before the staging"
expect_grep "$tmp/out" '^   1: \[16\.\.63\]: [0-9]+\.\.[0-9]+ \(unwritten\)$' "bmap -c: unwritten staging"
expect_grep "$tmp/out" '^   1: \[16\.\.63\]: [0-9]+\.\.[0-9]+ +48 010000 unwritten$' "bmap -c -v flags"
expect_status 1 "bmap -c without reflink" -- run io mem:64m -c "pwrite 0 4k" -c "bmap -c"
expect_grep "$tmp/out" '^bmap -c: operation not supported$' "bmap -c needs reflink"
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

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
