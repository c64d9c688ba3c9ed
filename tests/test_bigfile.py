"""A large file is fixed as its pieces are, with metadata resolved per statement, not per module.

Issue 18: a 100,000-line file took minutes and gigabytes to fix, most of it LibCST metadata
resolved for the whole module on every fix pass (``benchmarks/bigfile.py`` measures it).
These tests hold the behaviour and the work to account without timing anything:

- a generated file of 5,000 lines is linted and fixed exactly as its pieces are;
- one fix run parses the file twice (the original and the fixed text: the check that a fix
  parses and the next analysis share one parse), resolves neither ParentNodeProvider nor
  PositionProvider for the whole module, and generates each statement's positions once;
- the on-demand parents and positions (``rocmport.analysis.metadata.Metadata``) equal LibCST's
  providers on every node of every rule case.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from rocmport.analysis import walk as _walk
from rocmport.analysis.metadata import STATS, Metadata
from rocmport.config import Settings
from rocmport.inputs import check_bytes
from rocmport.registry import visitor_rules

HEAD = '"""A generated module."""\nimport os\nimport torch\nimport torch.nn as nn\n\n'


def block(n: int) -> str:
    """About 20 lines; every fourth holds hazards of several rules."""
    lines = [f"class Block{n}(nn.Module):",
             f"    def __init__(self, width={n % 7 + 1}):",
             "        super().__init__()",
             "        self.width = width",
             "",
             "    def forward(self, x):",
             f"        y = x * {n} + self.width  # a comment about torch.compile",
             "        return y if y is not None else x",
             "",
             f"def helper_{n}(a, b):",
             '    """Not a hazard: torch.compile(m, mode="reduce-overhead") in a docstring."""',
             f"    return (a + b) * {n}",
             ""]
    if n % 4 == 0:
        lines += [f'compiled_{n} = torch.compile(Block{n}(), mode="reduce-overhead")',
                  f"def build_{n}(model):",
                  f'    return torch.compile(model, mode="max-autotune", fullgraph={n % 8 == 0})',
                  ""]
    if n % 12 == 0:
        lines += ['os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"', ""]
    return "\n".join(lines) + "\n"


def pieces(count: int, per_piece: int):
    return ["".join(block(n) for n in range(i * per_piece, (i + 1) * per_piece)) for i in range(count)]


def test_a_big_file_is_linted_and_fixed_as_its_pieces():
    parts = pieces(5, 72)  # 5 x ~1,000 lines
    whole = HEAD + "".join(parts)
    assert whole.count("\n") > 5000
    settings = Settings()

    # lint: the whole file's findings are its pieces' findings, moved down by the lines before
    linted = check_bytes(whole.encode(), "big.py", settings)
    assert linted.internal_error is None
    expected, shift = [], 0
    for part in parts:
        report = check_bytes((HEAD + part).encode(), "big.py", settings)
        assert report.internal_error is None
        expected += [(f.code, f.message, f.start.row + shift, f.start.column, f.end.row + shift, f.end.column)
                     for f in report.findings]
        shift += part.count("\n")
    got = [(f.code, f.message, f.start.row, f.start.column, f.end.row, f.end.column) for f in linted.findings]
    assert got == expected
    assert len({code for code, *_ in got}) >= 2 and len(got) > 100

    # fix: the same fixed head for every piece, and the whole is that head and the fixed pieces
    fixed = check_bytes(whole.encode(), "big.py", settings, fix=True)
    assert fixed.internal_error is None and fixed.fixed is not None
    heads, bodies = set(), []
    for part in parts:
        out = check_bytes((HEAD + part).encode(), "big.py", settings, fix=True).fixed.decode()
        marker = out.index("class Block")
        heads.add(out[:marker])
        bodies.append(out[marker:])
    assert len(heads) == 1
    assert fixed.fixed.decode() == heads.pop() + "".join(bodies)
    assert check_bytes(fixed.fixed, "big.py", settings, fix=True).fixed is None  # idempotent


def test_one_fix_run_parses_twice_and_resolves_no_whole_module_metadata():
    text = HEAD + "".join(pieces(1, 40))
    statements = len(cst.parse_module(text).body)
    before = STATS.copy()
    report = check_bytes(text.encode(), "big.py", Settings(), fix=True)
    assert report.internal_error is None and report.fixes_applied > 10
    used = STATS - before
    # the original text and the fixed one: the fix pass's parse check is the next pass's tree
    assert used["parse"] == 2, used
    # no whole-module parents or positions, no whole-module walk for a look-ahead
    assert not [key for key in used if key.startswith("resolve:")], used
    assert used["parents:subtree"] <= 4 * report.fixes_applied, used
    # positions generated only for the statements that hold a finding (about two per fix),
    # never for the whole module: the statements' own ranges come with counting their lines
    assert used["positions:statement"] <= 2 * report.fixes_applied + 4 < statements, used


def _corpus():
    for rule in visitor_rules():
        for case in list(rule.VALID) + list(rule.INVALID):
            yield f"{rule.CODE}", case.code
    yield "generated", HEAD + "".join(pieces(1, 8))
    yield "no trailing newline", "import torch\n\n# c\nx = torch.compile(f)  # t"
    yield "header and footer", "# head\n\n\nimport torch\nif x:\n    y = 1\n    # inner\n# tail\n"
    yield "crlf and tabs", "import torch\r\nclass A:\r\n\tdef f(self):\r\n\t\treturn 1\r\n\r\nz = 2\r\n"
    # shapes where CPython's lines and LibCST's statements pair up in odd ways
    yield "decorators and comments", ("import torch\n# a\n\n@dec\n# between\n@other(\n  1)\ndef f(): pass\n"
                                      "  # indented\n\nclass A:\n    x = 1\n\n    # trailing\n# col0\nw = 3\n")
    yield "semicolons and continuations", "x = 1; y = 2\nz = 3; \\\n  w = 4\n(\n  v\n) = 5\n@\\\ndec\ndef g(): pass\n"
    yield "cr only", "import torch\r# c\rif x:\r    y = 1\r\rz = torch.compile(f)\r# end"
    yield "form feed", "import torch\n\x0c\nx = 1\n\x0cy = 2\n"


@pytest.mark.parametrize("with_tree", [False, True], ids=["lines counted", "lines from CPython's tree"])
@pytest.mark.parametrize("name,code", list(_corpus()))
def test_on_demand_parents_and_positions_are_libcsts(name, code, with_tree):
    import ast

    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError:
        return
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    parents, positions = wrapper.resolve(ParentNodeProvider), wrapper.resolve(PositionProvider)
    tree = None
    if with_tree:
        try:
            tree = ast.parse(code)
        except SyntaxError:
            return
    meta = Metadata(module, tree, code)
    # the engine's visit: it passes whitespace leaves by
    _walk.visit_batched(module, [], before_visit=meta.enter, after_leave=meta.leave, skip_whitespace=True)
    mine_parents, mine_positions = meta.resolve(ParentNodeProvider), meta.resolve(PositionProvider)
    before = STATS.copy()
    whitespace = [node for node in parents if type(node) in _walk.WHITESPACE_LEAVES]
    for node, parent in parents.items():
        if type(node) not in _walk.WHITESPACE_LEAVES:
            assert mine_parents[node] is parent
            assert node in mine_parents
    assert module not in mine_parents

    def in_body(node):
        while parents.get(node) is not module:
            node = parents[node]
        return any(node is stmt for stmt in module.body)

    inside = [node for node in parents if in_body(node)]
    for node in inside:  # statement by statement
        if type(node) not in _walk.WHITESPACE_LEAVES:
            assert mine_positions[node] == positions[node], (name, type(node).__name__)
    assert not [key for key in STATS - before if key.startswith("resolve:")]
    for node in inside:  # whitespace too (which no rule asks for): found through LibCST's parents
        assert mine_positions[node] == positions[node], (name, type(node).__name__)
    for node in set(parents) - set(inside):  # the header and footer: LibCST's own resolution
        assert mine_positions.get(node) == positions.get(node)
    # a top-level statement's own range, asked first, comes from counting lines (no generation)
    fresh = Metadata(module, tree, code).resolve(PositionProvider)
    for stmt in reversed(module.body):
        assert fresh[stmt] == positions[stmt], (name, type(stmt).__name__)
    assert not (STATS - before)["positions:recounted"], name  # the lines from the tree held
    for node in whitespace:  # asked for all the same (no rule does): LibCST's whole resolution
        assert mine_parents[node] is parents[node]


def test_lines_from_the_tree_that_disagree_with_libcst_are_counted_instead(monkeypatch):
    import ast

    from rocmport.analysis import metadata as base

    code = "import torch\nx = 1\n\nclass A:\n    y = 2\n\nz = torch.compile(f)\n"
    module = cst.parse_module(code)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    real = base._statement_lines
    monkeypatch.setattr(base, "_statement_lines", lambda m, t: [1] + [line + 1 for line in real(m, t)[1:]])
    before = STATS.copy()
    meta = Metadata(module, ast.parse(code), code)
    cst.visit_batched(module, [], before_visit=meta.enter, after_leave=meta.leave)
    mine = meta.resolve(PositionProvider)
    last = module.body[-1]
    assert mine[last.body[0].value] == positions[last.body[0].value]
    assert mine[module.body[1]] == positions[module.body[1]]
    assert (STATS - before)["positions:recounted"] >= 1


def test_a_statement_counted_before_the_tree_lines_were_dropped_keeps_its_range():
    """Found by benchmarks/fuzz.py (seed 20261127): with ``\\r`` line endings the lines read
    from CPython's tree disagree with LibCST's; the ranges counted before they were dropped
    went with them while the starts counted stayed, and the gate's placement asked for the
    first statement's range: KeyError, an internal error on every such file."""
    lines = ['class _W:', '    CFG = {"compile_mode": "reduce-overhead"}', 'def _g():',
             '  os.environ["HIP_VISIBLE_DEVICES"] = "0,1"', 'def _h():', '\tdef k(x, B: tl.constexpr):',
             '\t    pass', '\tW = 32', '\tdef f(x):', '\t    k[(1,)](x, B=1024, num_warps=W)', '']
    codes = {}
    for newline in ("\r", "\n"):
        report = check_bytes(newline.join(lines).encode(), "m.py", Settings(), fix=True)
        assert report.internal_error is None, report.internal_error
        codes[newline] = sorted((f.code, f.start.row) for f in report.findings)
    assert codes["\r"] == codes["\n"] and codes["\n"]


