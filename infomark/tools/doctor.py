"""``infomark doctor``: is every installed integration mounted, running and safe?

:func:`infomark.tools.doctor_hosts.diagnose` reads, never writes: the ledger home (its
modes, its key, its journal), the configuration, the environment, and the hosts' own files
(Claude Code's settings and transcripts, MCP clients' server lists). Each
:class:`Finding` is ``ok``, ``info``, ``warning`` or ``problem``; a problem says how to fix
it. Whether the agent's tools could read the key or the token is asked of the real
classifier and self-protection rules, with the commands an agent would try.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "STATUSES",
    "Activity",
    "Finding",
    "config_findings",
    "environment_findings",
    "has_journal",
    "home_findings",
    "journal_activity",
    "json_object",
    "option_value",
    "reach_findings",
    "read_json",
    "runnable",
    "service_up",
    "settings_env_findings",
]

STATUSES = ("ok", "info", "warning", "problem")
_SECRETS = ("key", "token", "signing_key")
_STORE = ("ledger.db", "ledger.db-wal", "ledger.db-shm")


@dataclass(frozen=True)
class Finding:
    """One thing doctor checked: where, what it found, and how to fix a problem."""

    area: str  # home, config, environment, claude-code, mcp, service
    check: str  # a stable id, e.g. home_private
    status: str  # one of STATUSES
    message: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)  # every field, in order


@dataclass
class Activity:
    """What the journal says about the sessions each host drove."""

    sessions: list[Any] = field(default_factory=list)  # SessionStory, newest first
    errors: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)  # (seq, type, text)
    refs: dict[str, list[str]] = field(default_factory=dict)  # evidence refs, in order
    packs: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # fired by denials
    readable: bool = True
    why: str = ""

    def of_host(self, host: str) -> list[Any]:
        return [s for s in self.sessions if s.host == host]

    def named(self, session: str) -> Any | None:
        return next((s for s in self.sessions if s.session == session), None)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _store(home: Path) -> str | None:
    """The home's PostgreSQL store URL (None: its SQLite file), by the store rules
    (``--store`` aside: ``$INFOMARK_STORE``, then ``<home>/store``). Raises ConfigError."""
    from infomark.ledger.store.select import resolve_store

    return resolve_store(home)


def has_journal(home: Path) -> bool:
    """Is there a home with a journal: its ``ledger.db``, or a home whose store is PostgreSQL."""
    from infomark.kernel.errors import InfomarkError

    if (home / "ledger.db").is_file():
        return True
    try:
        return home.is_dir() and _store(home) is not None
    except InfomarkError:
        return home.is_dir()  # journal_activity says why the store cannot be used


def home_findings(home: Path, root: Path) -> list[Finding]:
    """The home: it exists, it is private, its secrets are 0600 and out of the agent's reach."""
    out: list[Finding] = []
    if not has_journal(home):
        out.append(
            Finding(
                "home",
                "home_exists",
                "problem",
                f"no ledger home at {home}",
                f"create it with `infomark init --home {shlex.quote(str(home))}`, or pass the "
                "--home your integrations use",
            )
        )
        return out
    mode = _mode(home)
    if mode & 0o077:
        out.append(
            Finding(
                "home",
                "home_private",
                "problem",
                f"{home} is mode {mode:o}: other users can list or read the journal and keys",
                f"chmod 700 {shlex.quote(str(home))}",
            )
        )
    else:
        out.append(Finding("home", "home_private", "ok", f"{home} is private (mode {mode:o})"))
    names = _SECRETS + (_STORE if mode & 0o077 else ())
    present = [n for n in names if (home / n).is_file()]
    loose = [(n, _mode(home / n)) for n in present if _mode(home / n) & 0o077]
    for name, m in loose:
        out.append(
            Finding(
                "home",
                "secret_mode",
                "problem",
                f"{home / name} is mode {m:o}: readable beyond its owner",
                f"chmod 600 {shlex.quote(str(home / name))}",
            )
        )
    if not loose:
        secrets = [n for n in _SECRETS if (home / n).is_file()]
        out.append(Finding("home", "secret_mode", "ok", f"mode 0600: {', '.join(secrets)}"))
    out.extend(_key_file(home))
    if not (home / ".gitignore").is_file():
        out.append(
            Finding(
                "home",
                "gitignore",
                "warning",
                f"{home} has no .gitignore: `git add -A` would commit the key and the journal",
                f"infomark init --home {shlex.quote(str(home))} (it writes one)",
            )
        )
    out.extend(reach_findings(home, root))
    return out


