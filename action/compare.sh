#!/usr/bin/env bash
# The comment and the job summary: each head bundle compared with the base's bundle of the
# same export node (pairbench compare); without one, the head's report.
set -euo pipefail
: "${RUNNER_TEMP:?}"
# Relative paths from RUNNER_TEMP: the comment names the bundles by the artifact's names, not the runner's disk.
cd "$RUNNER_TEMP"
head=pairbench-bundle
base=pairbench-base-bundle
out="$RUNNER_TEMP/pairbench-comment.md"
: > "$out"
if [ ! -d "$head" ]; then
  echo "**pairbench**: the run built no bundle; see the job log." > "$out"
else
  # One export node: the bundle itself; several: a directory per node.
  if [ -f "$head/manifest.json" ]; then nodes=(''); else mapfile -t nodes < <(cd "$head" && find . -mindepth 2 -maxdepth 2 -name manifest.json -printf '%h\n' | cut -c3- | sort); fi
  for node in "${nodes[@]}"; do
    h="$head${node:+/$node}"
    b="$base${node:+/$node}"
    if [ -f "$b/manifest.json" ]; then
      pairbench compare "$b" "$h" --html "pairbench-compare${node:+-${node//\//-}}.html" >> "$out"
    else
      if [ -n "${PULL_REQUEST:-}" ]; then echo "No bundle of the base branch for ${node:-the cohort} (a new cohort, or the base did not run): the head's report." >> "$out"; fi
      cat "$h/report.md" >> "$out"
    fi
    echo >> "$out"
  done
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$out" >> "$GITHUB_STEP_SUMMARY"; fi
