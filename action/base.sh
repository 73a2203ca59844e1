#!/usr/bin/env bash
# On a pull request: the base branch's cohort, run where everything it needs is cached (the
# base's store, restored from its cache, and the remote cache read-only) and exported, for
# compare. A base that has no config, or whose run fails, leaves no bundle: compare says so.
set -euo pipefail
: "${RUNNER_TEMP:?}" "${BASE_SHA:?}" "${INPUT_CONFIG:?}"
project=$(pwd)
top=$(git rev-parse --show-toplevel)
rel=$(realpath --relative-to="$top" "$project")
base="$RUNNER_TEMP/pairbench-base"
out="$RUNNER_TEMP/pairbench-base-bundle"
rm -rf "$out"
git cat-file -e "$BASE_SHA^{commit}" 2>/dev/null || git fetch --no-tags --depth=1 origin "$BASE_SHA"
git worktree remove --force "$base" 2>/dev/null || rm -rf "$base"
git worktree add --detach "$base" "$BASE_SHA"
cd "$base/$rel"
if [ ! -f "$INPUT_CONFIG" ]; then
  echo "the base ($BASE_SHA) has no $rel/$INPUT_CONFIG: nothing to compare with"
  exit 0
fi
if [ -n "${INPUT_PREPARE:-}" ]; then bash -e -c "$INPUT_PREPARE"; fi
remote=()
if [ -n "${INPUT_REMOTE_CACHE:-}" ]; then remote=(--remote-cache "$INPUT_REMOTE_CACHE"); fi
if ! pairbench run --config "$INPUT_CONFIG" --store "$project/.pairbench" "${remote[@]}" ${INPUT_REMOTE_CACHE:+--cache-mode read-only}; then
  echo "::warning::the base branch's cohort did not run to the end: the pull request is reported without a comparison"
  exit 0
fi
pairbench export --config "$INPUT_CONFIG" --store "$project/.pairbench" "${remote[@]}" --out "$out"