def _key_file(home: Path) -> list[Finding]:
    key = home / "key"
    if os.environ.get("INFOMARK_KEY"):
        return []  # the environment check reports it
    if not key.is_file():
        return [
            Finding(
                "home",
                "key",
                "problem",
                f"{key} is missing: the journal cannot be verified or extended",
                "restore the key from a backup (a new key cannot verify the old journal)",
            )
        ]
    size = key.stat().st_size
    if size != 32:
        return [
            Finding(
                "home",
                "key",
                "problem",
                f"{key} holds {size} bytes, not 32: every integration fails closed",
                "restore the key from a backup",
            )
        ]
    return [Finding("home", "key", "ok", f"{key}: 32 bytes")]


def _probes(home: Path, root: Path, name: str) -> list[tuple[str, dict[str, object], str]]:
    path = home / name
    shown = str(path)
    try:
        rel = os.path.relpath(path.resolve(), root.resolve())
    except ValueError:
        rel = shown
    short = rel if not rel.startswith("..") else shown
    return [
        ("Read", {"file_path": str(path.resolve())}, f"Read {path.resolve()}"),
        ("Bash", {"command": f"cat {shlex.quote(short)}"}, f"cat {short}"),
        ("Bash", {"command": f"cp {shlex.quote(shown)} /tmp/k"}, f"cp {shown} /tmp/k"),
        ("Bash", {"command": f"base64 < {shlex.quote(short)}"}, f"base64 < {short}"),
        ("Grep", {"pattern": ".", "path": str(home)}, f"Grep in {home}"),
        ("mcp__shell__run_command", {"command": f"cat {short}"}, f"an MCP shell tool: cat {short}"),
    ]


def reach_findings(home: Path, root: Path) -> list[Finding]:
    """Would the agent's tools be allowed to read the key, the token or the journal?

    Asked of the same classifier and self-protection the gate uses (any profile), with the
    calls an agent would try; an allowed probe is a problem.
    """
    from infomark.gates.classify import classify_tool
    from infomark.gates.protect import protected

    leaks: list[str] = []
    for name in ("key", "token", "ledger.db"):
        if not (home / name).exists():
            continue
        for tool, tool_input, shown in _probes(home, root, name):
            hints = {"readOnlyHint": False} if tool.startswith("mcp__") else None
            c = classify_tool(tool, tool_input, mcp_annotations=hints)
            verdict = protected(tool, tool_input, c, home=home, root=root)
            if verdict is None or verdict[0] == "allow":
                leaks.append(shown)
    if leaks:
        return [
            Finding(
                "home",
                "agent_reach",
                "problem",
                "the agent's tools would be allowed to read the home: " + "; ".join(leaks[:5]),
                "report this as a bug in infomark; meanwhile keep the home outside the "
                "project and pass the same --home to every integration",
            )
        ]
    return [
        Finding(
            "home",
            "agent_reach",
            "ok",
            "the agent's tools cannot read the key, token or journal (Read, cat, cp, Grep "
            "and an MCP shell tool are denied by self-protection)",
        )
    ]


def environment_findings(env: dict[str, str] | None = None) -> list[Finding]:
    """Secrets in this environment reach every agent started from it (and its Bash calls)."""
    env = dict(os.environ) if env is None else env
    out: list[Finding] = []
    for var, what in (("INFOMARK_KEY", "the HMAC key"), ("INFOMARK_TOKEN", "the service token")):
        if env.get(var):
            out.append(
                Finding(
                    "environment",
                    "secret_in_env",
                    "problem",
                    f"{var} ({what}) is set in this environment: an agent started from here "
                    "inherits it, and one `env` in its shell prints it",
                    f"unset {var}; infomark reads it from the home (0600) instead",
                )
            )
    if env.get("INFOMARK_BYPASS_GROUNDING") == "1":
        out.append(
            Finding(
                "environment",
                "bypass",
                "warning",
                "INFOMARK_BYPASS_GROUNDING=1 is set: grounding denials are let through "
                "(journaled as bypasses)",
                "unset INFOMARK_BYPASS_GROUNDING",
            )
        )
    if not out:
        out.append(
            Finding("environment", "secret_in_env", "ok", "no key, token or bypass in the env")
        )
    return out + _otel_findings(env)


