#!/usr/bin/env bash
# Install the pinned Claude Code CLI for the end-to-end tests into a private npm prefix.
#
# Idempotent and quiet: when a working binary of the pinned version is already there nothing is
# downloaded. Prints only the absolute path of the binary on stdout; npm's messages and errors go
# to stderr. Exit status 1 when npm is missing or the install does not yield a working binary.
#
#   INFOMARK_E2E_CACHE      install prefix (default: ~/.cache/infomark-e2e)
#   INFOMARK_CLAUDE_VERSION version to install (default below; keep in sync with
#                           CLAUDE_CODE_VERSION in tests/e2e/claude_harness.py)
set -euo pipefail

version="${INFOMARK_CLAUDE_VERSION:-2.1.328}"
prefix="${INFOMARK_E2E_CACHE:-$HOME/.cache/infomark-e2e}"

platform_package() {
    local os arch libc=""
    case "$(uname -s)" in
        Linux) os=linux ;;
        Darwin) os=darwin ;;
        *) return 1 ;;
    esac
    case "$(uname -m)" in
        x86_64 | amd64) arch=x64 ;;
        aarch64 | arm64) arch=arm64 ;;
        *) return 1 ;;
    esac
    if [[ $os == linux ]] && compgen -G "/lib/ld-musl-*" >/dev/null; then
        libc=-musl
    fi
    printf '@anthropic-ai/claude-code-%s-%s%s\n' "$os" "$arch" "$libc"
}

# Print the first candidate binary that runs and reports the pinned version.
find_binary() {
    local package candidate reported
    local -a candidates=()
    if package="$(platform_package)"; then
        candidates+=("$prefix/node_modules/$package/claude")
    fi
    candidates+=("$prefix/node_modules/.bin/claude")
    for candidate in "${candidates[@]}"; do
        [[ -x $candidate ]] || continue
        reported="$("$candidate" --version 2>/dev/null)" || continue
        if [[ $reported == "$version "* ]]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

if find_binary; then
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "install-claude-code: npm not found on PATH; install Node.js (>= 20) and npm" >&2
    exit 1
fi

mkdir -p "$prefix"
npm install --prefix "$prefix" --save-exact --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$version" >&2

if ! find_binary; then
    echo "install-claude-code: npm finished but no working claude $version is in $prefix" >&2
    exit 1
fi
