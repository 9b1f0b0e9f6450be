"""Test runners and the files each one reads by name: the vocabulary of the grading surface.

Each table is what the runner itself documents (and the tests check against the real tool):
the names it looks for, in the order it looks for them. :mod:`infomark.gates.surface` uses
them to discover what grades an oracle; :mod:`infomark.gates.grading` and
:mod:`infomark.gates.scratch` read :data:`TEST_CONFIG_NAMES`. Standard library
only (the hook's start-up path).
"""

from __future__ import annotations

from infomark.kernel.enums import StrEnum

__all__ = [
    "CARGO_FILES",
    "GO_FILES",
    "JEST_CONFIGS",
    "MAKEFILE_NAMES",
    "MOCHA_CONFIGS",
    "NODE_PACKAGE_FILES",
    "NOX_FILES",
    "PYTEST_CONFIG_NAMES",
    "PYTHON_STARTUP_NAMES",
    "TEST_CONFIG_NAMES",
    "TOX_FILES",
    "UNITTEST_FILES",
    "VITEST_CONFIGS",
    "ReportFormat",
    "RunnerKind",
]


class RunnerKind(StrEnum):
    """Which test runner an oracle runs (``unknown``: none the table knows)."""

    PYTEST = "pytest"
    UNITTEST = "unittest"
    MAKE = "make"
    NPM = "npm"  # npm / yarn / pnpm running a package.json script
    JEST = "jest"
    VITEST = "vitest"
    MOCHA = "mocha"
    NODE_TEST = "node_test"  # node --test
    CARGO = "cargo"
    GO = "go"
    TOX = "tox"
    NOX = "nox"
    UNKNOWN = "unknown"


class ReportFormat(StrEnum):
    """The machine-readable report an attested run's outcome is read from."""

    PYTEST_PLUGIN = "pytest-plugin"  # infomark's standalone plugin, cross-checked with JUnit XML
    JEST_JSON = "jest-json"  # jest / vitest `--json --outputFile`
    GO_JSON = "go-test-json"  # go test -json
    CARGO_JSON = "libtest-json"  # cargo test -- -Z unstable-options --format json (nightly)
    EXIT_STATUS = "exit-status-only"  # the runner offers none: the outcome is the exit status


#: pytest ≥ 9 (``_pytest.config.findpaths.CONFIG_LOADERS_BY_NAME``), in precedence order within
#: one directory; the first directory (from the common ancestor of the arguments upwards) that
#: holds a file with pytest configuration wins. ``pytest.toml``, ``.pytest.toml``,
#: ``pytest.ini`` and ``.pytest.ini`` count even when empty; ``pyproject.toml`` needs
#: ``[tool.pytest]`` / ``[tool.pytest.ini_options]``, ``tox.ini`` ``[pytest]``, ``setup.cfg``
#: ``[tool:pytest]``.
PYTEST_CONFIG_NAMES: tuple[str, ...] = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)

#: What the interpreter itself runs before any test: ``site`` imports these from ``sys.path``.
PYTHON_STARTUP_NAMES: tuple[str, ...] = ("sitecustomize.py", "usercustomize.py")

#: unittest's discovery reads no configuration file; ``setup.py`` names a test suite.
UNITTEST_FILES: tuple[str, ...] = ("setup.py",)

#: GNU make reads the first of these it finds (``GNUmakefile``, ``makefile``, ``Makefile``).
MAKEFILE_NAMES: tuple[str, ...] = ("GNUmakefile", "makefile", "Makefile")

#: npm / yarn / pnpm: the scripts, the workspace and the runner's own settings.
NODE_PACKAGE_FILES: tuple[str, ...] = (
    "package.json",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    "pnpm-workspace.yaml",
    ".babelrc",
    "babel.config.js",
    "babel.config.cjs",
    "babel.config.mjs",
    "babel.config.json",
    "tsconfig.json",
)

#: jest's ``--config`` candidates, in the order jest looks for them.
JEST_CONFIGS: tuple[str, ...] = (
    "jest.config.js",
    "jest.config.ts",
    "jest.config.mjs",
    "jest.config.cjs",
    "jest.config.cts",
    "jest.config.json",
)

#: vitest's (and vite's, which vitest falls back to) configuration files.
VITEST_CONFIGS: tuple[str, ...] = (
    "vitest.config.ts",
    "vitest.config.mts",
    "vitest.config.cts",
    "vitest.config.js",
    "vitest.config.mjs",
    "vitest.config.cjs",
    "vitest.workspace.ts",
    "vitest.workspace.js",
    "vite.config.ts",
    "vite.config.mts",
    "vite.config.js",
    "vite.config.mjs",
    "vite.config.cjs",
)

#: mocha's run-control files, in its documented priority.
MOCHA_CONFIGS: tuple[str, ...] = (
    ".mocharc.js",
    ".mocharc.cjs",
    ".mocharc.yaml",
    ".mocharc.yml",
    ".mocharc.jsonc",
    ".mocharc.json",
)

#: cargo: the manifests, the lock file, build scripts and cargo's configuration.
CARGO_FILES: tuple[str, ...] = (
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    ".cargo/config.toml",
    ".cargo/config",
    "rust-toolchain.toml",
    "rust-toolchain",
)

#: go: the module, its sums, the workspace, vendored modules' list.
GO_FILES: tuple[str, ...] = ("go.mod", "go.sum", "go.work", "go.work.sum", "vendor/modules.txt")

#: tox reads the first of these with tox configuration.
TOX_FILES: tuple[str, ...] = ("tox.ini", "tox.toml", "pyproject.toml", "setup.cfg")

#: nox runs ``noxfile.py`` (or ``-f FILE``).
NOX_FILES: tuple[str, ...] = ("noxfile.py",)

#: The files that configure how tests are selected and run, by name, for every runner: creating
#: or changing one changes a grade (the grading digest and the scratch rules read this). Build
#: manifests that also list dependencies (``Cargo.toml``, ``go.mod``, ``tsconfig.json``) are
#: on each runner's surface but not here: an honest fix adds dependencies.
TEST_CONFIG_NAMES: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            "conftest.py",
            *PYTEST_CONFIG_NAMES,
            *PYTHON_STARTUP_NAMES,
            *MAKEFILE_NAMES,
            "package.json",
            *JEST_CONFIGS,
            *(n for n in VITEST_CONFIGS if n.startswith("vitest.")),
            *MOCHA_CONFIGS,
            "tox.toml",
            *NOX_FILES,
            ".rspec",
        )
    )
)
