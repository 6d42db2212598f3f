# Drop-in: git operations on a temporary repository under LD_PRELOAD=libtxalloc.so give the
# same output (same commit ids: dates and identities are fixed) as with glibc malloc, and
# txalloc's statistics show it served git.
#
# Workload: a repository built by a script — 20 commits over 3 branches of 100 generated
# files (scaled by TXALLOC_TEST_SCALE), merges, a tag — run twice in two fresh directories
# (plain and preloaded) with identical environment, then read-only commands on each: log
# with patches and stats, a blame, a grep, a diff between branches, a repack and fsck.
set -euo pipefail
source "$(dirname "$0")/support/dropin_common.sh"
command -v git >/dev/null || { echo "git missing" >&2; exit 2; }

COMMITS=$(dropin_scaled 20 8)
export GIT_AUTHOR_NAME=txalloc GIT_AUTHOR_EMAIL=t@example.org GIT_COMMITTER_NAME=txalloc
export GIT_COMMITTER_EMAIL=t@example.org GIT_AUTHOR_DATE="2020-01-01T00:00:00Z"
export GIT_COMMITTER_DATE="2020-01-01T00:00:00Z" GIT_CONFIG_NOSYSTEM=1 HOME="$DROPIN_TMP"
git config --global init.defaultBranch main
git config --global gc.auto 0

cat >"$DROPIN_TMP/build_repo.sh" <<SH
set -e
git init -q repo && cd repo
mkdir d0 d1 d2 d3 d4 d5 d6 d7 d8 d9
for c in \$(seq 1 $COMMITS); do
  case \$((c % 3)) in 0) b=main ;; 1) b=feature ;; 2) b=fix ;; esac
  git checkout -q \$b 2>/dev/null || git checkout -q -b \$b
  awk -v c=\$c 'BEGIN { for (f = 1; f <= 100; f++) if ((f * 7 + c) % 5 == 0 || c == 1) {
    file = "d" (f % 10) "/file" f ".txt"
    for (i = f + c; i <= f + c + 40; i++) print "line c" c " f" f " " i > file
    close(file) } }'
  git add -A && git commit -q -m "commit \$c on \$b"
  if (( c % 10 == 0 )); then git checkout -q main && git merge -q -X theirs --no-edit feature || true; fi
done
git checkout -q main
git tag -a v1 -m "tag v1"
git rev-parse HEAD
SH
mkdir "$DROPIN_TMP/plain" "$DROPIN_TMP/tx"
(cd "$DROPIN_TMP/plain" && bash "$DROPIN_TMP/build_repo.sh" >"$DROPIN_TMP/build.plain.out" 2>&1)
(cd "$DROPIN_TMP/tx" && env LD_PRELOAD="$TXALLOC_LIB" TXALLOC_STATS=1 bash "$DROPIN_TMP/build_repo.sh" \
  >"$DROPIN_TMP/build.tx.out" 2>"$DROPIN_TMP/build.tx.err")
if [[ "$(tail -n1 "$DROPIN_TMP/build.plain.out")" != "$(tail -n1 "$DROPIN_TMP/build.tx.out")" ]]; then
  dropin_fail "git: repositories built plainly and under txalloc have different HEADs"
fi
mallocs=$(dropin_stats_mallocs "$DROPIN_TMP/build.tx.err")
if ((mallocs < 10000)); then dropin_fail "git build: txalloc served only $mallocs mallocs"; fi
echo "git build: HEAD $(tail -n1 "$DROPIN_TMP/build.tx.out"), $mallocs mallocs by txalloc" >&2

# Read-only commands, each run plainly and preloaded on the same repository.
cd "$DROPIN_TMP/plain/repo"
dropin_compare git_log 1000 git log --stat -p --all
dropin_compare git_blame 100 git blame d1/file1.txt
dropin_compare git_grep 100 git grep -n "c3 f1"
dropin_compare git_diff 1000 git diff feature fix
dropin_compare git_show 100 git show v1
dropin_compare git_repack 1000 git repack -a -d -q
dropin_compare git_fsck 1000 git fsck --full --strict
dropin_compare git_count 100 git count-objects -v
dropin_finish