def _texts():
    from pathlib import Path

    for name, code in _corpus():
        yield name, code
    for path in sorted((Path(__file__).parent / "fixtures").rglob("*.py")):
        yield path.name, path.read_text(encoding="utf-8", errors="replace")
    yield "decorated", "import torch\nx = 1\n@dec\ndef f():\n  pass\ny = 2\nz = 3\nclass A:\n\tpass\nw = 4\n"
    yield "semicolons", "import torch\nx = 1; y = 2\nz = 3\n# c\nw = 4\nv = (\n 1)\nu = 5"
    yield "crlf pieces", "import torch\r\nif x:\r\n  y = 1\r\na = 1\r\nb = 2\r\nc = 3\r\n# end\r\n"
    yield "late indent", "import torch\na = 1\nb = 2\nc = 3\nif x:\n\ty = 1\nd = 4\ne = 5\n"
    for name, code in LATE_BLOCKS.items():
        yield name, code


# Files whose first indented block comes late, or that have none (issue 31: they were parsed
# whole, 1.3-3.3 GB for 100,000 lines): cut before it all the same, the pieces must agree
# with the indentation of the block LibCST meets first.
LATE_BLOCKS = {
    "flat": "import torch\na = 1\nb = 2\nprint(a)\nc = {'k': [1,\n 2]}\nd = 4\n",
    "flat, no newline at the end": "a = 1\nb = 2\nc = 3",
    "late tabs": "a = 1\nb = 2\nc = 3\ndef f():\n\treturn 1\nd = 4\ne = 5\n",
    "late two blanks": "a = 1\nb = 2\nc = 3\nclass A:\n  x = 1\n  def g(self):\n      pass\nd = 4\n",
    "a suite first, a block later": "a = 1\nb = 2\nif a: pass\nc = 3\nwhile b:\n   b -= 1\nd = 4\n",
    "the block in an else": "a = 1\nb = 2\nif a: pass\nelse:\n\tb = 3\nc = 4\nd = 5\n",
    "the block in an elif": "a = 1\nb = 2\nif a: pass\nelif b:\n     c = 3\nd = 4\ne = 5\n",
    "the block in a handler": "a = 1\nb = 2\ntry: import x\nexcept ImportError:\n  x = None\nc = 4\nd = 5\n",
    "a wrapped header": "a = 1\nb = 2\nif (a and\n        b): pass\nc = 3\nif c:\n  d = 1\ne = 5\n",
    "crlf late": "a = 1\r\nb = 2\r\nc = 3\r\nif x:\r\n\t y = 1\r\nd = 4\r\n",
    "match late": "a = 1\nb = 2\nmatch a:\n  case 1:\n      pass\nc = 3\nd = 4\n",
}


