"""Package managers and project tools, as one declarative table and one interpreter of it.

Each :class:`Manager` row says which subcommands change installed packages or project files,
which run another command (``poetry run``), which fetch and run a tool (``npm exec``), which
nest a second level (``uv pip install``, ``go mod tidy``), and the flag conditions under which
a subcommand rewrites files (``cargo fmt`` unless ``--check``). :func:`handle` reads the
row; adding a package manager is adding a row to :data:`MANAGERS`.
"""

from __future__ import annotations

from collections.abc import Mapping

from infomark.gates.shell.core import Env, ws
from infomark.gates.shell.words import Arg, _first_positional, _skip_options, _static
from infomark.gates.shell.wrappers import _h_exec_tool, _run_rest
from infomark.kernel.records import dataclass, field

__all__ = ["MANAGERS", "Manager", "handle", "handle_pacman"]

PKG_LONG_VALUES = ws(
    "--prefix --dir --cwd --filter --workspace --registry --cache --userconfig --python "
    "--directory --project --manifest-path --config --log --proxy --cache-dir --root "
    "--installroot --releasever --repo --enablerepo --disablerepo --setopt --name --channel"
)
_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Manager:
    """What one package manager's subcommands do (anything not listed only reads or runs)."""

    modifies: frozenset[str]  # subcommands that change packages or project files
    tools: frozenset[str] = _NONE  # fetch a tool and run it: `npm exec`, `pnpm dlx`
    runs: frozenset[str] = _NONE  # run the rest as a command: `poetry run pytest`
    nested: Mapping[str, Manager] = field(default_factory=dict)  # `uv pip …`, `go mod …`
    bare_modifies: bool = False  # no subcommand at all installs (`yarn`)
    bare_reads: frozenset[str] = _NONE  # … unless one of these flags is given (`yarn -v`)
    inline_code: frozenset[str] = _NONE  # flags anywhere that run inline code (`bun -e`)
    opaque_code: frozenset[str] = _NONE  # subcommands that run inline code (`deno eval`)
    unless: Mapping[str, frozenset[str]] = field(default_factory=dict)  # fmt unless --check
    when: Mapping[str, frozenset[str]] = field(default_factory=dict)  # clippy only with --fix
    short_val: str = "C"  # short options that take a value (before the subcommand)
    long_val: frozenset[str] = PKG_LONG_VALUES
    run_short: str = ""  # options of the `runs` subcommands that take a value
    run_long: frozenset[str] = _NONE


def handle(name: str, args: list[Arg], env: Env) -> None:
    """Classify ``name args`` by its row in :data:`MANAGERS`."""
    spec = MANAGERS[name]
    _interpret(spec, name, args, args, env)


def _interpret(spec: Manager, path: str, args: list[Arg], whole: list[Arg], env: Env) -> None:
    statics = set(_static(whole))
    if statics & spec.inline_code:
        env.modify("runs opaque inline code")
        return
    sub, rest = _first_positional(args, spec.short_val, spec.long_val)
    if sub is None:
        env.opaque(f"runs a computed {path} subcommand (opaque)")
        return
    here = f"{path} {sub}" if sub else path
    if sub == "":
        if spec.bare_modifies and not statics & spec.bare_reads:
            env.modify(f"installs packages ({path})")
        else:
            env.execute(f"runs {path}; not known to modify anything")
    elif sub in spec.opaque_code:
        env.modify("runs opaque inline code")
    elif sub in spec.tools:
        _h_exec_tool(path, rest, env)
    elif sub in spec.runs:
        _run_rest(rest[_skip_options(rest, spec.run_short, spec.run_long) :], env)
    elif sub in spec.nested:
        _interpret(spec.nested[sub], here, rest, whole, env)
    elif sub in spec.unless:
        if statics & spec.unless[sub]:
            env.execute(f"checks ({here}); not known to modify anything")
        else:
            env.modify(f"rewrites files ({here})")
    elif sub in spec.when and statics & spec.when[sub]:
        env.modify(f"rewrites files or packages ({here} {' '.join(sorted(spec.when[sub]))})")
    elif sub in spec.modifies:
        env.modify(f"changes installed packages or project files ({here})")
    else:
        env.execute(f"runs {here}; not known to modify anything")


def handle_pacman(name: str, args: list[Arg], env: Env) -> None:
    """pacman is driven by its operation flag (``-S``, ``-R`` …), not by a subcommand."""
    for v in _static(args):
        if v.startswith("-") and not v.startswith("--") and len(v) > 1:
            op = v[1]
            if op in "RUD" or (op == "S" and not set(v[2:]) & set("silgp")):
                env.modify("changes installed packages")
            else:
                env.execute("queries packages")
            return
    env.execute("queries packages")


