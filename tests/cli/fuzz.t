#!/bin/sh
# tests/cli/fuzz.t: make fuzz's plan (make -n, nothing built or run, no clang needed) and
# the harnesses' data: every tests/fuzz/NAME.c is linked with libFuzzer, ASan and UBSan
# against the library built apart (build/fuzz/), run for FUZZ_SECONDS with a timeout, a
# memory limit, its crash folder and its seed corpus, and has a non-empty seed corpus and
# a well-formed dictionary when it has one. Needs TB_SRCDIR and TB_BUILDDIR (make check
# sets them).
. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
echo 1..8

tmp="$TB_BUILDDIR/tests/tmp/fuzz.t"
rm -rf "$tmp" && mkdir -p "$tmp"
out="$tmp/o"
# the plan with its continued lines joined
make -n -C "$TB_SRCDIR" O="$out" FUZZ_SECONDS=3 fuzz 2>&1 | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' >"$tmp/plan"
names=$(cd "$TB_SRCDIR/tests/fuzz" && ls *.c | sed 's/\.c$//')

every() { # every PATTERN-WITH-@: the plan has it for each harness (@ its name)
    for n in $names; do
        grep -q -e "$(printf '%s' "$1" | sed "s/@/$n/g")" "$tmp/plan" || { echo "# no '$1' for $n"; return 1; }
    done
}
check "there are harnesses (at least 20)" test "$(echo $names | wc -w)" -ge 20
check "each is linked with -fsanitize=fuzzer,address,undefined" \
    every "fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $out/fuzz/bin/@ "
check "the library is compiled again with the same flags, apart from the normal build" \
    grep -q -- "-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all .* -o $out/fuzz/obj/harness/run/tb_suite.o" "$tmp/plan"
check "each is run (the loop names it)" every "for n in.* @[ ;]"
check "a run is bounded: FUZZ_SECONDS, a timeout, a memory limit; crashes kept" \
    grep -q -- '-max_total_time=3 -timeout=10 .*-rss_limit_mb=2048 .*-artifact_prefix='"$out"'/fuzz/crash/' "$tmp/plan"
nonempty() {
    for n in $names; do
        [ -n "$(ls "$TB_SRCDIR/tests/fuzz/corpus/$n" 2>/dev/null)" ] || { echo "# no seeds for $n"; return 1; }
    done
}
check "each harness has a seed corpus in tests/fuzz/corpus/NAME/" nonempty
dicts() { # libFuzzer's format: comments, blank lines, "..." with \\, \" and \xAB escapes
    for d in "$TB_SRCDIR"/tests/fuzz/*.dict; do
        bad=$(grep -v -E '^(#.*|[[:space:]]*|"([^"\\]|\\\\|\\"|\\x[0-9A-Fa-f]{2})*")$' "$d" | head -1)
        [ -z "$bad" ] || { echo "# $d: $bad"; return 1; }
    done
}
check "the dictionaries are well formed" dicts
# a seed corpus holds the project's named files, never libFuzzer's own finds (40 hex
# digits: a run given only tests/fuzz/corpus/NAME writes there; make fuzz never does)
check "no libFuzzer-named inputs in the seed corpora" \
    eval "! ls '$TB_SRCDIR'/tests/fuzz/corpus/*/ | grep -qE '^[0-9a-f]{40}\$'"
