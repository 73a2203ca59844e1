#!/usr/bin/env bash
# The action's first step: pairbench on PATH, and a sandbox that works on this runner.
set -euo pipefail
: "${RUNNER_TEMP:?}" "${GITHUB_PATH:?}"

# pairbench: the one given (npm spec, tarball or directory), or the project's own (a devDependency).
bin="$RUNNER_TEMP/pairbench-bin"
mkdir -p "$bin"
if [ -n "${INPUT_PACKAGE:-}" ]; then
  prefix="$RUNNER_TEMP/pairbench-install"
  npm install --no-save --no-audit --no-fund --prefix "$prefix" "$INPUT_PACKAGE" >&2
  target="$prefix/node_modules/.bin/pairbench"
else
  dir=$(cd "${INPUT_WORKING_DIRECTORY:-.}" && pwd)
  if [ -x "$dir/node_modules/.bin/pairbench" ]; then
    target="$dir/node_modules/.bin/pairbench"
  elif [ "$(node -p 'require(process.argv[1]).name' "$dir/package.json" 2>/dev/null)" = pairbench ]; then
    target="$dir/bin/pairbench.js" # pairbench's own repository
  else
    echo "::error::pairbench is not installed in $dir: add it to devDependencies (pairbench is not on the npm registry: npm install --save-dev with its packed tarball or its git URL) and run npm ci before this action, or set the action's package input to one of those" >&2
    exit 1
  fi
fi
printf '#!/usr/bin/env bash\nexec %q "$@"\n' "$target" > "$bin/pairbench"
chmod +x "$bin/pairbench"
echo "$bin" >> "$GITHUB_PATH"
"$bin/pairbench" --version

# Ubuntu 24.04 (ubuntu-latest) lets AppArmor refuse unprivileged user namespaces, which
# bubblewrap needs; without this, backend auto falls back to running unisolated.
userns=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
if [ -r "$userns" ] && [ "$(cat "$userns")" = 1 ]; then
  echo "AppArmor restricts unprivileged user namespaces here: allowing them for bubblewrap (sysctl $userns=0)"
  sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0
fi
if ! command -v bwrap >/dev/null; then
  echo "bubblewrap is not installed: installing it (the sandbox of backend auto)"
  sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap
fi