_NPM = ws(
    "install i in ins inst insta instal isnt isnta isntal isntall add ci clean-install ic "
    "install-clean isntall-clean install-test it install-ci-test cit uninstall un unlink remove "
    "rm r update up upgrade udpate link ln prune dedupe ddp publish unpublish deprecate rebuild "
    "rb init create innit pkg version dist-tag"
)
_POETRY = Manager(
    ws("add remove install uninstall update upgrade lock init new build publish self sync clean"),
    runs=frozenset({"run"}),
)
_UV_RUN_VALUES = ws(
    "--with --with-editable --with-requirements --python -p --project --directory --env-file "
    "--extra --group --package --index --default-index --index-url --extra-index-url --from "
    "--cache-dir --config-file --only-group --no-group --exclude-newer"
)
_UV = Manager(
    ws("add remove sync lock init venv build publish self export format cache"),
    runs=frozenset({"run"}),
    run_short="pw",
    run_long=_UV_RUN_VALUES,
    nested={
        "pip": Manager(ws("install uninstall sync compile")),
        "tool": Manager(ws("install uninstall upgrade update-shell"), tools=frozenset({"run"})),
        "python": Manager(ws("install uninstall pin")),
    },
    short_val="",
)
_CONDA = Manager(
    ws("install remove uninstall update upgrade create clean rename"),
    tools=frozenset({"run"}),
    nested={"env": Manager(ws("create remove update"))},
)
_GO_MOD = Manager(ws("tidy download vendor init edit use sync"))
_BUNDLE = Manager(
    ws("install update add remove lock clean binstubs init gem"), tools=frozenset({"exec"})
)

MANAGERS: dict[str, Manager] = {
    **dict.fromkeys(("pip", "pip3"), Manager(ws("install uninstall download wheel"))),
    "pipx": Manager(
        ws(
            "install uninstall upgrade upgrade-all uninstall-all reinstall reinstall-all inject "
            "uninject ensurepath"
        ),
        tools=frozenset({"run"}),
    ),
    "npm": Manager(_NPM, tools=frozenset({"exec", "x"}), when={"audit": frozenset({"fix"})}),
    "pnpm": Manager(
        ws(
            "add install i remove rm un uninstall update up upgrade link ln unlink prune import "
            "dedupe rebuild rb init create patch patch-commit publish fetch setup"
        ),
        tools=frozenset({"dlx", "exec"}),
    ),
    "yarn": Manager(
        ws(
            "add install remove upgrade up upgrade-interactive link unlink dedupe import init "
            "create publish version patch patch-commit"
        ),
        tools=frozenset({"dlx", "exec"}),
        bare_modifies=True,
        bare_reads=ws("--version -v --help -h"),
        short_val="",
    ),
    "bun": Manager(
        ws("install i add a remove rm update link unlink init create upgrade publish patch"),
        tools=frozenset({"x"}),
        inline_code=ws("-e --eval -p --print"),
        short_val="",
        long_val=_NONE,
    ),
    "deno": Manager(
        ws("install uninstall add remove upgrade compile init"),
        opaque_code=frozenset({"eval"}),
        unless={"fmt": frozenset({"--check"})},
        short_val="",
        long_val=_NONE,
    ),
    **dict.fromkeys(
        ("apt", "apt-get", "aptitude"),
        Manager(
            ws(
                "install remove purge autoremove upgrade dist-upgrade full-upgrade update "
                "reinstall build-dep clean autoclean autopurge source satisfy"
            ),
            short_val="oc",
        ),
    ),
    **dict.fromkeys(
        ("dnf", "yum", "microdnf", "tdnf"),
        Manager(
            ws(
                "install remove erase update upgrade downgrade reinstall autoremove distro-sync "
                "groupinstall groupremove localinstall swap makecache clean"
            ),
            short_val="c",
        ),
    ),
    "apk": Manager(ws("add del upgrade update fix cache")),
    "zypper": Manager(
        ws("install in remove rm update up dist-upgrade dup patch refresh ref addrepo ar")
    ),
    "brew": Manager(
        ws(
            "install uninstall remove rm reinstall upgrade update tap untap link unlink cleanup "
            "autoremove pin unpin postinstall"
        )
    ),
    "port": Manager(ws("install uninstall upgrade selfupdate activate deactivate clean")),
    "snap": Manager(ws("install remove refresh revert enable disable")),
    "flatpak": Manager(ws("install uninstall update remove")),
    "cargo": Manager(
        ws(
            "install uninstall add remove rm update fix new init publish yank generate-lockfile "
            "vendor clean"
        ),
        unless={"fmt": frozenset({"--check"})},
        when={"clippy": frozenset({"--fix"})},
        short_val="Z",
    ),
    "go": Manager(
        ws("get install generate fmt clean"),
        nested={"mod": _GO_MOD, "work": _GO_MOD},
        long_val=_NONE,
    ),
    "gem": Manager(ws("install uninstall update cleanup pristine")),
    "bundle": _BUNDLE,
    "bundler": _BUNDLE,
    "composer": Manager(
        ws("install require update remove create-project dump-autoload upgrade u i req rm")
    ),
    "conda": _CONDA,
    "mamba": _CONDA,
    "micromamba": _CONDA,
    "poetry": _POETRY,
    "pipenv": _POETRY,
    "pdm": _POETRY,
    "hatch": _POETRY,
    "rustup": Manager(
        ws("install update uninstall default self target component toolchain override set")
    ),
    "pre-commit": Manager(ws("install uninstall autoupdate clean gc install-hooks run")),
    "dotnet": Manager(ws("add remove new restore tool workload")),
    "uv": _UV,
}
