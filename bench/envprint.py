"""What fingerprinting an environment costs an attested run: ``python -m bench.envprint [N]``.

An attested run compares the project's environments with the fingerprints its baseline
recorded, before the run and again after it (:func:`infomark.gates.baseline.environment_changes`,
:mod:`infomark.gates.envprint`): one ``lstat`` per entry, the listing sorted and hashed.
This builds a ``node_modules`` shaped like an installed one (N packages, each with its
``package.json``, ``lib/`` and ``build/`` of eight modules: 20 entries a package; 1,100
packages ≈ 22,000 entries, about what ``npm install jest`` leaves) and times one fingerprint, paired
(B A B A) with the least a comparison must do: ``os.walk`` of the same tree with an ``lstat``
of every entry and nothing kept. Both run on a warm page cache, as the second of the two
looks of a run does; the first after an ``npm install`` is warm too.
"""

from __future__ import annotations

import os
import sys
import tempfile

from bench._timing import paired
from infomark.gates import envprint


def build(root: str, packages: int) -> None:
    """A ``node_modules`` of ``packages`` packages under ``root``."""
    top = os.path.join(root, "node_modules")
    for p in range(packages):
        pkg = os.path.join(top, f"pkg-{p}")
        os.makedirs(pkg)
        with open(os.path.join(pkg, "package.json"), "w") as f:
            f.write(f'{{"name": "pkg-{p}", "main": "lib/m0.js"}}\n')
        for sub in ("lib", "build"):
            d = os.path.join(pkg, sub)
            os.mkdir(d)
            for i in range(8):
                with open(os.path.join(d, f"m{i}.js"), "w") as f:
                    f.write(f"module.exports = {i};\n" * 20)


def walk_lstat(top: str) -> int:
    n = 0
    for d, dirs, files in os.walk(top):
        for name in (*dirs, *files):
            os.lstat(os.path.join(d, name))
            n += 1
    return n


def main(argv: list[str]) -> int:
    packages = int(argv[0]) if argv else 1100
    with tempfile.TemporaryDirectory() as root:
        build(root, packages)
        top = os.path.join(root, "node_modules")
        count = walk_lstat(top)
        got = paired(lambda: envprint.fingerprint(root), lambda: walk_lstat(top), pairs=15)
        listing = envprint.fingerprint(root)["node_modules"][1]
    print(f"| node_modules of {count:,} entries | ours | baseline | ratio |")
    print("|---|---|---|---|")
    print(
        f"| one fingerprint (lstat, sort, sha256) | {got.ours * 1000:.1f} ms | "
        f"{got.base * 1000:.1f} ms | {got.ratio:.2f}x os.walk + lstat |"
    )
    print(f"| the listing a baseline stores | {len(listing) / 1024:.0f} KiB | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
