#!/bin/sh
# tests/cli/assess.t: `trnbench assess` end to end on the example files: the three
# outputs, the current fleet's cost recomputed from its own columns, Little's law from
# the serving columns, a candidate's saving and break-even, the thresholds (a spend under
# $10k, an inference chip not offered for training), training as cluster-hours (ten times
# the tokens, ten times the cost; the same figure as `trnbench report` computes for the
# same run), a purchase model a candidate has no price for, the HTML saying what the
# Markdown says, "--opt=value", and bad input (exit 2, file, line and field, nothing
# written: a misspelt column, a request rate too large to count).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_assess"
rm -rf "$tmp" && mkdir -p "$tmp"
ex="$TB_SRCDIR/reports/examples"

cell() { csv_cell "$1" "$4" workload="$2" candidate="$3"; } # cell FILE WORKLOAD CANDIDATE NAME

echo "1..39"
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
check "trn2, with only capacity-block and spot prices, is not priced as an always-on fleet" \
    sh -c 'case "$0" in "no price: "*"capacity-block and spot are no basis for an always-on fleet"*) exit 0;; esac; exit 1' \
    "$(cell "$csv" "chat assistant" trn2.48xlarge why)"
rps=$(cell "$csv" "chat assistant" p5.48xlarge requests_per_s)
e2e=$(cell "$csv" "chat assistant" p5.48xlarge e2e_latency_s)
inf=$(cell "$csv" "chat assistant" p5.48xlarge in_flight)
conc=$(cell "$csv" "chat assistant" p5.48xlarge concurrency_per_replica)
bound=$(cell "$csv" "chat assistant" p5.48xlarge bound)
check "Little's law: in flight = $rps requests/s x $e2e s = $inf" \
    perl -e 'exit !($ARGV[0] == 12 && abs($ARGV[0] * $ARGV[1] - $ARGV[2]) < 1e-3 * $ARGV[2])' "$rps" "$e2e" "$inf"
cap=$(cell "$csv" "chat assistant" p5.48xlarge capacity_per_replica)
need=$(cell "$csv" "chat assistant" p5.48xlarge need)
# a replica is an instance here: its requests in flight are all its model copies' (the
# model's batch is the target's, tp x dp, not one copy's)
check "the fleet is the larger of ceil(in flight / $conc a replica) and ceil($need / $cap tokens/s) = $fleet, the bound '$bound' the larger" \
    perl -e 'use POSIX; my ($i, $c, $f, $b, $n, $k) = @ARGV; my ($l, $t) = (ceil($i / $c), ceil($n / $k));
             exit !($f == ($l > $t ? $l : $t) && $b eq ($l >= $t ? "latency" : "throughput"))' \
    "$inf" "$conc" "$fleet" "$bound" "$need" "$cap"
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
        for (@p) { s/^\s*- //; s/^> //; s/\*\*|`//g; s/\\([|\\*_\[\]~#+.)-])/$1/g; s/&lt;/</g; s/&gt;/>/g; s/&amp;/&/g;
                   if (index($t, $_) < 0) { print STDERR "not in the HTML: $_\n"; exit 1 } }
        print scalar(@p), "\n"' "$@"
}
n=$(same_text "$tmp/chat/assessment.md" "$tmp/chat/assessment.html")
check "the HTML says what the Markdown says (${n:-0} paragraphs, items and cells)" test "${n:-0}" -gt 100

"$TB_BIN" assess "$ex/assess-mixed.csv" --out "$tmp/mixed" >/dev/null 2>&1
check "under the spend threshold the verdict says so" \
    grep -q '^small internal tool,serve,inf2.xlarge,.*under the \$10,000 threshold' "$tmp/mixed/assessment.csv"
check "an inference chip is not offered for training" \
    grep -q '^continued pretraining,train,inf2.48xlarge,.*an inference chip' "$tmp/mixed/assessment.csv"
n=$(same_text "$tmp/mixed/assessment.md" "$tmp/mixed/assessment.html")
check "the mixed example's HTML says what its Markdown says too (${n:-0} pieces)" test "${n:-0}" -gt 300

