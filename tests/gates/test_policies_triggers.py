"""Post-turn triggers (seed 001): delta semantics, once per prompt, chaining, obligations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import ledger_text, stamp
from hypothesis import given
from hypothesis import strategies as st
from policies_support import Session

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.gates.policies import PolicyRuntime
from infomark.gates.policies.paths import glob_match, rel_path
from infomark.kernel.errors import ConfigError

VOICE_PROMPT = (
    "You just saved a new piece to writing/. Before moving on:\n"
    "1. Re-read voice.md\n"
    "2. Does the piece match the user's voice? Be specific.\n"
    "3. If it doesn't match, revise the piece now.\n"
    "4. Update voice.md if you learned any new patterns about how the user writes."
)
REVIEW: dict[str, Any] = {
    "name": "voice-review",
    "when": {"file_written": "writing/*.md"},
    "prompt": VOICE_PROMPT,
    "requires_read": ["voice.md"],
}
EVOLVE: dict[str, Any] = {
    "name": "voice-evolve",
    "when": {"after": "voice-review"},
    "prompt": "Now record what you learned about the user's voice in voice.md.",
}

SKIPPED = {"would_have_skipped": 1, "already_done": 0, "unobservable": 0, "skip_rate": 1.0}


def _session(gk: Gatekeeper, *triggers: dict[str, Any]) -> Session:
    return Session(gk, {"triggers": list(triggers)})


def _metrics(s: Session) -> dict[str, Any]:
    return dict(s.document()["triggers"]["triggers"])


# -- the content-writer walk-through --------------------------------------------------------------


def test_content_writer_walk_through(gk: Gatekeeper, project: Path) -> None:
    s = _session(gk, REVIEW)
    s.prompt("Turn this into a LinkedIn post: [rough draft]")
    piece = project / "writing" / "2026-03-29-linkedin-ai-tooling.md"
    s.write(str(piece))  # hosts pass absolute paths; triggers match them relative to the root
    result, verdict = s.finish("Here is your LinkedIn post.")
    assert not result.allow and result.code == "trigger_fired"  # the facade refuses …
    assert not verdict.allow  # … because the policy runtime does (the ledger has no objection)
    assert verdict.fired == ["voice-review"]
    assert verdict.reason == f"[infomark:trigger voice-review]\n{VOICE_PROMPT}"
    fired = s.events("trigger_fired")
    assert len(fired) == 1
    assert fired[0]["matched"] == {"file_written": ["writing/2026-03-29-linkedin-ai-tooling.md"]}
    assert fired[0]["requires_read"] == ["voice.md"] and fired[0]["repeat"] is False

    # the model re-reads voice.md, revises the piece, updates voice.md, writes the piece again
    s.read(str(project / "voice.md"))
    s.edit(str(piece))
    s.edit("voice.md")
    s.write(str(piece))
    result, verdict = s.finish("Revised to match your voice; voice.md updated.")
    assert verdict.allow and verdict.fired == []  # at most once per user prompt
    met = s.events("trigger_obligation_met")
    assert [(e["name"], e["read"]) for e in met] == [("voice-review", ["voice.md"])]
    assert _metrics(s) == {  # wrote the piece and stopped: it would have skipped the review
        "voice-review": {"fired": 1, "repeated": 0, "met": 1, "missed": 0, **SKIPPED}
    }

    # the next prompt writes nothing under writing/: an old write never re-fires
    for i in range(3):
        s.prompt(f"thanks {i}")
        s.read("voice.md")
        assert s.finish("ok")[1].allow
    # a new piece in a later prompt fires again
    s.prompt("and one for X")
    s.write("writing/x-post.md")
    assert s.finish("Saved.")[1].fired == ["voice-review"]
    assert _metrics(s)["voice-review"]["fired"] == 2


def test_non_matching_paths_do_not_fire(gk: Gatekeeper) -> None:
    s = _session(gk, REVIEW)
    s.prompt("go")
    s.write("drafts/a.md")
    s.write("writing/sub/deep.md")  # `*` stays within one directory
    s.edit("writing/b.md")  # edited, not written
    assert s.finish("ok")[1].allow
    assert s.events("trigger_fired") == []


def test_delta_is_consumed_by_each_evaluation(gk: Gatekeeper) -> None:
    trig = {"name": "t", "when": {"file_written": "*.txt"}, "prompt": "check it"}
    s = _session(gk, trig)
    s.prompt("one")
    s.write("a.txt")
    assert s.finish("x")[1].fired == ["t"]
    assert s.finish("x")[1].allow
    s.prompt("two")
    assert s.finish("x")[1].allow  # a.txt was written in an earlier evaluation's delta
    assert len(s.events("trigger_fired")) == 1


def test_once_per_prompt_even_when_the_condition_recurs(gk: Gatekeeper) -> None:
    trig = {"name": "t", "when": {"tool_used": "Bash"}, "prompt": "explain the command"}
    s = _session(gk, trig)
    s.prompt("one")
    s.bash("ls")
    assert not s.finish("x")[1].allow
    s.bash("ls -la")
    assert s.finish("x")[1].allow
    s.prompt("two")
    s.bash("pwd")
    assert not s.finish("x")[1].allow


# -- obligations ----------------------------------------------------------------------------------


def test_obligation_missed_repeats_once_then_records_the_miss_and_allows(gk: Gatekeeper) -> None:
    s = _session(gk, REVIEW)
    s.prompt("write a post")
    s.write("writing/p.md")
    assert s.finish("saved")[1].fired == ["voice-review"]
    s.edit("writing/p.md")  # works on the piece but never reads voice.md
    _, verdict = s.finish("revised")
    assert not verdict.allow and verdict.fired == ["voice-review"]
    assert "You have not read voice.md since this was asked." in verdict.reason
    assert VOICE_PROMPT in verdict.reason
    _, verdict = s.finish("revised again")
    assert verdict.allow
    missed = s.events("trigger_obligation_missed")
    assert [(e["name"], e["missing"], e["why"]) for e in missed] == [
        ("voice-review", ["voice.md"], "finished_without_read")
    ]
    assert [e["repeat"] for e in s.events("trigger_fired")] == [False, True]
    assert _metrics(s) == {
        "voice-review": {"fired": 1, "repeated": 1, "met": 0, "missed": 1, **SKIPPED}
    }


def test_obligation_met_by_a_read_command(gk: Gatekeeper) -> None:
    s = _session(gk, REVIEW)
    s.prompt("write a post")
    s.write("writing/p.md")
    s.finish("saved")
    s.tool("Bash", {"command": "cat voice.md"})  # classified execute; `cat` only prints files
    assert s.finish("reviewed")[1].allow
    assert len(s.events("trigger_obligation_met")) == 1


@pytest.mark.parametrize("command", ["echo voice.md", "cat voice.md > copy.md", "ls notes"])
def test_obligation_not_met_by_a_command_that_does_not_read_the_file(
    gk: Gatekeeper, command: str
) -> None:
    s = _session(gk, REVIEW)
    s.prompt("write a post")
    s.write("writing/p.md")
    s.finish("saved")
    s.tool("Bash", {"command": command})
    _, verdict = s.finish("reviewed")
    assert not verdict.allow and "You have not read voice.md" in verdict.reason


def test_a_new_prompt_settles_an_open_obligation(gk: Gatekeeper) -> None:
    s = _session(gk, REVIEW)
    s.prompt("write a post")
    s.write("writing/p.md")
    s.finish("saved")
    s.prompt("something else")
    missed = s.events("trigger_obligation_missed")
    assert [(e["name"], e["why"]) for e in missed] == [("voice-review", "new_prompt")]
    assert s.document()["triggers"]["pending"] == []


# -- chaining -------------------------------------------------------------------------------------


def test_chained_trigger_fires_once_the_predecessor_obligation_is_met(gk: Gatekeeper) -> None:
    s = _session(gk, REVIEW, EVOLVE)
    s.prompt("write a post")
    s.write("writing/p.md")
    assert s.finish("saved")[1].fired == ["voice-review"]
    s.read("voice.md")
    _, verdict = s.finish("reviewed")
    assert verdict.fired == ["voice-evolve"]
    assert verdict.reason.startswith("[infomark:trigger voice-evolve]\n")
    s.edit("voice.md")
    assert s.finish("voice updated")[1].allow
    order = [
        (e["type"], e["name"])
        for e in s.events("trigger_fired", "trigger_obligation_met", "trigger_obligation_missed")
    ]
    assert order == [
        ("trigger_fired", "voice-review"),
        ("trigger_obligation_met", "voice-review"),
        ("trigger_fired", "voice-evolve"),
    ]


def test_chained_trigger_does_not_fire_when_the_predecessor_was_missed(gk: Gatekeeper) -> None:
    s = _session(gk, REVIEW, EVOLVE)
    s.prompt("write a post")
    s.write("writing/p.md")
    s.finish("saved")
    s.finish("saved")  # repeated
    _, verdict = s.finish("saved")  # missed: allowed, and no chain
    assert verdict.allow and verdict.fired == []
    assert [e["name"] for e in s.events("trigger_fired")] == ["voice-review", "voice-review"]


def test_chain_without_obligation_completes_on_the_next_finish(gk: Gatekeeper) -> None:
    a = {"name": "a", "when": {"tool_used": "Write"}, "prompt": "step A"}
    b = {"name": "b", "when": {"after": "a"}, "prompt": "step B"}
    c = {"name": "c", "when": {"after": "b"}, "prompt": "step C"}
    s = _session(gk, a, b, c)
    s.prompt("go")
    s.write("x.py")
    assert [s.finish("x")[1].fired for _ in range(4)] == [["a"], ["b"], ["c"], []]


def test_claim_status_trigger_fires_when_the_claim_becomes_exact(gk: Gatekeeper) -> None:
    trig = {
        "name": "release-notes",
        "when": {"claim_status": {"id": "C1", "status": "Exact"}},
        "prompt": "C1 holds now: add a line to CHANGELOG.md.",
    }
    s = _session(gk, trig)
    s.prompt("go")
    s.say(ledger_text(("C1", "Hypothetical", "pytest -q")))
    assert s.finish("not yet")[1].allow
    s.bash("pytest -q")
    assert s.last_evidence is not None
    s.say(stamp("C1", s.last_evidence.ref))
    _, verdict = s.finish("C1 is Exact now")
    assert verdict.fired == ["release-notes"]
    assert s.events("trigger_fired")[0]["matched"] == {
        "claim_status": {"id": "C1", "status": "Exact"}
    }
    s.prompt("next")
    assert s.finish("still Exact")[1].allow  # unchanged status: no new firing


# -- configuration --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("triggers", "message"),
    [
        ([{"name": "t", "when": {"file_saved": "x"}, "prompt": "p"}], "unknown condition"),
        ([{"name": "t", "when": {}, "prompt": "p"}], "expected a table"),
        ([{"name": "t", "when": {"after": "nope"}, "prompt": "p"}], "names no trigger"),
        (
            [
                {"name": "a", "when": {"after": "b"}, "prompt": "p"},
                {"name": "b", "when": {"after": "a"}, "prompt": "p"},
            ],
            "loops",
        ),
        (
            [
                {"name": "a", "when": {"tool_used": "x"}, "prompt": "p"},
                {"name": "a", "when": {"tool_used": "y"}, "prompt": "p"},
            ],
            "duplicate",
        ),
        (
            [
                {
                    "name": "t",
                    "when": {"claim_status": {"id": "C1", "status": "Proven"}},
                    "prompt": "p",
                }
            ],
            "is not one of",
        ),
        (
            [{"name": "t", "when": {"tool_used": "x"}, "prompt": "p", "requires_read": "voice.md"}],
            "list of file globs",
        ),
        ([{"name": "t", "when": {"tool_used": "x"}, "prompt": " "}], "prompt"),
    ],
)
def test_bad_trigger_configuration_is_a_config_error(
    triggers: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        PolicyRuntime(Config(policies={"triggers": triggers}))


# -- glob matching --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("writing/*.md", "writing/a.md", True),
        ("writing/*.md", "writing/sub/a.md", False),
        ("writing/*.md", "x/writing/a.md", False),
        ("writing/**/*.md", "writing/a/b/c.md", True),
        ("writing/**/*.md", "writing/c.md", True),
        ("voice.md", "notes/voice.md", True),
        ("./voice.md", "voice.md", True),
        ("v?ice.md", "voice.md", True),
        ("[!v]oice.md", "voice.md", False),
        ("[cv]oice.md", "voice.md", True),
        ("*.md", "a.txt", False),
    ],
)
def test_glob_match(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


_SEG = st.text(alphabet="abcxyz.-_+()$^{}0123456789", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)


@given(st.lists(_SEG, min_size=1, max_size=4))
def test_literals_match_only_themselves_and_star_stays_in_a_segment(segs: list[str]) -> None:
    path = "/".join(segs)
    n = len(segs)
    assert glob_match(path, path)  # regex metacharacters in names are literal
    assert not glob_match(path, path + "q")
    assert glob_match("**", path)
    assert glob_match("/".join(["*"] * n), path)
    assert not glob_match("/".join(["*"] * (n + 1)), path)
    if n > 2:  # (a pattern without "/" also matches the basename, as in .gitignore)
        assert not glob_match("/".join(["*"] * (n - 1)), path)


def test_rel_path() -> None:
    assert rel_path("/p/proj/writing/a.md", "/p/proj") == "writing/a.md"
    assert rel_path("writing/../voice.md", "/p/proj") == "voice.md"
    assert rel_path("/elsewhere/a.md", "/p/proj") == "/elsewhere/a.md"
