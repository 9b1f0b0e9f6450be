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


def test_tree_sitter_loads_without_its_package_init() -> None:
    """tree.py loads tree_sitter's binding directly (no typing): a later ``import tree_sitter``
    takes that same module, so the parser's nodes are ``tree_sitter.Node``s."""
    code = (
        "import sys\n"
        "from infomark.gates.shell import classify_shell\n"
        "from infomark.gates.shell.tree import _parse\n"
        "assert classify_shell('rm -rf build').tool_class.value == 'destructive'\n"
        "assert 'tree_sitter' not in sys.modules, 'the package __init__ ran'\n"
        "assert 'typing' not in sys.modules\n"
        "binding = sys.modules['tree_sitter._binding']\n"
        "import tree_sitter\n"
        "assert tree_sitter.Parser is binding.Parser\n"
        "assert isinstance(_parse(b'ls').root_node, tree_sitter.Node)\n"
        "print('ok')\n"
    )
    code = f"import sys; sys.path[:0] = {sys.path!r}\n" + code
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_the_classifier_imports_without_compiling_a_regex() -> None:
    """Every pattern of the classifier compiles on first use: importing it loads no ``re``."""
    code = (
        f"import sys; sys.path[:0] = {sys.path!r}\n"
        "import infomark.gates.shell\n"
        "assert 're' not in sys.modules, 'a module of the classifier imports re'\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_the_punctuation_class_is_re_escape_of_it() -> None:
    import re

    from infomark.gates.shell.globbing import _PUNCT

    assert re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") == _PUNCT
