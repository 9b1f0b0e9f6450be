"""The bash grammar as the shell classifier loads it (tree.py, without the package's __init__)."""

from __future__ import annotations

import subprocess
import sys


def test_the_bash_grammar_loads_without_its_package_init() -> None:
    """tree.py loads tree_sitter_bash's binding directly: the same grammar as the package's."""
    code = (
        "import sys\n"
        "from infomark.gates.shell.tree import _bash_language\n"
        "direct = _bash_language()\n"
        "assert 'tree_sitter_bash' not in sys.modules, 'the package __init__ ran'\n"
        "import tree_sitter_bash\n"
        "from tree_sitter import Language\n"
        "assert Language(direct) == Language(tree_sitter_bash.language())\n"
        "assert _bash_language() is not None\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
