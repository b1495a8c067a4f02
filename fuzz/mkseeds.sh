#!/usr/bin/env bash
# fuzz/mkseeds.sh - (re)build the seed corpora corpus/diff/, corpus/crash/
# and corpus/image/ from the op logs people wrote: corpus/regressions/*.ops
# (failures once found) and fuzz/seeds/*.ops (the five seed scenarios at
# tiny scale).  Run it after adding either; it rewrites only the seeds it
# makes (names start with "seed-"), so inputs ci/fuzz added stay.
#
#   fuzz/mkseeds.sh [--out DIR] [FSORACLE]
#
# FSORACLE defaults to out/fsoracle (`make` first); --out writes DIR/diff,
# DIR/crash and DIR/image instead of corpus/ (fuzz/selftest.sh replays the
# current corpus/regressions that way).
#
# diff seeds: each log, encoded with `fsoracle encode --raw` for 4 files
# of the smallest largest file that decodes its ops exactly as 512k does
# (fit, below), behind seven headers (fuzz/geom.h): preset 0 (bs 512,
# fan-out 4), preset 3 (bs 4096, fan-out 4), preset 5 (bs 1024, fan-out 5,
# one-block extents, 256-block journal), preset 44 (bs 512, fan-out 15,
# reflink, delalloc) and preset 37 (bs 1024, rt extents of 4 blocks), all
# with every path of the engine target optimized; and two with a
# realtime device and a mix on the engine target: preset 22 (bs 2048, rt
# extents of 3 blocks; rt_truncate and cow_end optimized, rt_truncate
# forced to fall back, the rest naive), preset 36 (bs 512, rt extents of
# 4 blocks; pagecache_truncate, forget and delalloc_cap optimized, forget
# forced to fall back, the rest naive).
# crash seeds: the same logs, the same largest file, behind presets 0 and 3, block and pmem (pmem: through libpmem2),
# and preset 44 (reflink), block, with every cut "keep all" (what
# `fsoracle replay` does at a crash op; the fuzzer finds the cuts that
# matter).
# zoned seeds: a few hand-made zone op sequences over small devices
# (write at the pointer, implicit-open eviction under max_open, close,
# finish, reset, appends, reads across conventional and offline zones).
# image seeds: each template undamaged, and damaged in a few header
# fields with and without recomputed checksums, followed by the first 16
# ops of two logs.
# fuzz/selftest.sh fails when corpus/ holds other seeds than these; ci/fuzz
# runs this after saving a regression log.
set -eu
cd "$(dirname "$0")/.."
dest=corpus
if [ "${1:-}" = --out ]; then
	dest=$2
	shift 2