@pytest.mark.parametrize("name", sorted(LATE_BLOCKS))
def test_a_file_without_an_early_block_is_parsed_in_pieces(name, monkeypatch):
    from rocmport import parsing

    monkeypatch.setattr(parsing, "PIECE_LINES", 1)
    code = LATE_BLOCKS[name]
    pieced = parsing.parse_pieces(code, None)
    assert pieced is not None, name
    assert pieced.deep_equals(cst.parse_module(code)) and pieced.code == code
    assert pieced.default_indent == cst.parse_module(code).default_indent


@pytest.mark.parametrize("name,code", list(_texts()))
def test_a_text_parsed_in_pieces_is_the_tree_of_one_parse(name, code, monkeypatch):
    from rocmport import parsing

    try:
        whole = cst.parse_module(code)
    except (cst.ParserSyntaxError, RecursionError):
        return
    monkeypatch.setattr(parsing, "PIECE_LINES", 1)
    pieced = parsing.parse_pieces(code, None)
    if pieced is not None:
        assert pieced.deep_equals(whole), name
        assert pieced.code == code
    assert parsing.parse(code).deep_equals(whole)


# -- the fixed text's tree, parsed only where the fix changed it (parsing.parse_edited) --------

_SHAPES = [
    "x = {n}\n",
    "# a comment {n}\n\ny = {n}\n",
    "class C{n}:\n    a = {n}\n\n    # indented, after the block\n# at column 0\nz{n} = 1\n",
    "def f{n}(a):\n\tif a:\n\t\treturn {n}\n\treturn 0\n",
    "@dec\n# between\n@other({n})\ndef g{n}(): pass\n",
    "if x:\n    pass\nelse:\n    y = {n}\n",
    'compiled_{n} = torch.compile(m, mode="reduce-overhead")\n',
    "try:\n    import a{n}\nexcept ImportError:\n    a{n} = None\n",
]
_INSERTS = ["", "w = 1\n", "\n# new comment\n", "is_rocm = getattr(torch.version, 'hip', None) is not None\n\n",
            "    # indented comment\n", "\n\n"]


