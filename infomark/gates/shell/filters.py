"""Text filters and converters: they print to stdout unless their options or their program
say they write (``sed`` ``w``/``e`` commands and ``-i``, awk's ``print > f``, ``system()`` and
``-i inplace``, ``uniq IN OUT``, ``iconv -o``, ``xxd IN OUT``, ``openssl … -out``, ``sponge F``,
``yq -i``)."""

from __future__ import annotations

from infomark.gates.shell.core import Env, read_small, ws
from infomark.gates.shell.words import Arg, Options, _is_sink, _names, _scan
from infomark.kernel.lazyre import lazy_compile

__all__ = [
    "_h_awk",
    "_h_iconv",
    "_h_openssl",
    "_h_sed",
    "_h_sponge",
    "_h_uniq",
    "_h_xxd",
    "_h_yq",
]


# --- sed ---------------------------------------------------------------------------------------


def _h_sed(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, "efl", ws("--expression --file --line-length"))
    if _names(opts) & {"-i", "--in-place"} or any(o.startswith("-i") for o, _ in opts):
        env.modify("edits files in place")
        return
    scripts: list[Arg | None] = [v for o, v in opts if o in ("-e", "--expression")]
    for o, v in opts:
        if o in ("-f", "--file"):
            text = read_small(v.value, env.state.cwds[-1]) if v and v.value else None
            scripts.append(Arg(text, text or "") if text is not None else None)
    if not scripts and pos:
        scripts.append(pos[0])
    for script in scripts:
        if script is None or script.value is None:
            env.modify("runs a computed or unreadable sed script (opaque)")
            return
        what = _sed_effect(script.value)
        if what:
            env.modify(what)
            return
    env.execute("filters text; not known to modify anything")


def _sed_effect(script: str) -> str:
    """What a sed script does beyond printing: "" (nothing), else a reason."""
    i, n = 0, len(script)
    while i < n:
        ch = script[i]
        if ch in " \t\n;{}!":
            i += 1
            continue
        if ch == "#":
            j = script.find("\n", i)
            i = n if j < 0 else j
            continue
        i = _sed_address(script, i)
        if i >= n:
            break
        cmd = script[i]
        if cmd in " \t!":
            i += 1
            continue
        if cmd in "wW":
            return f"writes a file with the sed `{cmd}` command"
        if cmd == "e":
            return "runs shell commands with the sed `e` command (opaque)"
        if cmd in "sy":
            if i + 1 >= n:
                return "has an unreadable sed script (opaque)"
            delim = script[i + 1]
            j = i + 2
            for _ in range(2):
                j = _sed_skip(script, j, delim)
            flags = ""
            while j < n and script[j] not in ";\n}":
                flags += script[j]
                j += 1
            if cmd == "s" and ("w" in flags or "e" in flags):
                return f"writes or runs with the s///{'w' if 'w' in flags else 'e'} flag"
            i = j
            continue
        if cmd in "aicrRbtT:qQlL":
            j = script.find("\n", i)
            k = script.find(";", i) if cmd in "btT:qQlL" else -1
            ends = [x for x in (j, k) if x >= 0]
            i = min(ends) if ends else n
            continue
        i += 1
    return ""


def _sed_address(script: str, i: int) -> int:
    n = len(script)
    for _ in range(2):
        if i < n and (script[i] == "/" or (script[i] == "\\" and i + 1 < n)):
            delim = script[i] if script[i] == "/" else script[i + 1]
            i = _sed_skip(script, i + (1 if script[i] == "/" else 2), delim)
            while i < n and script[i] in "IM":
                i += 1
        else:
            while i < n and (script[i].isdigit() or script[i] in "$~+"):
                i += 1
        if i < n and script[i] == ",":
            i += 1
            continue
        break
    return i


def _sed_skip(script: str, i: int, delim: str) -> int:
    """Index after the next unescaped ``delim`` (the end of the script when there is none)."""
    n = len(script)
    while i < n:
        if script[i] == "\\":
            i += 2
            continue
        if script[i] == delim:
            return i + 1
        i += 1
    return n


# --- awk ---------------------------------------------------------------------------------------

_AWK_STRING = lazy_compile(r'"(?:[^"\\]|\\.)*"')
_AWK_REGEX = lazy_compile(r"(?<![\w)\]])/(?:[^/\\\n]|\\.)+/")
_AWK_WRITE = lazy_compile(r"\b(?:print|printf)\b[^;{}\n]*?(?:>>?|\|)")
_AWK_SYSTEM = lazy_compile(r"\bsystem\s*\(")
_AWK_GETLINE = lazy_compile(r'"[^"]*"\s*\|\s*getline|\|&')


