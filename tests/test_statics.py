"""What an expression is by default (``rocmport.analysis.statics``): no environment variable
set, every ``.get`` missing (issue 28: evaluate what is statically known)."""

from __future__ import annotations

import libcst as cst
import pytest

from rocmport.analysis.statics import default_value


def names(node):
    """A resolver for the cases: ``os.<x>`` is os's, ``environ`` is os.environ."""
    if isinstance(node, cst.Attribute):
        inner = names(node.value)
        return {f"{n}.{node.attr.value}" for n in inner}
    if isinstance(node, cst.Name):
        return {"os"} if node.value == "os" else {"os.environ"} if node.value == "environ" else set()
    return set()


@pytest.mark.parametrize("source,expected", [
    ('os.environ.get("MODE", "max-autotune-no-cudagraphs")', (True, "max-autotune-no-cudagraphs")),
    ('os.getenv("MODE")', (True, None)), ('environ.get("MODE", default="x")', (True, "x")),
    ('cfg.get("compile_mode", "default")', (True, "default")),
    ('os.environ.get("DEBUG", "0") == "1"', (True, False)), ('not os.getenv("QUIET")', (True, True)),
    ('"DEBUG" in os.environ', (True, False)), ('int(os.getenv("N", "3"))', (True, 3)),
    ('os.getenv("M", "Default").lower()', (True, "default")),
    ('"a" if os.getenv("X") else "b"', (True, "b")), ("True", (True, True)),
    # unknown: a read that raises when unset, a splat, a name, a call of anything else
    ('os.environ["MODE"]', (False, None)), ("cfg.get(*keys)", (False, None)), ("mode", (False, None)),
    ("read_mode()", (False, None)), ('int(os.getenv("N", "x"))', (False, None)),
])
def test_default_values(source, expected):
    assert default_value(cst.parse_expression(source), names) == expected
