#!/bin/sh
# tests/cli/assess.t: `trnbench assess` end to end on the example files: the three
# outputs, the current fleet's cost recomputed from its own columns, a candidate's
# saving and break-even, the thresholds (a spend under $10k, an inference chip not
# offered for training), the HTML saying what the Markdown says, "--opt=value", and
# bad input (exit 2, file, line and field, nothing written).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_assess"
rm -rf "$tmp" && mkdir -p "$tmp"
ex="$TB_SRCDIR/reports/examples"

cell() { csv_cell "$1" "$4" workload="$2" candidate="$3"; } # cell FILE WORKLOAD CANDIDATE NAME

echo "1..20"
"$TB_BIN" assess "$ex/assess-chat.csv" --out "$tmp/chat" >/dev/null 2>"$tmp/chat.err"
check "assess on the chat example exits 0" test $? -eq 0
check "assessment.csv, .md and .html" \
    test -s "$tmp/chat/assessment.csv" -a -s "$tmp/chat/assessment.md" -a -s "$tmp/chat/assessment.html"
csv="$tmp/chat/assessment.csv"
fleet=$(cell "$csv" "chat assistant" p5.48xlarge fleet_instances)
usd=$(cell "$csv" "chat assistant" p5.48xlarge usd_per_hour)
cur=$(cell "$csv" "chat assistant" p5.48xlarge current_monthly_usd)
check "the current fleet costs fleet x USD/h x 730 ($fleet x $usd = $cur)" \
    perl -e 'exit !($ARGV[0] >= 1 && abs($ARGV[0] * $ARGV[1] * 730 - $ARGV[2]) < 0.01)' "$fleet" "$usd" "$cur"
check "and is marked current" test "$(cell "$csv" "chat assistant" p5.48xlarge current)" = yes
m=$(cell "$csv" "chat assistant" p4d.24xlarge monthly_usd)
s=$(cell "$csv" "chat assistant" p4d.24xlarge saving_usd)
b=$(cell "$csv" "chat assistant" p4d.24xlarge break_even_months)
check "a candidate's saving is current - its cost ($cur - $m = $s)" \
    perl -e 'exit !(abs($ARGV[0] - $ARGV[1] - $ARGV[2]) < 0.02)' "$cur" "$m" "$s"
check "break-even = 12 weeks x \$6000 / saving ($b months)" \
    perl -e 'exit !($ARGV[1] > 0 ? abs(72000 / $ARGV[1] - $ARGV[0]) < 0.01 : $ARGV[0] eq "never")' "$b" "$s"
check "trn2 is listed without a price, and says why" \
    grep -q '^chat assistant,trn2.48xlarge,.*no price: no on-demand price' "$csv"
# the page carries its stylesheet and its table-sorting script inline and loads nothing
check "the HTML is self-contained (inline style and script, no external resource)" \
    sh -c 'grep -q "<style>" "$1" && grep -q "<script>" "$1" && ! grep -Eq "<link|src=|href=|@import|url\(" "$1"' \
    sh "$tmp/chat/assessment.html"
