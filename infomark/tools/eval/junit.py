"""JUnit XML for ``infomark replay --junit FILE``: a test suite per source, a test case per
compared step; a decision that differs is a failure naming the recorded and today's decision."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from infomark.tools.eval.replay import ReplayResult

__all__ = ["junit_xml"]


def junit_xml(results: Sequence[ReplayResult]) -> str:
    root = ET.Element("testsuites", name="infomark replay")
    total = fails = 0
    for r in results:
        cases = [s for s in r.steps if s.ok is not None]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=r.name,
            tests=str(len(cases)),
            failures=str(len(r.differences)),
            file=r.source,
        )
        for s in cases:
            case = ET.SubElement(
                suite, "testcase", classname=r.name, name=f"step {s.index}: {s.kind} {s.what}"
            )
            if not s.ok:
                exp = s.expected or ""
                if s.expected_code:
                    exp += f" ({s.expected_code})"
                f = ET.SubElement(
                    case, "failure", message=f"recorded {exp}, today {s.got} ({s.code})"
                )
                f.text = f"{s.where}\n{s.detail}"
        total += len(cases)
        fails += len(r.differences)
    root.set("tests", str(total))
    root.set("failures", str(fails))
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
