# Drop-in: perl one-liners under LD_PRELOAD=libtxalloc.so print what they print with glibc
# malloc, and txalloc's statistics show it served perl.
#
# Workload: a hash of 100003 keys grown by string appends (realloc-heavy), a regex split
# and join over a generated text, and a sort of 200000 numbers formatted as strings.
set -euo pipefail
source "$(dirname "$0")/support/dropin_common.sh"
command -v perl >/dev/null || { echo "perl missing" >&2; exit 2; }

N=$(dropin_scaled 300000 30000)
dropin_compare perl_hash 10000 perl -e 'my %h; $h{$_ % 100003} .= "x$_" for 1..'"$N"'; my $t = 0; $t += length($h{$_}) for keys %h; print "$t ", scalar(keys %h), "\n"'
dropin_compare perl_regex 10000 perl -e 'my $s = join(" ", map { "w$_" x (1 + $_ % 5) } 1..'"$N"'); my @w = split /\s+/, $s; my %c; $c{length $_}++ for @w; print join(",", map { "$_:$c{$_}" } sort { $a <=> $b } keys %c), "\n"; (my $u = $s) =~ s/w(\d+)/<$1>/g; print length($u), "\n"'
dropin_compare perl_sort 10000 perl -e 'srand(7); my @a = map { sprintf("%.6f", rand()) } 1..'"$N"'; my @s = sort @a; print "$s[0] $s[-1] ", scalar(@s), "\n"'
dropin_finish
