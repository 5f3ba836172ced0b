#!/usr/bin/env bash
# buf breaking against the schemas this commit started from: the merge base with main on a branch,
# the previous commit on main itself (CI runs a fresh clone where main is the only branch and HEAD
# is its tip). Comparing with the merge base rather than main's tip keeps a branch's check about
# its own changes. The base's proto/ and buf.yaml come out of git (git archive: works in clones and
# worktrees alike) next to the same .build/protovalidate the current schemas resolve their imports
# with, since third-party schemas are not checked in.
set -euo pipefail
cd "$(dirname "$0")/.."
head=$(git rev-parse HEAD)
base=""
if git rev-parse -q --verify main >/dev/null; then
  base=$(git merge-base HEAD main || true)
fi
if [ -z "$base" ] || [ "$base" = "$head" ]; then
  base=$(git rev-parse -q --verify HEAD~1 || true)
fi
if [ -z "$base" ]; then
  echo "buf breaking: no earlier commit to compare against (a shallow clone of depth 1?): skipped"
  exit 0
fi
if [ -z "$(git ls-tree "$base" -- proto)" ]; then
  echo "buf breaking: $base has no proto/: nothing to compare against"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$base" -- proto buf.yaml | tar -x -C "$tmp"
mkdir -p "$tmp/.build"
cp -r .build/protovalidate "$tmp/.build/"
buf breaking --against "$tmp"
echo "buf breaking: no breaking change against $(git rev-parse --short "$base")"
