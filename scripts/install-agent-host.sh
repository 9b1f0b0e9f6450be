#!/usr/bin/env bash
# Install one pinned agent CLI for the hosts' end-to-end tests into a private npm prefix.
#
#   scripts/install-agent-host.sh gemini|codex|opencode
#
# Idempotent and quiet: when a working binary of the pinned version is already there nothing is
# downloaded. Prints only the absolute path of the binary on stdout; npm's messages go to stderr.
# Exit status 1 when npm is missing or the install does not yield a working binary.
#
#   INFOMARK_E2E_CACHE  cache root (default: ~/.cache/infomark-e2e); the prefix is <cache>/hosts/<name>
# The versions are pinned here and in tests/e2e/hosts_harness.py (HOST_VERSIONS): keep them equal.
set -euo pipefail

name="${1:-}"
case "$name" in
    gemini) package="@google/gemini-cli" version="0.61.0" bin="gemini" want="0.61.0" ;;
    codex) package="@openai/codex" version="0.171.0" bin="codex" want="codex-cli 0.171.0" ;;
    opencode) package="opencode-ai" version="1.18.33" bin="opencode" want="1.18.33" ;;
    *)
        echo "usage: install-agent-host.sh gemini|codex|opencode" >&2
        exit 2
        ;;
esac
prefix="${INFOMARK_E2E_CACHE:-$HOME/.cache/infomark-e2e}/hosts/$name"
binary="$prefix/node_modules/.bin/$bin"

works() {
    [[ -x $binary ]] || return 1
    local home reported
    home="$(mktemp -d)"
    reported="$(HOME="$home" "$binary" --version 2>/dev/null)" || true
    rm -rf "$home"
    [[ $reported == "$want" ]]
}

if ! works; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "install-agent-host: npm not found on PATH; install Node.js (>= 20) and npm" >&2
        exit 1
    fi
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --save-exact --no-audit --no-fund --loglevel=error \
        "$package@$version" >&2
    if ! works; then
        echo "install-agent-host: npm finished but no working $bin $version is in $prefix" >&2
        exit 1
    fi
fi
printf '%s\n' "$binary"