def _otel_findings(env: dict[str, str]) -> list[Finding]:
    """``INFOMARK_OTEL`` (docs/integrations.md): a value it can honour, and the packages."""
    from infomark.kernel.errors import ConfigError
    from infomark.tools.otel import otel_wanted

    if not env.get("INFOMARK_OTEL"):
        return []
    try:
        wanted = otel_wanted(env)
    except ConfigError as exc:
        return [Finding("environment", "otel", "problem", str(exc), "fix or unset the variable")]
    if not wanted:
        return [Finding("environment", "otel", "info", "OpenTelemetry export is off")]
    missing = [
        m for m in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http") if _no_module(m)
    ]
    if missing:
        return [
            Finding(
                "environment",
                "otel",
                "problem",
                f"INFOMARK_OTEL is on but {', '.join(missing)} cannot be imported: every "
                "command refuses to run, and the hook exports nothing",
                "pip install 'infomark[otel]', or unset INFOMARK_OTEL",
            )
        ]
    where = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or "http://localhost:4318 (the default)"
    )
    return [Finding("environment", "otel", "ok", f"OpenTelemetry spans go to {where}")]


def _no_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:
        return True


def config_findings(root: Path) -> list[Finding]:
    from infomark.gates.config import find_config_file, load_config
    from infomark.kernel.errors import InfomarkError

    try:
        found = find_config_file(root)
        config = load_config(root)  # no home: doctor writes no cache
    except InfomarkError as exc:
        return [
            Finding(
                "config",
                "config_parses",
                "problem",
                f"the configuration does not load: {exc}",
                "fix the file as the message says; until then the hooks deny every mutation",
            )
        ]
    where = str(found[0]) if found else "no config file (the defaults)"
    out = [Finding("config", "config_parses", "ok", f"{where}: profile {config.profile}")]
    if not config.profile.enforcing:
        out.append(
            Finding(
                "config",
                "profile",
                "warning",
                "profile observe: decisions are journaled but nothing is enforced",
                'set profile = "ledger" (or strict) in the configuration',
            )
        )
    return out + (_sandbox_findings() if config.attest_required else [])


def _sandbox_findings() -> list[Finding]:
    """With ``[attest] required`` (the default in the enforcing profiles): whether attested
    runs can happen here (else no claim with an oracle can become Exact and no finish after
    changes is verified; docs/security.md#attested-runs)."""
    from infomark.tools.sandbox import probe

    status = probe()
    if status.available:
        return [Finding("config", "sandbox", "ok", f"attested runs: {status.detail}")]
    what = (
        f"no attested run can happen here ({status.detail}); attested runs are required (the "
        "default), so no claim with an oracle can become Exact and a finish after changes "
        "is refused (fails closed)"
    )
    fix = (
        f"{status.fix}; or, knowingly, let the agent's own runs ground claims: "
        "`[attest] required = false` in infomark.toml"
    )
    return [Finding("config", "sandbox", "problem", what, fix)]


def _fired_by_denial(p: dict[str, Any]) -> bool:
    """A pack a denial fired: it is delivered with the denial (a finish refusal's packs
    stay in its ``policy`` by design, so they are not expected in the transcript)."""
    evidence = p.get("evidence")
    return (
        isinstance(p.get("name"), str)
        and isinstance(evidence, dict)
        and ("decision_id" in evidence)
    )