# training as cluster-hours: the fine-tune example at 2e9 and 2e10 tokens a month
"$TB_BIN" assess "$ex/assess-finetune.csv" --out "$tmp/ft" >/dev/null 2>&1
check "assess on the fine-tune example exits 0" test $? -eq 0
ft="$tmp/ft/assessment.csv"
a=$(csv_cell "$ft" monthly_usd workload="fine-tune 2B tokens" candidate=p5.48xlarge)
b=$(csv_cell "$ft" monthly_usd workload="fine-tune 20B tokens" candidate=p5.48xlarge)
# (each figure rounded to the cent: b within 10 x 0.005 + 0.005 of 10 a)
check "ten times the tokens, ten times the cost on p5.48xlarge (\$$a, \$$b)" \
    perl -e 'exit !($ARGV[0] > 0 && abs($ARGV[1] - 10 * $ARGV[0]) <= 0.055)' "$a" "$b"
n=$(csv_cell "$ft" instances_per_replica workload="fine-tune 2B tokens" candidate=p5.48xlarge)
h=$(csv_cell "$ft" cluster_hours workload="fine-tune 2B tokens" candidate=p5.48xlarge)
u=$(csv_cell "$ft" usd_per_hour workload="fine-tune 2B tokens" candidate=p5.48xlarge)
check "a cluster of $n, $h cluster-hours x $n x \$$u/h = \$$a" \
    perl -e 'exit !($ARGV[0] > 1 && abs($ARGV[1] * $ARGV[0] * $ARGV[2] - $ARGV[3]) < 0.01 * $ARGV[0] * $ARGV[2])' "$n" "$h" "$u" "$a"
check "paid by the hour, as the team buys it now, and says so" \
    test "$(csv_cell "$ft" pricing_basis workload="fine-tune 2B tokens" candidate=p5.48xlarge rebuy=no)" = "on-demand hours"
gn=$(csv_cell "$ft" fleet_instances workload="fine-tune 2B tokens" candidate=g6e.xlarge)
gi=$(csv_cell "$ft" instances_per_replica workload="fine-tune 2B tokens" candidate=g6e.xlarge)
check "g6e.xlarge is priced for its whole cluster ($gn instances of a $gi-instance layout)" \
    sh -c "test '$gi' -gt 1 && test '$gn' -ge '$gi'"
check "the Markdown shows cluster-hours, the pricing basis and the break-even use" \
    grep -q '^| p5.48xlarge (current) | 4 (1 x 4) | 16.0 (2%) | on-demand hours | throughput: ' "$tmp/ft/assessment.md"
# the report prices the same run (the model's layout of $n instances) at the same figure
cat > "$tmp/ft.suite" <<EOF
suite ft
description the assessment's p5.48xlarge cluster for a 70B fine-tune
predict target=p5.48xlarge model=llama-3.1-70b phase=train seq_in=8192 instances=$n precision=bf16
EOF
rm -rf "$tmp/ftrun"
"$TB_BIN" run --suite "$tmp/ft.suite" --out "$tmp/ftrun" >/dev/null 2>&1 &&
    "$TB_BIN" report --out "$tmp/ftrun" --train-tokens 2e9 "$tmp/ftrun/results.csv" >/dev/null 2>&1
check "the report runs on the same modeled run" test -s "$tmp/ftrun/cost.csv"
mtok=$(csv_cell "$tmp/ftrun/cost.csv" usd_per_mtok metric=usd_per_mtok_train)
tusd=$(csv_cell "$tmp/ftrun/cost.csv" train_usd metric=usd_per_mtok_train)
check "the report's usd per Mtok train x 2000 Mtok = the assessment's \$$a (\$$mtok/Mtok, train_usd \$$tusd)" \
    perl -e 'exit !($ARGV[0] > 0 && abs($ARGV[0] * 2000 - $ARGV[2]) < 1e-4 * $ARGV[2] && abs($ARGV[1] - $ARGV[2]) < 0.01)' "$mtok" "$tusd" "$a"

