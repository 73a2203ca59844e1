#!/usr/bin/env bash
# The checked-out cohort: run with the gate (its exit code is the step's gate output, acted on
# last), exported, its root digest in the outputs and the job summary.
set -euo pipefail
: "${RUNNER_TEMP:?}" "${GITHUB_OUTPUT:?}" "${INPUT_CONFIG:?}"
# A pull request's cohort is a new freeze (its change is a frozen field), which the base's
# registry would refuse: it runs in a store of its own, reusing what is unchanged through the
# remote cache. A push grows the base store, saved after the job.
store=.pairbench
if [ -n "${PULL_REQUEST:-}" ]; then store="$RUNNER_TEMP/pairbench-head-store"; fi
remote=()
if [ -n "${INPUT_REMOTE_CACHE:-}" ]; then remote=(--remote-cache "$INPUT_REMOTE_CACHE"); fi
gate=()
if [ -n "${INPUT_FAIL_ON:-}" ]; then gate=(--fail-on "$INPUT_FAIL_ON"); fi
set +e
pairbench run --config "$INPUT_CONFIG" --store "$store" "${remote[@]}" ${INPUT_REMOTE_CACHE:+--cache-mode "${CACHE_MODE:-read-write}"} "${gate[@]}"
code=$?
set -e
echo "gate=$code" >> "$GITHUB_OUTPUT"
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
