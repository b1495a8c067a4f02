#!/usr/bin/env bash
# docs/mkman.sh - the manual page docs/fsoracle.1, made from the program's
# own help texts so the two cannot drift: `fsoracle --help` gives the
# DESCRIPTION, each `fsoracle help CMD` a section under COMMANDS, and
# `fsoracle --version` the footer.  The help texts are laid out by hand
# for a terminal, so they go in unfilled (.nf), escaped for roff.
#
#   docs/mkman.sh [FSORACLE]          rewrite docs/fsoracle.1
#   docs/mkman.sh --check [FSORACLE]  exit 1, with a diff, when
#                                     docs/fsoracle.1 is not what the
#                                     program's help makes of it
#
# FSORACLE is the program (out/fsoracle).  Read the page with
# `man -l docs/fsoracle.1`.
set -eu
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
fso=${1:-$(dirname "$0")/../out/fsoracle}
[ -x "$fso" ] && fso=$(realpath "$fso")
cd "$(dirname "$0")/.."
page=docs/fsoracle.1
[ -x "$fso" ] || { echo "mkman: no program at $fso (build it first)" >&2; exit 2; }

# roff for preformatted text: backslashes as \e, a leading . or ' kept
# as text, minus signs as \- (so options copy and paste as typed)
roff() {
	sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

# the commands, in the order `fsoracle --help` lists them
commands() {
	"$fso" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p'
}

make_page() {
	local version c
	version=$("$fso" --version)
	echo '.\" docs/fsoracle.1 - made by docs/mkman.sh from the help texts;'
	echo '.\" edit those (tools/*.c), then run docs/mkman.sh.'
	echo ".TH FSORACLE 1 \"\" \"$version\" \"fsoracle manual\""
	echo '.SH NAME'
	echo 'fsoracle \- a reference filesystem engine and the checkers that keep its fast paths honest'
	echo '.SH SYNOPSIS'
	echo '.B fsoracle'
	echo '.I COMMAND'
	echo '.RI [ ARGS ...]'
	echo '.br'
	echo '.B fsoracle help'
	echo '.RI [ COMMAND ]'
	echo '.br'
	echo '.B fsoracle \-\-version'
	echo '.SH DESCRIPTION'
	echo '.nf'
	"$fso" --help | roff
	echo '.fi'
	echo '.SH COMMANDS'
	for c in $(commands); do
		echo ".SS $c"
		echo '.nf'
		"$fso" help "$c" | roff
		echo '.fi'
	done
	echo '.SH VERSION'
	echo "$version"
}

if [ "$check" -eq 1 ]; then
	tmp=$(mktemp)
	trap 'rm -f "$tmp"' EXIT
	make_page > "$tmp"
	if ! diff -u "$page" "$tmp"; then
		echo "mkman: $page differs from the help texts; run docs/mkman.sh" >&2
		exit 1
	fi
	echo "mkman: $page matches the help of $(commands | wc -l) commands"
else
	make_page > "$page"
	echo "mkman: wrote $page"
fi
