"""Downloads, archives, compression and sync: they write files unless told to use stdout."""

from __future__ import annotations

from infomark.gates.shell.core import Env, ws
from infomark.gates.shell.words import (
    Arg,
    Options,
    _first_positional,
    _is_sink,
    _names,
    _scan,
    _static,
)

__all__ = ["_h_7z", "_h_compress", "_h_curl", "_h_rsync", "_h_tar", "_h_unzip", "_h_wget"]


# the option grammars (which options take a value)
_CURL = Options(
    "AbcCdDeEFHKmoPQrtTuUwxXyYz",
    "--output --dump-header --cookie-jar --trace --trace-ascii --libcurl --etag-save --stderr "
    "--data --data-raw --data-binary --data-urlencode --json --header --user-agent --request "
    "--user --form --url --write-out --max-time --connect-timeout --proxy --referer --cookie "
    "--config --range --upload-file --cert --key --retry --output-dir",
)
_WGET = Options(
    "OoaePUtTwiQlARDIXB",
    "--output-document --output-file --append-output --directory-prefix --user-agent --tries "
    "--timeout --wait --input-file --execute --header --level --accept --reject --domains --base "
    "--post-data --user --password",
)
_TAR = Options("fCbgKLNTVXIH", "--file --directory --exclude --files-from --use-compress-program")

_CURL_WRITES = ws(
    "-o --output -D --dump-header -c --cookie-jar --trace --trace-ascii --libcurl --etag-save "
    "--stderr"
)


def _h_curl(name: str, args: list[Arg], env: Env) -> None:
    opts, _ = _CURL.scan(args)
    for opt, val in opts:
        if opt in ("-O", "--remote-name", "--remote-name-all"):
            env.modify("downloads to a file (-O)")
            return
        if opt in _CURL_WRITES:
            target = val.value if val else None
            if not _is_sink(target):
                env.modify(f"writes {target or 'a computed path'} ({opt})")
                return
    env.execute("fetches a URL to stdout")


def _h_wget(name: str, args: list[Arg], env: Env) -> None:
    opts, _ = _WGET.scan(args)
    names = _names(opts)
    to_stdout = any(
        opt in ("-O", "--output-document") and _is_sink(val.value if val else None)
        for opt, val in opts
    )
    for opt, val in opts:
        if opt in ("-o", "-a", "--output-file", "--append-output") and not _is_sink(
            val.value if val else None
        ):
            env.modify(f"writes log {(val.value if val else None) or 'a computed path'}")
            return
    if "--spider" in names or to_stdout:
        env.execute("fetches a URL without saving it")
    else:
        env.modify("downloads files")


def _h_tar(name: str, args: list[Arg], env: Env) -> None:
    modes: set[str] = set()
    archive: Arg | None = None
    rest = args
    first = args[0].value if args else None
    if first and not first.startswith("-") and first.isalpha():
        modes.update(first)
        if "f" in first:
            archive = args[1] if len(args) > 1 else None
        rest = args[1:]
    opts, _ = _TAR.scan(rest)
    for opt, val in opts:
        if opt in ("-f", "--file"):
            archive = val
        elif opt.startswith("--"):
            modes.add(
                {
                    "--extract": "x",
                    "--get": "x",
                    "--create": "c",
                    "--append": "r",
                    "--update": "u",
                    "--catenate": "A",
                    "--concatenate": "A",
                    "--delete": "D",
                }.get(opt, "")
            )
        else:
            modes.add(opt[1:])
    if "x" in modes:
        env.modify("extracts files")
    elif modes & {"c", "r", "u", "A", "D"}:
        if archive is not None and _is_sink(archive.value):
            env.execute("writes an archive to stdout")
        elif archive is None:
            env.execute("writes an archive to the default device")
        else:
            env.modify(f"writes archive {archive.value or 'at a computed path'}")
    else:
        env.execute("lists or compares an archive")


def _h_unzip(name: str, args: list[Arg], env: Env) -> None:
    opts, _ = _scan(args, "dxP")
    if _names(opts) & {"-l", "-t", "-v", "-p", "-Z", "-z"}:
        env.execute("lists or tests an archive")
    else:
        env.modify("extracts files")


def _h_compress(name: str, args: list[Arg], env: Env) -> None:
    opts, _ = _scan(args, "oS", frozenset({"--suffix"}))
    names = _names(opts)
    if (
        names & {"-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test"}
        and "-o" not in names
    ):
        env.execute("writes to stdout or tests an archive")
    else:
        env.modify("compresses or decompresses files in place")


def _h_7z(name: str, args: list[Arg], env: Env) -> None:
    sub, _ = _first_positional(args)
    if sub in ("a", "d", "e", "x", "u", "rn"):
        env.modify(f"changes files or archives ({sub})")
    else:
        env.execute("lists or tests an archive")


def _h_rsync(name: str, args: list[Arg], env: Env) -> None:
    if any(v.startswith("--delete") for v in _static(args)):
        env.destroy("deletes destination files missing from the source with --delete", "file")
    else:
        env.modify("copies files")
