"""Where ``audit --verify --json`` spends its time: ``python -m bench.audit_phases [ROUNDS]``.

On the bench's 10⁵-event session (``bench.core.grow``), in process, CPU time
(``time.process_time``) of each stage run alone: importing the CLI; the verification pass
alone (``verify_session``); the pass with the replay that rebuilds the projection; the pass
with the replay and the story fed from it (kept to its last entries, as the command keeps
it without ``--timeline``); the whole ``build_audit``; the report's ``to_dict``; its
``--json`` encode (to /dev/null).
"""

from __future__ import annotations

import importlib
import os
import sys
import time


def main(argv: list[str]) -> int:
    from bench.core import _KEY_HEX, grow

    rounds = int(argv[0]) if argv else 2
    home = str(grow(100_000))
    os.environ["INFOMARK_HOME"] = home
    os.environ["INFOMARK_KEY"] = _KEY_HEX
    clock = time.process_time
    t = clock()
    for name in ("infomark.cli.app", "infomark.cli.commands_audit"):
        importlib.import_module(name)

    print(f"import the CLI {clock() - t:.3f} s")
    from infomark.cli.commands_audit import STORY_KEPT
    from infomark.cli.jsonout import write_json
    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.audit import build_audit
    from infomark.ledger.timeline import READS, finish_story, story_reader
    from infomark.ledger.verify import _Replay, _verify, verify_session

    gk = Gatekeeper.open(home, "bench")
    led = gk.store
    for _ in range(rounds):
        t = clock()
        verify_session(led, "bench")
        alone = clock() - t
        t = clock()
        _verify(led, "bench", None, _Replay("bench"))
        replay = clock() - t
        reader = story_reader("bench", keep=STORY_KEPT, ledger=led)
        t = clock()
        _verify(led, "bench", None, _Replay("bench", reader.take, READS))
        story = clock() - t
        t = clock()
        feed = story_reader("bench", keep=STORY_KEPT).take
        report = build_audit(led, verify=True, feed=feed, wants=READS)
        whole = clock() - t
        t = clock()
        data = report.to_dict()
        data["story"] = finish_story(reader).to_dict()
        as_dict = clock() - t
        t = clock()
        with open(os.devnull, "w") as f:
            write_json(data, f.write)
        encode = clock() - t
        print(f"pass alone {alone:.3f} s, + replay {replay:.3f} s, + story {story:.3f} s, "
              f"build_audit {whole:.3f} s, to_dict {as_dict:.3f} s, --json {encode:.3f} s "
              f"(load average {os.getloadavg()[0]:.1f})")  # fmt: skip
    gk.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
