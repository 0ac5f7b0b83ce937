#!/bin/sh
# tests/cli/cross.t: `trnbench validate --cross` and where its held-out errors go. A table of
# Inferentia2 decode rows from two sources, one of them made twice as slow on purpose:
# with that source left out the figures chosen on the true rows predict it half as slow
# (held out about 50% off); with the true source left out the figures are chosen on the
# doubled rows and predict it slower than the table does (held out worse than in
# sample). --write gives one row per measured row with the in-sample prediction that
# `validate` prints. Then the project's table: reports/validation/cross.csv belongs to
# the model as it is (every row's in_sample is what validate predicts now), so the
# assessment's error bands say "held out"; with another efficiency table they are
# in-sample and said so. Bad options exit 2.

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_cross"
rm -rf "$tmp" && mkdir -p "$tmp"
pub="$TB_SRCDIR/reports/validation/published.csv"

echo "1..14"

# the fixture: the throughput table's decode rows as published, the latency table's
# doubled and renamed to a source of their own
perl -e '
    sub row { my @o; my $s = shift; chomp $s;
        while (length $s) { if ($s =~ s/^"((?:[^"]|"")*)"(,|$)//) { (my $x = $1) =~ s/""/"/g; push @o, $x }
                            elsif ($s =~ s/^([^,]*)(,|$)//) { push @o, $1 } else { last } }
        return @o }
    sub qt { my $x = shift; return $x =~ /[",\n]/ ? do { $x =~ s/"/""/g; "\"$x\"" } : $x }
    open my $f, "<", $ARGV[0] or die; my $h = <$f>; print $h;
    my @h = row($h); my %c; @c{@h} = 0 .. $#h;
    while (<$f>) { my @r = row($_); $#r = $#h; $_ //= "" for @r;
        next unless $r[$c{target}] =~ /^inf2/ && $r[$c{phase}] eq "decode";
        if ($r[$c{source}] =~ m{inf2/latency_data_decoder}) {
            $r[$c{value}] *= 2; $r[$c{source}] = "test: the latency rows doubled"; $r[$c{id}] = "D$r[$c{id}]" }
        elsif ($r[$c{source}] !~ m{inf2/throughput_data_decoder}) { next }
        print join(",", map { qt($_) } @r), "\n" }' "$pub" >"$tmp/fix.csv"
n=$(($(wc -l <"$tmp/fix.csv") - 1))
nd=$(grep -c '^DP' "$tmp/fix.csv")
check "the fixture: $n rows, $nd of them doubled" sh -c "test $n -ge 25 && test $nd -ge 8"

"$TB_BIN" validate --cross --jobs 1 --write "$tmp/cross.csv" "$tmp/fix.csv" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "validate --cross runs (exit 0 or 1: the targets)" sh -c "test $rc -le 1 && test ! -s '$tmp/err'"
check "two folds, one source each" grep -q '(2 folds)' "$tmp/out"
check "--write: one line per measured row" test "$(($(wc -l <"$tmp/cross.csv") - 1))" -eq "$n"