# one writer, two documents: every paragraph, list item and table cell of the Markdown
# (load, region, purchase model, model error included) is in the HTML's text
same_text() { # same_text MD HTML: prints the pieces checked, fails naming a missing one
    perl -e '
        my ($md, $html) = @ARGV; local $/; open my $h, "<", $html or die; my $t = <$h>;
        $t =~ s/<[^>]*>//g; my %e = (amp => "&", lt => "<", gt => ">", quot => "\"", "#39" => "\x27");
        $t =~ s/&(amp|lt|gt|quot|#39);/$e{$1}/g;
        open my $m, "<", $md or die; my @p;
        for (split /\n/, <$m>) {
            next if /^(#|\|---|\s*$)/;
            if (/^\|/) { push @p, grep { length } map { s/^\s+|\s+$//gr } split /(?<!\\)\|/ } else { push @p, $_ } }
        for (@p) { s/^\s*- //; s/^> //; s/\*\*|`//g; s/\\([|\\*_])/$1/g; s/&lt;/</g;
                   if (index($t, $_) < 0) { print STDERR "not in the HTML: $_\n"; exit 1 } }
        print scalar(@p), "\n"' "$@"
}
n=$(same_text "$tmp/chat/assessment.md" "$tmp/chat/assessment.html")
check "the HTML says what the Markdown says (${n:-0} paragraphs, items and cells)" test "${n:-0}" -gt 100

"$TB_BIN" assess "$ex/assess-mixed.csv" --out "$tmp/mixed" >/dev/null 2>&1
check "under the spend threshold the verdict says so" \
    grep -q '^small internal tool,inf2.xlarge,.*under the \$10000 threshold' "$tmp/mixed/assessment.csv"
check "an inference chip is not offered for training" \
    grep -q '^continued pretraining,inf2.48xlarge,.*an inference chip' "$tmp/mixed/assessment.csv"
n=$(same_text "$tmp/mixed/assessment.md" "$tmp/mixed/assessment.html")
check "the mixed example's HTML says what its Markdown says too (${n:-0} pieces)" test "${n:-0}" -gt 300

# options take "--opt=value" as well as "--opt value", before or after the file
"$TB_BIN" assess --out="$tmp/eq" --min-monthly-usd=10000 "$ex/assess-chat.csv" >/dev/null 2>&1
check "--out=DIR and --min-monthly-usd=X: the same outputs as the spaced form" \
    sh -c "cmp -s '$tmp/chat/assessment.csv' '$tmp/eq/assessment.csv' && cmp -s '$tmp/chat/assessment.md' '$tmp/eq/assessment.md'"
"$TB_BIN" assess "$ex/assess-chat.csv" --price-swing=0.1 --out "$tmp/swing" >/dev/null 2>&1
check "--price-swing=0.1 is taken (the sensitivity column says +-10%)" \
    grep -q '| Saving, prices +-10% |' "$tmp/swing/assessment.md"
"$TB_BIN" assess "$ex/assess-chat.csv" --out >/dev/null 2>"$tmp/noval.err"
check "an option without its value exits 2 and says so" \
    sh -c "test $? -eq 2 && grep -q \"trnbench assess: option '--out' needs a value\" '$tmp/noval.err'"

# bad input: an unknown current instance on line 3 of a copy
sed '3s/,p5.48xlarge,on-demand/,x9.huge,on-demand/' "$ex/assess-mixed.csv" >"$tmp/bad.csv"
"$TB_BIN" assess "$tmp/bad.csv" --out "$tmp/bad" >/dev/null 2>"$tmp/bad.err"
check "an unknown instance exits 2" test $? -eq 2
check "naming file, line and field" grep -q "bad.csv: line 3: field 'current_instance'" "$tmp/bad.err"
check "and nothing is written" test ! -e "$tmp/bad"
sed '2s/,us-east-1,/,mars-north-1,/' "$ex/assess-chat.csv" >"$tmp/bad2.csv"
"$TB_BIN" assess "$tmp/bad2.csv" --out "$tmp/bad" >/dev/null 2>"$tmp/bad.err"
check "an unknown region exits 2 naming line 2, field 'region'" \
    sh -c "test $? -eq 2 && grep -q \"bad2.csv: line 2: field 'region'\" '$tmp/bad.err' && test ! -e '$tmp/bad'"
sed '2s/,12,2048,/,,2048,/' "$ex/assess-chat.csv" >"$tmp/bad3.csv"
"$TB_BIN" assess "$tmp/bad3.csv" --out "$tmp/bad" >/dev/null 2>"$tmp/bad.err"
check "a workload without its load exits 2 naming the field" \
    sh -c "test $? -eq 2 && grep -q \"bad3.csv: line 2: field 'requests_per_s': missing\" '$tmp/bad.err'"
