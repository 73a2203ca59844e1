#!/usr/bin/env bash
# The cohort to judge, run and exported. On a pull request: the review tree (the base's
# protocol, the pull request's treatment) in this job's own store, reading the base store
# actions/cache restored, the base step's store and this pull request's store from its last
# push (all read-only), and the workflow's remote cache read-only: only what the change
# touches runs, and nothing but this job's own store is written. On a push: the checkout, in
# the base store it grows (saved after the job, bounded by gc), the remote cache read-write.
set -euo pipefail
: "${RUNNER_TEMP:?}" "${GITHUB_OUTPUT:?}" "${INPUT_CONFIG:?}"
project=$(pwd)
store=.pairbench
remote=()
mode_name=read-write
if [ -n "${PULL_REQUEST:-}" ]; then
  store="$RUNNER_TEMP/pairbench-head-store"
  rm -rf "$store"
  mode_name=read-only
  remote=(--ignore-config-cache)
  reads=()
  for s in "$project/.pairbench" "$RUNNER_TEMP/pairbench-base-store" "$RUNNER_TEMP/pairbench-pr-store"; do
    if [ -d "$s/cas" ]; then reads+=("$s"); fi
  done
  if [ -f "$RUNNER_TEMP/pairbench-review.json" ]; then
    top=$(git rev-parse --show-toplevel)
    cd "$RUNNER_TEMP/pairbench-base/$(realpath --relative-to="$top" "$project")"
  fi
fi
if [ -n "${INPUT_REMOTE_CACHE:-}" ]; then remote+=(--remote-cache "$INPUT_REMOTE_CACHE" --cache-auth-env PAIRBENCH_CACHE_AUTH); fi
read=()
if [ -n "${reads[*]:-}" ]; then read=(--read-store "$(IFS=:; echo "${reads[*]}")"); fi
set +e
mode=()
if [ -n "${INPUT_REMOTE_CACHE:-}" ]; then mode=(--cache-mode "$mode_name"); fi
pairbench run --config "$INPUT_CONFIG" --store "$store" "${read[@]}" "${remote[@]}" "${mode[@]}"
code=$?
set -e
echo "run=$code" >> "$GITHUB_OUTPUT"
out="$RUNNER_TEMP/pairbench-bundle"
rm -rf "$out"
if ! pairbench export --config "$INPUT_CONFIG" --store "$store" "${remote[@]}" --out "$out" --json > "$RUNNER_TEMP/pairbench-export.json"; then
  echo "::warning::no bundle: the run did not build its export step (exit $code)"
  exit 0
fi
digests=$(node -e 'for (const b of JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).bundles) console.log(`sha256:${b.root_digest} ${b.dir}`)' "$RUNNER_TEMP/pairbench-export.json")
echo "root-digest=$(echo "$digests" | head -1 | cut -d' ' -f1)" >> "$GITHUB_OUTPUT"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  echo "$digests" | while read -r digest dir; do echo "bundle root digest: $digest (${dir#"$RUNNER_TEMP/"})"; done >> "$GITHUB_STEP_SUMMARY"
fi
# A push grows the base store that actions/cache saves: gc keeps it under the config's store.max_size.
if [ -z "${PULL_REQUEST:-}" ]; then pairbench gc --config "$INPUT_CONFIG" --store "$store" >/dev/null; fi
