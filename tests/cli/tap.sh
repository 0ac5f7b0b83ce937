# tests/cli/tap.sh: sourced by the shell tests in tests/cli/*.t (not a test itself).
# Sets the paths `make check` exports when they are missing, points the program at the
# source tree's data, and gives `check DESCRIPTION COMMAND...`, one numbered TAP line
# per call: ok when COMMAND succeeds.

: "${TB_SRCDIR:=.}"
: "${TB_BUILDDIR:=build}"
: "${TB_BIN:=$TB_BUILDDIR/bin/trnbench}"
export TRNBENCH_DATADIR="$TB_SRCDIR"

tap_n=0
check() {
    tap_n=$((tap_n + 1))
    tap_d=$1
    shift
    if "$@"; then echo "ok $tap_n - $tap_d"; else echo "not ok $tap_n - $tap_d"; fi
}

# csv_cell FILE NAME KEY=VALUE...: column NAME of FILE's first row whose every KEY column
# equals VALUE (a CSV-aware reader: RFC 4180 quotes, for fields that hold commas);
# exit 1 when no row matches
csv_cell() {
    perl -e '
        sub row { my @o; my $s = shift; chomp $s;
            while (length $s) { if ($s =~ s/^"((?:[^"]|"")*)"(,|$)//) { (my $x = $1) =~ s/""/"/g; push @o, $x }
                                elsif ($s =~ s/^([^,]*)(,|$)//) { push @o, $1 } else { last } }
            return @o }
        my ($file, $name, @want) = @ARGV; open my $f, "<", $file or die;
        my @h = row(scalar <$f>); my %c; @c{@h} = 0 .. $#h;
        ROW: while (<$f>) { my @r = row($_);
            for (@want) { my ($k, $v) = split /=/, $_, 2; next ROW unless defined $c{$k} && $r[$c{$k}] eq $v }
            print $r[$c{$name}], "\n"; exit 0 }
        exit 1' "$@"
}

# torch_python: the first interpreter that imports torch, by its path: python3 on the
# PATH, else Debian's /usr/bin/python3 (a pyenv or venv python3 first on the PATH does not
# see python3-torch); nothing, and exit 1, when none does
torch_python() {
    for p in python3 /usr/bin/python3; do
        if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' >/dev/null 2>&1; then
            command -v "$p"
            return 0
        fi
    done
    return 1
}

# exec_torch_python SCRIPT: run the Python test SCRIPT under torch_python, else under
# python3 (it then skips its torch checks with the reason), else the whole test skipped
exec_torch_python() {
    py=$(torch_python)
    if [ -z "$py" ]; then
        if ! command -v python3 >/dev/null 2>&1; then
            echo "1..0 # SKIP no python3"
            exit 0
        fi
        py=python3
    fi
    exec "$py" "$1"
}
