#!/bin/sh
# tests/cli/layers.t: the include graph of harness/ points down the layers
# (shared ARCHITECTURE-REVIEW.md, change 3), so a folder never needs one above it:
#   base < model < platform < endpoint < measure < run < serve < dist < import < cost
#   < report < cli
# Every `#include "x.h"` of a harness/ folder's .c or .h file is resolved to the folder
# that holds x.h; an include of a higher folder fails the test, unless it is one of
# the upward includes listed below, which the review's remaining moves take away (the
# string buffer out of report/tb_doc.h, the run spec out of run/tb_suite.h into base/,
# the price catalogue into a catalog/ folder under model/). The list may only shrink:
# an entry that is no longer there fails too, so it is struck when it goes.
. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
echo "1..3"
out=$(cd "$TB_SRCDIR" && perl -e '
use strict; use warnings;
my @order = qw(base model platform endpoint measure run serve dist import cost report cli);
my %rank; @rank{@order} = (0 .. $#order);
my %known = map { $_ => 1 } qw(
    measure/tb_exec.h>run/tb_suite.h
    measure/tb_executor.h>run/tb_suite.h
    measure/tb_gpu.h>cost/tb_pricing.h
    measure/tb_gpu.h>run/tb_suite.h
    measure/tb_peer.h>run/tb_suite.h
    measure/tb_torch.h>run/tb_suite.h
    model/tb_model.h>cost/tb_pricing.h
    run/tb_record.h>cost/tb_pricing.h
    run/tb_run.h>cost/tb_pricing.h
);
my (%home, @folders, @new, %seen);
for my $h (glob("harness/*/*.h")) { my ($d, $b) = $h =~ m{^harness/([^/]+)/([^/]+)$}; $home{$b} = $d }
my %dirs = map { m{^harness/([^/]+)/} ? ($1 => 1) : () } glob("harness/*/*.[ch]");
my @unranked = grep { !exists $rank{$_} } sort keys %dirs;
for my $f (sort glob("harness/*/*.[ch]")) {
    my ($d) = $f =~ m{^harness/([^/]+)/};
    open(my $fh, "<", $f) or die "$f: $!";
    while (<$fh>) {
        next unless /^\s*#\s*include\s+"([^"]+)"/;
        (my $b = $1) =~ s{.*/}{};
        my $t = $home{$b};
        next unless defined $t && $t ne $d && exists $rank{$t} && exists $rank{$d};
        next unless $rank{$t} > $rank{$d};
        (my $key = "$f>$t/$b") =~ s{^harness/}{};
        $seen{$key} = 1;
        push @new, $key unless $known{$key};
    }
}
my @gone = grep { !$seen{$_} } sort keys %known;
print "unranked ", join(" ", @unranked), "\n";
print "new ", join(" ", @new), "\n";
print "gone ", join(" ", @gone), "\n";
')
check "every harness/ folder has a place in the order" \
    test "$(echo "$out" | sed -n 's/^unranked //p')" = ""
check "no upward include besides the listed ones: $(echo "$out" | sed -n 's/^new //p')" \
    test "$(echo "$out" | sed -n 's/^new //p')" = ""
check "every listed upward include is still there (strike those gone): $(echo "$out" | sed -n 's/^gone //p')" \
    test "$(echo "$out" | sed -n 's/^gone //p')" = ""
