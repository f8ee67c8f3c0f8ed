#!/usr/bin/env bash
# make check-tree: the repository holds sources, not build output. Fails on a tracked file that
# is an executable binary (ELF, Mach-O, PE) or over 1 MiB, which is how a built `contactbench`
# once landed at the root.
set -euo pipefail
cd "$(dirname "$0")/.."
# one perl process for every file (a few processes per file took 30 s on a busy machine)
if git ls-files -z | perl -0 -ne '
  chomp; next unless -f $_;
  open(my $fh, "<", $_) or next; binmode $fh; read($fh, my $magic, 4); close $fh;
  if (unpack("H*", $magic) =~ /^(7f454c46|cffaedfe|cefaedfe|feedface|feedfacf|4d5a)/) {
    print STDERR "check-tree: $_ is a compiled binary: build output goes to bin/ (ignored)\n"; $bad = 1; next;
  }
  my $size = -s $_;
  if ($size > 1024 * 1024) {
    printf STDERR "check-tree: %s is %d KiB (over 1 MiB): keep build output and data dumps out of git\n", $_, $size / 1024; $bad = 1;
  }
  END { exit($bad ? 1 : 0) }'; then
  echo "check-tree: no binaries or oversized files tracked"
else
  exit 1
fi