def _random_case(rng, newline):
    body = ["import torch\n", "import os\n\n", "class First:\n    pass\n\n"]
    body += [rng.choice(_SHAPES).format(n=i) for i in range(rng.randint(8, 30))]
    text = "".join(body).replace("\n", newline)
    from rocmport.linting import analyze, select_rules

    enabled, rules = select_rules(Settings(), "t.py")
    analysis = analyze(text, "t.py", Settings(), rules, enabled)
    from rocmport.findings import Edit

    edits, taken = [], []
    starts = [m.start() for m in __import__("re").finditer(r"(?m)^\S", text)]
    for _ in range(rng.randint(1, 6)):
        at = rng.choice(starts[3:] + [rng.randrange(len(text) // 2, len(text))])
        end = at + rng.choice([0, 0, 1, 3])
        if any(s <= end and at <= e for s, e in taken) or end > len(text):
            continue
        taken.append((at, end))
        edits.append(Edit(at, end, rng.choice(_INSERTS).replace("\n", newline)))
    return analysis, edits


USED: list = []


def test_the_random_edits_mostly_take_the_edited_parse():
    for seed in range(60):
        test_the_tree_parsed_where_edits_are_is_the_tree_of_one_parse(seed)
    assert sum(USED) > len(USED) * 2 / 3, (sum(USED), len(USED))  # of the edited texts that parse


@pytest.mark.parametrize("seed", range(60))
def test_the_tree_parsed_where_edits_are_is_the_tree_of_one_parse(seed):
    import random

    from rocmport import linting, parsing
    from rocmport.source import apply_edits

    rng = random.Random(seed)
    analysis, edits = _random_case(rng, rng.choice(["\n", "\r\n"]))
    if not edits:
        return
    new_text = apply_edits(analysis.text, edits)
    try:
        whole = cst.parse_module(new_text)
    except cst.ParserSyntaxError:
        whole = None
    edited = parsing.parse_edited(new_text, analysis, edits)
    if whole is not None:
        USED.append(edited is not None)
    if edited is not None:
        assert whole is not None, "a text that does not parse must get the whole parse's error"
        assert edited.deep_equals(whole), seed
        assert edited.code == new_text


def test_a_big_file_is_fixed_alike_with_and_without_the_edited_parse(monkeypatch):
    from rocmport import linting, parsing

    monkeypatch.setattr(parsing, "PIECE_LINES", 200)  # "large" from 200 lines
    text = (HEAD + "".join(pieces(1, 60))).encode()
    before = STATS.copy()
    fast = check_bytes(text, "big.py", Settings(), fix=True)
    assert (STATS - before)["parse:edited"] > 0  # the fixed text was parsed where the fixes are
    monkeypatch.setattr(parsing, "parse_edited", lambda *a: None)
    slow = check_bytes(text, "big.py", Settings(), fix=True)
    assert fast.fixed == slow.fixed and fast.fixed is not None
    assert [(f.code, f.start, f.message) for f in fast.findings] == [(f.code, f.start, f.message) for f in slow.findings]


def test_the_cyclic_collector_is_off_while_a_file_is_checked(monkeypatch):
    """In rocmport's own process (``rocmport.process``) the collector is paused while a file
    is checked; outside it, see tests/test_embedding.py."""
    import gc

    from rocmport import linting, parsing, process

    seen = []
    real = linting.analyze

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(linting, "analyze", spy)
    monkeypatch.setattr(parsing, "PIECE_LINES", 200)  # "large" from 200 lines
    large = (HEAD + "".join(pieces(1, 20))).encode()
    assert large.count(b"\n") > 200
    small = b"import torch\nf = torch.compile(g, mode='reduce-overhead')\n"
    assert gc.isenabled()
    with process.own():
        for data, name in ((large, "big.py"), (small, "small.py")):
            seen.clear()
            check_bytes(data, name, Settings(), fix=True)
            assert seen and not any(seen) and gc.isenabled()  # off during, on again after
        gc.disable()
        try:  # a caller that turned it off keeps it off
            check_bytes(large, "big.py", Settings())
            assert not gc.isenabled()
        finally:
            gc.enable()


_NESTED = '''import torch


class Big:
    """doc"""

    x = 1; y = 2

    @staticmethod
    # between
    @other(
        1)
    def first(a):
        if a:
            return torch.compile(a)  # t
        # trailing comment

    def second(self):
      pass

    class Inner:
        def deep(self):
            value = 1
            return value

        # before the last
        def last(self): return 2

    def tail(self):
        return 3
'''


@pytest.mark.parametrize("source", [_NESTED, _NESTED.replace("\\n", "\\r\\n")] + [
    path.read_text() for path in sorted((Path(__file__).resolve().parent.parent / "rocmport" / "analysis").glob("*.py"))])
def test_positions_of_a_statement_inside_a_class_or_function_are_libcsts(source):
    """Asked first for a node inside a method, the positions of that method alone are
    generated (from where CPython's tree says it begins, with its blocks' indentation, and
    kept only if it ends where the next statement begins): the same as LibCST's, in any
    order of asking."""
    import ast
    import random

    module = cst.parse_module(source)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    parents = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ParentNodeProvider)
    meta = Metadata(module, ast.parse(source), source)
    _walk.visit_batched(module, [], before_visit=meta.enter, after_leave=meta.leave, skip_whitespace=True)
    mine = meta.resolve(PositionProvider)
    nodes = [node for node in parents if type(node) not in _walk.WHITESPACE_LEAVES]
    random.Random(len(source)).shuffle(nodes)
    before = STATS.copy()
    for node in nodes:
        assert mine[node] == positions[node], type(node).__name__
    used = STATS - before
    assert not used["positions:nested recounted"], used
    if "class " in source:
        assert used["positions:nested"], used


# -- a large file without the module-level statements no rule reads (analysis/inert.py) ------

def _reducing(monkeypatch):
    """Every text "large" and reduced wherever one statement can go."""
    from rocmport import parsing

    monkeypatch.setattr(parsing, "PIECE_LINES", 1)
    monkeypatch.setattr(parsing, "REDUCE_MIN_SHARE", 0.0)


_TRICKY_CUTS = {
    "a string with lines at column 0": 'x = 1\nHELP = """\nusage: a\nb = 2\n"""\ny = 2\n',
    "brackets with lines at column 0": "x = [\n1,\nlen(y),\n]\nz = 3\n",
    "a backslash": "x = 1 + \\\n  2\nw = 3\n",
    "decorators": "@a\n@b\ndef f(): pass\nx = 1\n",
    "clauses at column 0": "if x:\n  a = 1\nelse:\n  a = 2\ntry:\n  b = 1\nexcept E:\n  b = 2\nfinally:\n  c = 1\nz = 1\n",
    "a string continued by a backslash": "s = 'a\\\nb'\nt = 1\n",
    "an f-string over lines": 'v = f"""{\nx\n}"""\nu = 1\n',
    "unicode before a cut": "é = 'ü'\nñ = é\n",
    "a syntax error": "x = 1\ny = (\nz = 3\n",
}


@pytest.mark.parametrize("name,code", list(_texts()) + sorted(_TRICKY_CUTS.items()))
def test_cpythons_tree_in_pieces_is_the_tree_of_one_parse(name, code, monkeypatch):
    import ast

    from rocmport import parsing
    from rocmport.source import LineIndex

    monkeypatch.setattr(parsing, "PIECE_LINES", 1)
    try:
        whole = ast.parse(code)
    except (SyntaxError, ValueError):
        whole = None
    trees = list(parsing.cpython_pieces(code, LineIndex(code)))
    if whole is None:
        assert trees[-1] is None
        return
    if None in trees:  # nested too deep in a piece: as cpython_parse would say
        assert parsing.cpython_parse(code)[1] is not None
        return
    body = [stmt for tree in trees for stmt in tree.body]
    assert ast.dump(ast.Module(body=body, type_ignores=[]), include_attributes=True) == \
        ast.dump(whole, include_attributes=True), name


def _reduction(text, words=("compile",)):
    from rocmport import parsing
    from rocmport.source import LineIndex

    return parsing.reduced(text, LineIndex(text), frozenset(words))


def test_which_module_level_statements_are_left_out(monkeypatch):
    _reducing(monkeypatch)
    text = ('"""doc"""\nimport torch\n'
            'a = 1\n'                                   # 3: read by nothing
            'b = a + 1  # a compile note\n'             # 4: a word (in its comment)
            'c = a\n'                                   # 5: spells a, which a kept statement spells
            '# about d\nd = 2\n'                        # 7: linked to nothing
            'm = torch.compile(model, mode=mode)\n'    # 8: a word
            'model = d2\n'                              # 9: binds a name the compile reads
            'd2 = 7\n'                                  # 10: read by the one above
            'print(len(q))\n'                           # 11: builtins and an unbound name only
            'm(x)\n'                                    # 12: a use of what the compile binds
            '__all__ = ["m"]\n'                         # 13: a dunder
            '(y := 3)\n'                                # 14: binds with :=
            'pytestmark = skip\n'                       # 15: read by the engine by name
            '"a string"\n'                              # 16: a constant expression
            'e = 1; f = 2\n'                            # 17: one line, two statements
            'assert e\n'                                # 18: not a simple assignment or call
            'g = [\n  1,\n]\n')                         # 19-21
    found = _reduction(text)
    assert found is not None and found.module is not None
    left_out = sorted((run.first, run.last) for run in found.runs)
    assert left_out == [(7, 7), (11, 11), (19, 21)], left_out  # the comment above 7: its leading line
    assert found.module.code == text
    from rocmport.analysis.inert import InertRun

    run = found.tree.body[5]  # CPython's tree: the statements kept, a statement for each run
    assert found.tree.body[4].lineno == 5 and type(run) is InertRun and (run.lineno, run.end_lineno) == (7, 7)


def test_a_reduced_tree_is_the_text_with_a_whole_parses_positions(monkeypatch):
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from rocmport.analysis.opaque import Opaque

    _reducing(monkeypatch)
    text = ("# head\n\nimport torch\nx = 1  # one\n# between\n\ny = (2,\n     3)\nif torch:\n    z = compile(x)\n"
            "w = 4\r\nv = 5\n# end\n")
    found = _reduction(text)
    assert found is not None and found.module is not None and len(found.runs) == 2
    module = found.module
    assert module.code == text and module.deep_clone().code == text
    whole = MetadataWrapper(cst.parse_module(text)).resolve(PositionProvider)
    part = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

    def names(positions):
        return sorted((node.value, (r.start.line, r.start.column, r.end.line, r.end.column))
                      for node, r in positions.items() if isinstance(node, cst.Name))

    kept = [n for n in names(whole) if n[0] not in ("y", "w", "v")]  # x: read by the kept block
    assert names(part) == kept
    assert [type(s) for s in module.body].count(Opaque) == 2
    from rocmport.analysis.metadata import Metadata

    meta = Metadata(module, found.tree, text)  # the lines of CPython's tree pair with LibCST's
    assert meta.positions._lines() is not None
    full = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
    block = next(s for s in full.module.body if isinstance(s, cst.If))
    mine = next(s for s in module.body if isinstance(s, cst.If))
    assert meta.positions[mine] == full.resolve(PositionProvider)[block]
    assert meta.positions[mine.body.body[0]] == full.resolve(PositionProvider)[block.body.body[0]]


def _flat(lines):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bigfile", Path(__file__).parent.parent / "benchmarks" / "bigfile.py")
    bigfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bigfile)
    return bigfile.make(lines, lines // 100, "flat")


def _outcome(report):
    return (report.internal_error, report.fixed, report.fixes_applied, report.extra_files, report.applied,
            [(f.code, f.name, f.message, f.start, f.end, f.span, f.fix, f.scope, f.related, f.decision, f.not_a_port)
             for f in report.findings])


def test_a_flat_file_is_linted_and_fixed_alike_with_and_without_the_statements_no_rule_reads(monkeypatch):
    from rocmport import parsing

    monkeypatch.setattr(parsing, "PIECE_LINES", 500)
    text = _flat(3000).encode()
    out = {}
    for on in (True, False):
        monkeypatch.setitem(parsing.REDUCE, "enabled", on)
        before = STATS.copy()
        linted = check_bytes(text, "big.py", Settings())
        fixed = check_bytes(text, "big.py", Settings(), fix=True)
        used = STATS - before
        assert (used["parse:inert"] > 5000) == on, used  # each analysis leaves most statements out
        out[on] = (_outcome(linted), _outcome(fixed))
    assert out[True] == out[False]
    assert out[True][1][1] is not None and out[True][1][2] >= 30


def _noise(names):
    """Module-level statements: some read by nothing, some spelling the case's own names."""
    lines = ["noise_0 = 1  # a note", "noise_1 = noise_0 + len([2,", "  3])", "", "# a comment line",
             "print(noise_1, undefined_name)", "noise_2 = 2; noise_3 = 3", "noise_4: int = 4", "del noise_4",
             "noise_0 += 1"]
    for name in sorted(names)[:3]:
        lines.append(f"noise_{name} = {name}")
    return "\n".join(lines) + "\n"


def _variants(code):
    """``code`` with noise after it, and with noise before its last top-level statement."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    noise = _noise(names)
    out = [code + ("" if code.endswith("\n") or not code else "\n") + noise]
    tops = [s for s in tree.body if s.col_offset == 0 and not getattr(s, "decorator_list", None)]
    if len(tops) >= 2:
        at = sum(len(line) for line in code.splitlines(keepends=True)[:tops[-1].lineno - 1])
        out.append(code[:at] + noise + code[at:])
    return out


def _cases():
    for rule in visitor_rules():
        for number, case in enumerate(list(rule.VALID) + list(rule.INVALID)):
            yield f"{rule.CODE}-{number}", case.code, getattr(case, "path", None) or "t.py"
    for path in sorted((Path(__file__).parent / "fixtures").rglob("*.py")):
        yield path.name, path.read_text(encoding="utf-8", errors="replace"), path.name


def _compare_reduced(cases, monkeypatch):
    from rocmport import parsing

    _reducing(monkeypatch)
    reduced = 0
    for name, code, path in cases:
        for text in _variants(code):
            data = text.encode()
            out = {}
            for on in (True, False):
                monkeypatch.setitem(parsing.REDUCE, "enabled", on)
                before = STATS["parse:inert"]
                out[on] = (_outcome(check_bytes(data, path, Settings())),
                           _outcome(check_bytes(data, path, Settings(), fix=True)))
                if on:
                    reduced += STATS["parse:inert"] > before
            assert out[True] == out[False], name
    return reduced


def test_rule_cases_with_noise_are_found_and_fixed_alike_with_and_without_the_reduction(monkeypatch):
    cases = [c for c in _cases() if c[0].endswith("-0") or c[0].endswith("-1")]
    reduced = _compare_reduced(cases, monkeypatch)
    assert reduced > len(cases) // 2  # the noise went, in most of them


@pytest.mark.slow
def test_every_rule_case_and_fixture_with_noise_is_found_and_fixed_alike_with_and_without_the_reduction(monkeypatch):
    cases = list(_cases())
    reduced = _compare_reduced(cases, monkeypatch)
    assert reduced > len(cases) // 2


_REFUSED = {
    "a syntax error half way": "x = (\n",
    "more joined strings than LibCST takes": "joined = (" + " ".join(['"s"'] * 3001) + ")\n",
    "a line that is only a continuation": "\\\ny = 1\n",
    "a lone CR": "cr = 1\rcr2 = 2\n",
    "the placeholder's name": "_rocmport_inert_0 = 1\n",
}


@pytest.mark.parametrize("name", sorted(_REFUSED))
def test_what_a_whole_parse_refuses_or_reads_is_alike_with_the_reduction(name, monkeypatch):
    from rocmport import parsing

    _reducing(monkeypatch)
    lines = _flat(400).splitlines(keepends=True)
    data = "".join(lines[:200] + [_REFUSED[name]] + lines[200:]).encode()
    out = {}
    for on in (True, False):
        monkeypatch.setitem(parsing.REDUCE, "enabled", on)
        out[on] = (_outcome(check_bytes(data, "big.py", Settings())),
                   _outcome(check_bytes(data, "big.py", Settings(), fix=True)))
    assert out[True] == out[False]