# the errors of each source's rows, in sample and held out (median of |error|, percent)
med() { # med FILE ID-REGEX COLUMN
    perl -e '
        my ($file, $re, $col) = @ARGV; open my $f, "<", $file or die;
        my @h = split /,/, scalar <$f>; chomp @h; my %c; @c{@h} = 0 .. $#h; my @e;
        while (<$f>) { chomp; my @r = split /,/; next unless $r[0] =~ /$re/;
            next unless length $r[$c{$col}]; push @e, abs($r[$c{$col}] / $r[$c{value}] - 1) * 100 }
        @e = sort { $a <=> $b } @e; exit 1 unless @e; printf "%.1f\n", $e[$#e / 2]' "$@"
}
din=$(med "$tmp/cross.csv" '^DP' in_sample)
dout=$(med "$tmp/cross.csv" '^DP' held_out)
check "the doubled rows held out: about half their value ($dout% off; $din% in sample)" \
    perl -e 'exit !($ARGV[0] > 40 && $ARGV[0] < 60)' "$dout"
tin=$(med "$tmp/cross.csv" '^P' in_sample)
tout=$(med "$tmp/cross.csv" '^P' held_out)
check "the true rows held out: the figures chosen on the doubled ones miss them ($tout% against $tin% in sample)" \
    perl -e 'exit !($ARGV[1] > $ARGV[0] + 10)' "$tin" "$tout"
check "a figure moved in that fold (the spread table)" \
    sh -c "sed -n '/the figures chosen over the folds/,\$p' '$tmp/out' | awk '\$NF > 0 && \$(NF-1) > 0' | grep -q neuron-v2"

# the in-sample column is validate's own prediction
"$TB_BIN" predict --scenarios "$tmp/fix.csv" >"$tmp/pred.csv" 2>/dev/null
a=$(csv_cell "$tmp/pred.csv" predicted id=P2158)
b=$(csv_cell "$tmp/cross.csv" in_sample id=P2158)
check "in_sample is the prediction ($a, $b)" \
    perl -e 'exit !($ARGV[0] > 0 && abs($ARGV[0] - $ARGV[1]) <= 1e-5 * $ARGV[0])' "$a" "$b"

# the project's table: cross.csv is current (predict prints 6 digits), so the bands are
# held out
"$TB_BIN" predict --scenarios "$pub" >"$tmp/pub.csv" 2>/dev/null
check "reports/validation/cross.csv belongs to the model as it is (else: trnbench validate --cross --write it)" \
    perl -e '
        sub row { my @o; my $s = shift; chomp $s;
            while (length $s) { if ($s =~ s/^"((?:[^"]|"")*)"(,|$)//) { (my $x = $1) =~ s/""/"/g; push @o, $x }
                                elsif ($s =~ s/^([^,]*)(,|$)//) { push @o, $1 } else { last } }
            return @o }
        sub load { my ($file, $col) = @_; open my $f, "<", $file or die; my @h = row(scalar <$f>);
            my %c; @c{@h} = 0 .. $#h; my %v;
            while (<$f>) { my @r = row($_); next unless length $r[$c{value}]; $v{$r[$c{id}]} = $r[$c{$col}] } return \%v }
        my $p = load($ARGV[0], "predicted"); my $x = load($ARGV[1], "in_sample"); my $bad = 0;
        for (keys %$p) { my ($a, $b) = ($p->{$_}, $x->{$_});
            next if !length($a) && defined $b && !length($b);
            $bad++, print STDERR "$_: $a against ", $b // "none", "\n"
                unless defined $b && length $a && length $b && abs($a - $b) <= 1e-5 * abs($a) }
        exit($bad > 0 || keys(%$x) != keys(%$p))' "$tmp/pub.csv" "$TB_SRCDIR/reports/validation/cross.csv"
ex="$TB_SRCDIR/reports/examples"
"$TB_BIN" assess "$ex/assess-chat.csv" --out "$tmp/a" >"$tmp/a.out" 2>"$tmp/a.err"
check "assess: the model's error bands are held out" \
    sh -c "grep -q 'held out, one source at a time' '$tmp/a/assessment.csv'"
mkdir -p "$tmp/eff"
cp "$TB_SRCDIR"/pricing/*.csv "$tmp/eff/"
sed -i 's/^h100-sxm,nvidia,0.8,/h100-sxm,nvidia,0.7,/' "$tmp/eff/efficiency.csv"
"$TB_BIN" assess "$ex/assess-chat.csv" --prices "$tmp/eff" --out "$tmp/b" >"$tmp/b.out" 2>"$tmp/b.err"
check "with another efficiency table they are in-sample, and said so" \
    sh -c "grep -q '(in-sample)' '$tmp/b/assessment.csv' && ! grep -q 'held out, one' '$tmp/b/assessment.csv'"

"$TB_BIN" validate --cross --by chip "$pub" >/dev/null 2>"$tmp/by.err"
check "--by chip: exit 2, the choices said" sh -c "test $? -eq 2 && grep -q 'source, round or family' '$tmp/by.err'"
"$TB_BIN" validate --cross --jobs 0 "$pub" >/dev/null 2>"$tmp/jobs.err"
check "--jobs 0: exit 2" sh -c "test $? -eq 2 && grep -q 'jobs' '$tmp/jobs.err'"
"$TB_BIN" validate --write "$tmp/w.csv" "$pub" >/dev/null 2>"$tmp/w.err"
check "--write without --cross: exit 2, nothing written" sh -c "test $? -eq 2 && test ! -e '$tmp/w.csv'"