def journal_activity(home: Path) -> Activity:
    """Every session's story, hook errors, evidence refs and packs; never written to."""
    from infomark.kernel.errors import InfomarkError
    from infomark.ledger.keys import load_key
    from infomark.ledger.store.select import open_journal
    from infomark.ledger.timeline import summarize

    act = Activity()
    if not has_journal(home):
        act.readable, act.why = False, f"no journal at {home / 'ledger.db'}"
        return act
    try:  # the home's store, SQLite or PostgreSQL (ledger/store/select.py)
        journal = open_journal(home, load_key(home, create=False))
    except (InfomarkError, OSError) as exc:
        act.readable, act.why = False, str(exc)
        return act
    import sqlite3

    try:
        for name in journal.known_sessions():
            rows = list(journal.events(name))
            act.sessions.append(summarize(name, rows))
            for row in rows:
                p = row.payload
                if row.type in ("hook_error", "config_error"):
                    text = str(p.get("error", ""))
                    act.errors.setdefault(name, []).append((row.seq, row.type, text))
                elif row.type == "evidence_recorded" and isinstance(p.get("ref"), str):
                    act.refs.setdefault(name, []).append(p["ref"])
                elif row.type == "instruction_pack_added" and _fired_by_denial(p):
                    act.packs.setdefault(name, []).append((row.seq, str(p["name"])))
    except (InfomarkError, OSError, sqlite3.Error) as exc:
        # a page garbled on disk: journal_integrity names it and the recovery; the host
        # checks say the activity cannot be read instead of doctor failing as a bug
        act.readable, act.why = False, f"the journal cannot be read: {exc}"
    finally:
        journal.close()
    act.sessions.sort(key=lambda s: (s.last_activity, s.session), reverse=True)
    return act


# --------------------------------------------------------------------------- host files


def read_json(path: Path) -> tuple[Any, str | None]:
    """A host's JSON file (empty: ``{}``), or the reason it cannot be read."""
    try:
        return json.loads(path.read_text("utf-8") or "{}"), None
    except (OSError, ValueError) as exc:
        return None, str(exc)


def json_object(path: Path) -> tuple[dict[str, Any] | None, str]:
    """A host's JSON file as an object, or None and what is wrong with it (``PATH is not a
    JSON object (why)``: unreadable, not JSON, or not an object)."""
    data, error = read_json(path)
    if error is not None or not isinstance(data, dict):
        return None, f"{path} is not a JSON object ({error or 'wrong shape'})"
    return data, ""


def config_object(
    path: Path, out: list[Finding], area: str, check: str, effect: str, fix: str
) -> dict[str, Any] | None:
    """A host's JSON configuration file as an object; None when the file is absent, or when
    it is not a JSON object: then a ``problem`` finding (what is wrong, then ``effect``; the
    ``fix``) is added to ``out``."""
    if not path.is_file():
        return None
    data, wrong = json_object(path)
    if data is None:
        out.append(Finding(area, check, "problem", wrong + effect, fix))
    return data


def runnable(argv0: str) -> bool:
    """Can this command be started (a path that is executable, or a name on PATH)?"""
    if os.sep in argv0:
        return os.path.isfile(argv0) and os.access(argv0, os.X_OK)
    return shutil.which(argv0) is not None


def option_value(argv: list[str], name: str) -> str | None:
    """The value of ``name`` in ``argv`` (``--name V`` or ``--name=V``), if given."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def service_up(url: str) -> bool:
    """Does ``GET URL/v1/health`` answer 200 (no token needed, no proxy)?"""
    base = url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        return False
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(base + "/v1/health", timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError, ValueError):
        return False


def settings_env_findings(area: str, path: Path, env: object, home: Path) -> list[Finding]:
    """The ``env`` a host's settings file gives what it starts: no secrets, no bypass, one home."""
    out: list[Finding] = []
    if not isinstance(env, dict):
        return out
    for var in ("INFOMARK_KEY", "INFOMARK_TOKEN"):
        if env.get(var):
            out.append(
                Finding(
                    area,
                    "secret_in_env",
                    "problem",
                    f"{path} puts {var} in the environment of what it starts, which the agent "
                    "can read (the file itself, and `env` in its shell)",
                    f"remove {var} from {path}; infomark reads it from the home (0600)",
                )
            )
    if env.get("INFOMARK_BYPASS_GROUNDING") == "1":
        out.append(
            Finding(
                area,
                "bypass",
                "warning",
                f"{path} sets INFOMARK_BYPASS_GROUNDING=1: grounding denials are let through",
                f"remove INFOMARK_BYPASS_GROUNDING from {path}",
            )
        )
    other = env.get("INFOMARK_HOME")
    if isinstance(other, str) and other and Path(other).resolve() != home.resolve():
        out.append(
            Finding(
                area,
                "home_mismatch",
                "warning",
                f"{path} sets INFOMARK_HOME={other}, not the home checked here ({home})",
                f"run `infomark doctor --home {shlex.quote(other)}` too",
            )
        )
    return out