# serving bought as Capacity Blocks: refused (they end), naming line and field
sed '2s/,on-demand,us-east-1,/,capacity-block,us-east-2,/' "$ex/assess-chat.csv" >"$tmp/cb.csv"
"$TB_BIN" assess "$tmp/cb.csv" --out "$tmp/cb" >/dev/null 2>"$tmp/cb.err"
check "an always-on fleet bought as Capacity Blocks exits 2, line 2, field 'current_purchase'" \
    sh -c "test $? -eq 2 && grep -q \"cb.csv: line 2: field 'current_purchase': Capacity Blocks end\" '$tmp/cb.err' && test ! -e '$tmp/cb'"
sed -e '1s/$/,spot_reserve/' -e '2s/,on-demand,us-east-1,\(.*\)$/,spot,us-east-1,\1,1.5/' "$ex/assess-chat.csv" >"$tmp/sr.csv"
"$TB_BIN" assess "$tmp/sr.csv" --out "$tmp/sr" >/dev/null 2>"$tmp/sr.err"
check "a spot_reserve over 1 exits 2 naming line 2 and the field" \
    sh -c "test $? -eq 2 && grep -q \"sr.csv: line 2: field 'spot_reserve'\" '$tmp/sr.err'"
# the verdicts on the terminal: one line a workload, each the one in the files
"$TB_BIN" assess "$ex/assess-mixed.csv" --out "$tmp/mixed2" >"$tmp/mixed2.out" 2>&1
check "continued pretraining: keep p5, buy it as reserved-3y first, below trn2's figure" \
    grep -q "^continued pretraining: keep p5.48xlarge, buy it as reserved-3y: \$17,357 a month, 53% less than now (\$36,551 on-demand), below trn2.48xlarge's \$18,023, the cheapest move$" "$tmp/mixed2.out"
check "product images: never compared at spot" \
    sh -c 'grep -q "^product images: " "$1" && ! grep "^product images: " "$1" | grep -q "spot\|-[0-9]*%"' sh "$tmp/mixed2.out"
check "four verdict lines, then where the report was written" \
    sh -c 'test $(grep -c "^[a-z ]*: \(keep\|move\|no verdict\)" "$1") -eq 4 && tail -1 "$1" | grep -q "wrote .*/mixed2/assessment.md"' sh "$tmp/mixed2.out"
head -4 "$tmp/mixed2.out" >"$tmp/mixed2.out.v"
check "each terminal verdict is the one in the Markdown" \
    sh -c 'while IFS= read -r l; do v="${l#*: }"; grep -qF "**Verdict:** $v." "$2" || exit 1; done < "$1.v"' sh "$tmp/mixed2.out" "$tmp/mixed2/assessment.md"

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
sed '1s/ttft_limit_ms/ttft_ms_limt/' "$ex/assess-chat.csv" >"$tmp/bad4.csv"
"$TB_BIN" assess "$tmp/bad4.csv" --out "$tmp/bad" >/dev/null 2>"$tmp/bad.err"
check "a misspelt column exits 2, naming line 1, the column and the closest known" \
    sh -c "test $? -eq 2 && grep -qF \"bad4.csv: line 1: unknown column 'ttft_ms_limt' (did you mean 'ttft_limit_ms'?)\" '$tmp/bad.err' && test ! -e '$tmp/bad'"
sed '2s/,12,2048,/,1e18,2048,/' "$ex/assess-chat.csv" >"$tmp/bad5.csv"
"$TB_BIN" assess "$tmp/bad5.csv" --out "$tmp/bad" >/dev/null 2>"$tmp/bad.err"
check "1e18 requests/s exits 2: out of the column's range, refused, not clamped" \
    sh -c "test $? -eq 2 && grep -qF \"bad5.csv: line 2: field 'requests_per_s': expected a number in [0, 1e9] (requests/s), got '1e18'\" '$tmp/bad.err' && test ! -e '$tmp/bad'"
sed '1s/ttft_limit_ms,tpot_limit_ms/ttft_ms,tpot_ms/' "$ex/assess-chat.csv" >"$tmp/old.csv"
"$TB_BIN" assess "$tmp/old.csv" --out "$tmp/old" >/dev/null 2>&1
check "the older column names ttft_ms, tpot_ms are still taken: the same assessment" \
    sh -c "test $? -eq 0 && cmp -s '$tmp/old/assessment.csv' '$tmp/chat/assessment.csv'"