fi
fso=${1:-out/fsoracle}
[ -x "$fso" ] || { echo "mkseeds: $fso not built (run make)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$dest/diff" "$dest/crash" "$dest/image" "$dest/zoned"
rm -f "$dest"/diff/seed-* "$dest"/crash/seed-* "$dest"/image/seed-* \
	"$dest"/zoned/seed-*

# header BYTE0 BYTE1 [BYTE2 BYTE3]: a 16-byte header, leading bytes set
header() {
	printf "\\x$1\\x$2\\x${3:-00}\\x${4:-00}\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
}
# crash_header BYTE0 BYTE1 PMEM: preset, files, four "keep all" cuts
crash_header() {
	printf "\\x$1\\x$2\\x$3\\x01\\x00\\x00\\x01\\x00\\x00\\x01\\x00\\x00\\x01\\x00\\x00\\x00"
}

# fit OPS: header byte 1 for 4 files of the smallest largest file (4k,
# 8k, ... 512k: fuzz/geom.c) at which the encoded ops decode exactly as
# at 512k.  A log of small files is not given room it never used: the
# fuzzer's new ops are clamped to the input's largest file, and an op
# the seed left at 512k moves up to 512k (an input's cost is the bytes
# its ops write and its verifies read back).
fit() {
	local want k bits=0
	want=$("$fso" decode --format binary --files 4 --max-file 512k "$1")
	for k in 4 8 16 32 64 128 256 512; do
		if [ "$k" = 512 ] || [ "$("$fso" decode --format binary --files 4 \
			--max-file "${k}k" "$1")" = "$want" ]; then
			printf '%02x' $((3 | bits << 2))
			return
		fi
		bits=$((bits + 1))
	done
}

n=0
for log in corpus/regressions/*.ops fuzz/seeds/*.ops; do
	name=$(basename "$log" .ops)
	"$fso" encode --raw --files 4 --max-file 512k -o "$tmp/ops" "$log" \
		2>/dev/null
	mf=$(fit "$tmp/ops")
	for p in 00 03 05; do
		{ header "$p" "$mf"; cat "$tmp/ops"; } > "$dest/diff/seed-$name-p$p"
		n=$((n + 1))
	done
	{ header 2c "$mf"; cat "$tmp/ops"; } > "$dest/diff/seed-$name-p2c-reflink"
	{ header 25 "$mf"; cat "$tmp/ops"; } > "$dest/diff/seed-$name-p25-rt"
	n=$((n + 2))
	# with a realtime device, and a mix of naive, optimized, fallback
	for p in "16 1a 01" "24 05 08"; do
		set -- $p
		{ header "$1" "$mf" "$2" "$3"; cat "$tmp/ops"; } \
			> "$dest/diff/seed-$name-p$1-rt"
		n=$((n + 1))
	done
	for p in 00 03; do
		{ crash_header "$p" "$mf" 00; cat "$tmp/ops"; } > "$dest/crash/seed-$name-p$p"
		{ crash_header "$p" "$mf" 01; cat "$tmp/ops"; } > "$dest/crash/seed-$name-p$p-pmem"
	done
	{ crash_header 2c "$mf" 00; cat "$tmp/ops"; } > "$dest/crash/seed-$name-p2c-reflink"
done
header 00 00 > "$dest/diff/seed-empty"
header 00 00 > "$dest/crash/seed-empty"
echo "mkseeds: $((n + 1)) seeds in $dest/diff/, $(ls "$dest/crash" | grep -c '^seed-') in $dest/crash/"

# image: BYTE0 then three damages of 5 bytes (fuzz/image.c)
damage() {
	printf "\\x$1"
	printf "\\x$2\\x$3\\x$4\\x$5\\x$6"
	printf '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
}
"$fso" encode --raw --files 4 --max-file 256k -o "$tmp/a" \
	corpus/regressions/write-past-eof-zero-gap.ops 2>/dev/null
"$fso" encode --raw --files 4 --max-file 256k -o "$tmp/b" \
	fuzz/seeds/d-unlink-revoke.ops 2>/dev/null
head -c 256 "$tmp/a" > "$tmp/a16"
head -c 256 "$tmp/b" > "$tmp/b16"
m=0
for t in 0 1 2 3; do
	header "0$t" 00 > "$dest/image/seed-t$t"
	{ header "0$t" 00; cat "$tmp/a16"; } > "$dest/image/seed-t$t-ops"
	#          block off  off  value shape        what
	for d in "00 20 00 01 00:sb-version" "00 24 00 ff 18:sb-total" \
		 "01 00 00 01 00:magic" "02 04 00 55 00:crc" \
		 "03 08 00 01 00:blkno" "05 18 00 02 10:count" \
		 "07 20 00 80 00:record" "0b 28 00 03 08:record-set"; do
		spec=${d%%:*} what=${d##*:}
		set -- $spec
		for fix in 0 4; do
			b0=$(printf '%02x' $((t | fix)))
			{ damage "$b0" "$@"; cat "$tmp/b16"; } \
				> "$dest/image/seed-t$t-$what${fix/4/-fixcrc}"
			m=$((m + 1))
		done
	done
done
echo "mkseeds: $((m + 8)) seeds in $dest/image/"

# zhdr B0..B5: a zoned header; zop KIND ZONE WHERE-MODE SECTORS LEN-SECTORS
zhdr() {
	printf "\\x$1\\x$2\\x$3\\x$4\\x$5\\x$6"
	printf '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
}
zop() {
	printf "\\x$1\\x$2\\x00\\x07\\x$4\\x00\\x$3\\x00\\x$5\\x00\\x00\\x00"
	printf '\x00\x00\x00\x00'
}
{ zhdr 00 00 00 00 00 00; zop 01 00 00 00 01; } > "$dest/zoned/seed-write"
{ zhdr 02 01 00 11 00 00          # 4 zones of 8k, max_open 1, max_active 1
  zop 01 00 00 00 02; zop 01 01 00 00 02; zop 06 00 00 00 00
  zop 05 02 00 00 00; zop 07 01 00 00 00; zop 04 01 00 00 00
  zop 03 00 02 00 40; } > "$dest/zoned/seed-limits"
{ zhdr 04 05 01 00 04 05          # 6 zones, capacity below size, conv 1
  zop 01 00 02 03 04; zop 02 01 00 00 02; zop 02 01 00 00 08
  zop 01 02 01 01 01; zop 03 00 02 00 7f; zop 07 03 00 00 00; } \
	> "$dest/zoned/seed-append-conv-offline"
echo "mkseeds: 3 seeds in $dest/zoned/"