def _h_awk(name: str, args: list[Arg], env: Env) -> None:
    i, n = 0, len(args)
    programs: list[str | None] = []
    while i < n:
        v = args[i].value
        if v is None:
            break
        if v == "--":
            i += 1
            break
        if v in ("-i", "--include") or v.startswith("-i"):
            lib = (
                v[2:]
                if v.startswith("-i") and len(v) > 2
                else (args[i + 1].value if i + 1 < n else None)
            )
            if lib in (None, "inplace", "inplace.awk"):
                env.modify("edits files in place (-i inplace)")
                return
            i += 1 if v.startswith("-i") and len(v) > 2 else 2
            continue
        if v in ("-f", "--file", "-E", "--exec"):
            path = args[i + 1].value if i + 1 < n else None
            programs.append(read_small(path, env.state.cwds[-1]) if path else None)
            i += 2
            continue
        if v in ("-v", "-F", "--assign", "--field-separator"):
            i += 2
            continue
        if v.startswith("-") and len(v) > 1:
            i += 1
            continue
        break
    if not programs:
        if i >= n:
            env.execute("starts awk with no program")
            return
        programs.append(args[i].value)
    for program in programs:
        if program is None:
            env.modify("runs a computed or unreadable awk program (opaque)")
            return
        what = _awk_effect(program, env)
        if what:
            env.modify(what)
            return
    env.execute("filters text; not known to modify anything")


def _awk_effect(program: str, env: Env) -> str:
    for m in _AWK_SYSTEM.finditer(program):
        rest = program[m.end() :]
        lit = _AWK_STRING.match(rest.lstrip())
        if lit and rest.lstrip()[lit.end() :].lstrip().startswith(")"):
            code = lit.group()[1:-1].replace('\\"', '"').replace("\\\\", "\\")
            env.nested(code, "system() command")
        else:
            return "runs computed shell commands with system() (opaque)"
    bare = _AWK_REGEX.sub(" ", _AWK_STRING.sub('""', program))
    if _AWK_WRITE.search(bare):
        return "writes a file or runs a command from its program (print > / print |)"
    if _AWK_GETLINE.search(_AWK_STRING.sub('"x"', program)):
        return "runs a command from its program (cmd | getline)"
    return ""


# --- small converters --------------------------------------------------------------------------


def _writes(env: Env, target: Arg | None, what: str) -> bool:
    if target is None or _is_sink(target.value):
        return False
    env.modify(f"{what} {target.value or 'a computed path'}")
    return True


_UNIQ = Options("fsw", "--skip-fields --skip-chars --check-chars --group --all-repeated")


def _h_uniq(name: str, args: list[Arg], env: Env) -> None:
    _, pos = _UNIQ.scan(args)
    if not (len(pos) >= 2 and _writes(env, pos[1], "writes its output file")):
        env.execute("filters text; not known to modify anything")


def _h_iconv(name: str, args: list[Arg], env: Env) -> None:
    opts, _ = _scan(args, "fto", ws("--from-code --to-code --output"))
    target = next((v for o, v in opts if o in ("-o", "--output")), None)
    if not _writes(env, target, "writes"):
        env.execute("converts text to stdout")


def _h_xxd(name: str, args: list[Arg], env: Env) -> None:
    _, pos = _scan(args, "cgloOsn", ws("-cols -groupsize -len -offset -seek -name"))
    if not (len(pos) >= 2 and _writes(env, pos[1], "writes (or patches in place)")):
        env.execute("dumps or converts to stdout")


def _h_sponge(name: str, args: list[Arg], env: Env) -> None:
    _, pos = _scan(args)
    if not (pos and _writes(env, pos[0], "soaks stdin and writes")):
        env.execute("copies stdin to stdout")


def _h_yq(name: str, args: list[Arg], env: Env) -> None:
    opts, _ = _scan(args, "opIs", ws("--output-format --prettyPrint --indent --split-exp"))
    if _names(opts) & {"-i", "--inplace", "--in-place"} or any(
        o.startswith("-i") and len(o) == 2 for o, _ in opts
    ):
        env.modify("edits files in place")
    else:
        env.execute("queries YAML/JSON to stdout")


_OPENSSL_OUT = ws("-out -keyout -signature -CAserial -certout -pubout")


def _h_openssl(name: str, args: list[Arg], env: Env) -> None:
    for k, arg in enumerate(args):
        v = arg.value
        target = args[k + 1] if k + 1 < len(args) else None
        if v in _OPENSSL_OUT and v != "-pubout" and _writes(env, target, f"writes ({v})"):
            return
        if v is not None and v.startswith(("-out=", "-keyout=")):
            value = v.split("=", 1)[1]
            if _writes(env, Arg(value, value), "writes"):
                return
    env.execute("runs openssl to stdout")
