#!/usr/bin/env bash
# The check (pairbench check): the head's bundles against the base's, judged by the base's
# preregistered gate (and the fail-on input, which can only add to it), the protocol changes
# the review found. Writes the comment and the job summary; its exit code is the gate output.
set -uo pipefail
: "${RUNNER_TEMP:?}" "${GITHUB_OUTPUT:?}"
out="$RUNNER_TEMP/pairbench-comment.md"
head="$RUNNER_TEMP/pairbench-bundle"
args=(--out "$out" --head-label "${HEAD_SHA:0:12}")
if [ -n "${GITHUB_SERVER_URL:-}" ] && [ -n "${GITHUB_REPOSITORY:-}" ] && [ -n "${GITHUB_RUN_ID:-}" ]; then
  args+=(--link "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID")
fi
if [ -n "${INPUT_FAIL_ON:-}" ]; then args+=(--fail-on "$INPUT_FAIL_ON"); fi
if [ -n "${PULL_REQUEST:-}" ]; then
  missing=$(cat "$RUNNER_TEMP/pairbench-base-status" 2>/dev/null || echo not-run)
  if [ "$missing" = ok ]; then missing=not-run; fi
  args+=(--base "$RUNNER_TEMP/pairbench-base-bundle" --base-missing "$missing" --base-label "${BASE_SHA:0:12}")
  if [ -f "$RUNNER_TEMP/pairbench-review.json" ]; then args+=(--review "$RUNNER_TEMP/pairbench-review.json"); fi
else
  args+=(--base-missing push)
fi
if [ "${RUN_CODE:-1}" != 0 ] && [ ! -d "$head" ]; then
  echo "**pairbench**: the run built no bundle (exit ${RUN_CODE:-unknown}); see the job log." > "$out"
  code="${RUN_CODE:-1}"
else
  pairbench check "$head" "${args[@]}"
  code=$?
  # A run that failed some node fails the check whatever the verdicts say.
  if [ "$code" = 0 ] && [ "${RUN_CODE:-0}" != 0 ]; then code="$RUN_CODE"; fi
fi
echo "gate=$code" >> "$GITHUB_OUTPUT"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$out" >> "$GITHUB_STEP_SUMMARY"; fi
exit 0
