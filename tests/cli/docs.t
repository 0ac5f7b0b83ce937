#!/bin/sh
# tests/cli/docs.t: README.md stays a front page and the manual stays whole. README.md is
# under 400 lines; every relative markdown link in README.md and docs/*.md names a file
# that exists and, after a #, a heading of that file (its anchor as GitHub forms it:
# lower case, punctuation dropped, spaces to hyphens, -1, -2 ... on repeats; fenced code
# and inline code are not headings or links); docs/README.md links every section of
# every page. A scratch page with a broken link and a broken anchor shows the checker
# can fail. Needs TB_SRCDIR and TB_BUILDDIR (make check sets them); no program.
. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/docs.t"
rm -rf "$tmp" && mkdir -p "$tmp"
src="$TB_SRCDIR"

# links FILE...: one line "FILE: target" for each relative link that does not resolve;
# exit 1 when there is one. --sections FILE: the anchors of FILE's ## to ###### headings.
cat >"$tmp/links.pl" <<'EOF'
use strict; use warnings;
sub lines { my $p = shift; open my $f, '<', $p or return (); my @l; my $fence = 0;
    while (<$f>) { if (/^\s*(```|~~~)/) { $fence = !$fence; next } push @l, $_ unless $fence }
    return @l }
my %cache;
# the anchors of a page's headings, each with its level
sub anchors { my $p = shift; return $cache{$p} if $cache{$p}; my (%a, %seen);
    for (lines($p)) { next unless /^(#{1,6})\s+(.*?)\s*#*\s*$/; my ($lv, $h) = (length $1, lc $2);
        $h =~ s/\[([^\]]*)\]\([^)]*\)/$1/g; $h =~ s/[^\w\- ]//g; $h =~ s/ /-/g;
        my $n = $seen{$h}++; $a{$n ? "$h-$n" : $h} = $lv }
    return $cache{$p} = \%a }
if ($ARGV[0] eq '--sections') { my $a = anchors($ARGV[1]);
    print "$_\n" for sort grep { $a->{$_} > 1 } keys %$a; exit 0 }
my $bad = 0;
for my $file (@ARGV) {
    (my $dir = $file) =~ s{[^/]*$}{};
    for (lines($file)) { (my $l = $_) =~ s/`[^`]*`//g;
        while ($l =~ /\]\(([^)\s]+)\)/g) { my $t = $1;
            next if $t =~ m{^[a-z][a-z0-9+.-]*:}i;
            my ($path, $anchor) = $t =~ /^([^#]*)(?:#(.*))?$/;
            my $target = length $path ? "$dir$path" : $file;
            if (!-e $target) { print "$file: $t: no such file\n"; $bad++; next }
            next unless defined $anchor;
            if ($target !~ /\.md$/ || !anchors($target)->{$anchor}) {
                print "$file: $t: no such heading\n"; $bad++ } } } }
exit($bad ? 1 : 0);
EOF

echo "1..7"
n=$(wc -l <"$src/README.md")
check "README.md is a front page: $n lines, under 400" test "$n" -lt 400

# ---- links ----
(cd "$src" && perl "$tmp/links.pl" README.md docs/*.md) >"$tmp/bad" 2>&1
check "every relative link in README.md and docs/*.md resolves, #anchors included" \
    test $? -eq 0 -a ! -s "$tmp/bad"
sed 's/^/# /' "$tmp/bad"
mkdir -p "$tmp/page/docs" && cp "$src/docs/README.md" "$tmp/page/docs/" &&
    printf '# t\n\n## A `b`: c\n\n[x](#a-b-c) [y](docs/README.md)\n[z](#a-b-d) [w](docs/none.md)\n' \
        >"$tmp/page/p.md"
(cd "$tmp/page" && perl "$tmp/links.pl" p.md) >"$tmp/self" 2>&1
check "  and the check fails on a missing heading and a missing file, not on good ones" \
    sh -c "test $? -eq 1 && test \$(wc -l <'$tmp/self') -eq 2 &&
           grep -q '#a-b-d: no such heading' '$tmp/self' && grep -q 'docs/none.md: no such file' '$tmp/self'"

# ---- every section findable ----
: >"$tmp/missing"
for f in "$src"/docs/*.md; do
    p=${f##*/}
    [ "$p" = README.md ] && continue
    grep -q "](${p})" "$src/docs/README.md" || echo "$p" >>"$tmp/missing"
    perl "$tmp/links.pl" --sections "$f" | while IFS= read -r a; do
        grep -qF "](${p}#${a})" "$src/docs/README.md" || echo "$p#$a" >>"$tmp/missing"
    done
done
check "docs/README.md lists every page of docs/ and each of its sections" test ! -s "$tmp/missing"
sed 's/^/# unlisted: /' "$tmp/missing"
pages=$(ls "$src"/docs/*.md | grep -vc '/README\.md$')
check "the README's manual table links all $pages pages" \
    sh -c 'for f in "$1"/docs/*.md; do p=${f##*/}; [ "$p" = README.md ] && continue;
               grep -q "](docs/$p)" "$1/README.md" || exit 1; done' sh "$src"

# ---- what moved stays where the tests that read it look ----
check "the quick start and compare are still on the front page" \
    sh -c "grep -qx '## Quick start' '$src/README.md' && grep -qx '## One command: trnbench compare' '$src/README.md'"
check "the range tables are in docs/results.md, the vllm recipes in docs/serving.md" \
    sh -c "grep -qx '## Input ranges' '$src/docs/results.md' &&
           grep -q -- \"--server-cmd 'vllm serve \" '$src/docs/serving.md'"
