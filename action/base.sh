#!/usr/bin/env bash
# On a pull request: the base branch's cohort, exported for the check. The base commit in a
# worktree (prepared with the base's own scripts: nothing of the pull request runs here), run
# in a store of this job's own that reads the base store actions/cache restored (read-only, so
# what main already ran is reused with no server) and the remote cache the workflow names
# (read-only). The config's cache: is never read: on a pull request the workflow decides where
# records and credentials go. Writes pairbench-base-status: ok, no-config or not-run.
set -euo pipefail
: "${RUNNER_TEMP:?}" "${BASE_SHA:?}" "${INPUT_CONFIG:?}"
project=$(pwd)
top=$(git rev-parse --show-toplevel)
rel=$(realpath --relative-to="$top" "$project")
base="$RUNNER_TEMP/pairbench-base"
out="$RUNNER_TEMP/pairbench-base-bundle"
status="$RUNNER_TEMP/pairbench-base-status"
rm -rf "$out" "$RUNNER_TEMP/pairbench-base-store"
echo not-run > "$status"
git cat-file -e "$BASE_SHA^{commit}" 2>/dev/null || git fetch --no-tags --depth=1 origin "$BASE_SHA"
git worktree remove --force "$base" 2>/dev/null || rm -rf "$base"
git worktree add --quiet --detach "$base" "$BASE_SHA"
cd "$base/$rel"
if [ ! -f "$INPUT_CONFIG" ]; then
  echo "the base ($BASE_SHA) has no $rel/$INPUT_CONFIG: nothing to compare with"
  echo no-config > "$status"
  exit 0
fi
if [ -n "${INPUT_PREPARE:-}" ]; then bash -e -c "$INPUT_PREPARE"; fi
remote=(--ignore-config-cache)
if [ -n "${INPUT_REMOTE_CACHE:-}" ]; then remote+=(--remote-cache "$INPUT_REMOTE_CACHE" --cache-auth-env PAIRBENCH_CACHE_AUTH); fi
read=()
if [ -d "$project/.pairbench/cas" ]; then read=(--read-store "$project/.pairbench"); fi
mode=()
if [ -n "${INPUT_REMOTE_CACHE:-}" ]; then mode=(--cache-mode read-only); fi
if ! pairbench run --config "$INPUT_CONFIG" --store "$RUNNER_TEMP/pairbench-base-store" "${read[@]}" "${remote[@]}" "${mode[@]}"; then
  echo "::warning::the base branch's cohort did not run to the end: the check cannot compare the pull request with it"
  exit 0
fi
pairbench export --config "$INPUT_CONFIG" --store "$RUNNER_TEMP/pairbench-base-store" "${remote[@]}" --out "$out" >/dev/null
echo ok > "$status"
