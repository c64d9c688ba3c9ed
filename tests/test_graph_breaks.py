"""ROC4xx: graph breaks inside compiled code, every kind of compiled region and its reach."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_fix_properties, codes, fixture_pairs, lint

CODES = ["ROC401", "ROC402", "ROC403", "ROC405"]

EXPECTED = {
    "near_misses.py": [],
    "regions.py": [(11, "ROC401"), (16, "ROC402"), (21, "ROC403"), (35, "ROC402"), (45, "ROC401"),
                   (63, "ROC401")],
    "scalar_outputs.py": [(10, "ROC401")],
    "which_forward.py": [(13, "ROC403")],
    # the cached process call, through gfx_target(); device_count(): not the eager side of
    # is_compiling(), the @torch.compiler.disable island, the folded get_device_properties
    "untraceable.py": [(14, "ROC405"), (40, "ROC405")],
}


def _lint(name):
    return lint((FIXTURES / "graph_breaks" / name).read_bytes(), select=CODES)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_findings(name):
    assert sorted((f.start.row, f.code) for f in _lint(name)) == sorted(EXPECTED[name])


def test_every_fixture_is_listed():
    assert {p.name for p, _ in fixture_pairs("graph_breaks")} == set(EXPECTED)


@pytest.mark.parametrize("source,expected", list(fixture_pairs("graph_breaks")), ids=lambda p: getattr(p, "name", "none"))
def test_display_only(source, expected):
    assert expected is None
    report = assert_fix_properties(source.read_bytes(), select=CODES)
    assert report.fixed is None
    assert not any(f.fixable for f in report.findings)


def test_messages_name_region_line_and_chain():
    messages = {f.start.row: f.message for f in _lint("regions.py")}
    assert messages[11] == ("`.item()` breaks the graph inside `decorated`, compiled at line 9: keep it a tensor,"
                            " or set `torch._dynamo.config.capture_scalar_outputs = True`")
    assert messages[16] == ("`print()` breaks the graph inside `decorated_call`, compiled at line 14: move it out"
                            " of the compiled code, or guard it with `if not torch.compiler.is_compiling():`")
    assert messages[21] == ("`if` on a tensor value breaks the graph inside `assigned`, compiled at line 30, via"
                            " helper() (data-dependent control flow): use `torch.where` or `torch.cond`, or"
                            " decide before the compiled call")
    assert messages[35].startswith("logging call `logger.info()` breaks the graph inside `Outer.forward`, compiled"
                                   " at line 48, via Inner.forward():")
    assert "inside `Net.forward`, compiled at line 55:" in messages[63]  # self.net = torch.compile(self.net)


def test_only_the_compiled_classes_forward():
    # Compiled.forward is compiled in place; Policy.forward (another class's forward, which
    # calls the compiled model) is not, so its .item() is fine.
    [f] = _lint("which_forward.py")
    assert "inside `Compiled.forward`, compiled at line 9" in f.message


def test_capture_scalar_outputs_keeps_numpy_only():
    [f] = _lint("scalar_outputs.py")
    assert f.message.startswith("`.numpy()`")


def test_module_compile_method_and_inline():
    src = ("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        print(x)\n        return x\n"
           "def build():\n    m = M()\n    return torch.compile(m)\n")
    [f] = lint(src, select=CODES)
    assert (f.code, f.start.row) == ("ROC402", 4)
    assert "inside `M.forward`, compiled at line 8" in f.message


def test_compiled_method_reference():
    src = ("import torch\nclass A:\n    def __init__(self):\n        self.step = torch.compile(self.step)\n"
           "    def step(self, x):\n        return self.helper(x)\n    def helper(self, x):\n        return x.item()\n"
           "class B:\n    def step(self, x):\n        return x.item()\n")
    [f] = lint(src, select=CODES)
    assert f.start.row == 8
    assert "inside `A.step`, compiled at line 4, via A.helper()" in f.message


def test_recursive_compiled_function_terminates():
    src = ("import torch\n@torch.compile\ndef f(x, n):\n    if n:\n        return g(x, n - 1)\n    return x\n"
           "def g(x, n):\n    print(n)\n    return f(x, n)\n")
    [f] = lint(src, select=CODES)
    assert "via g()" in f.message


def test_torch_compiler_namespace_is_not_compile():
    src = ("import torch\n@torch.compiler.allow_in_graph\ndef f(x):\n    return x.item()\n"
           "g = torch.compiler.disable(f)\n")
    assert lint(src, select=CODES) == []


def test_early_exit_guard():
    src = ("import torch\n@torch.compile\ndef f(x):\n    if torch.compiler.is_compiling():\n        return x\n"
           "    print(x)\n    return x\n")
    assert lint(src, select=CODES) == []


# -- precision: the path on which a function is compiled, loggers silenced by the file -------

_FLAGGED = '''import torch
USE_COMPILE = True
def step(x):
    if not USE_COMPILE:
        print(x.sum().item())
    if USE_COMPILE:
        y = x
    else:
        y = x.item()
    return x.tolist()
if USE_COMPILE:
    step = torch.compile(step)
'''


def test_hazards_on_the_path_where_the_function_is_not_compiled_are_not_reported():
    found = lint(_FLAGGED)
    assert [(f.code, f.start.row) for f in found] == [("ROC401", 10)]


def test_the_same_hazards_are_reported_when_compiled_on_every_path():
    src = _FLAGGED.replace("if USE_COMPILE:\n    step = torch.compile(step)", "step = torch.compile(step)")
    assert sorted((f.code, f.start.row) for f in lint(src)) == [
        ("ROC401", 5), ("ROC401", 9), ("ROC401", 10), ("ROC402", 5)]


def test_a_different_flag_is_no_proof():
    src = _FLAGGED.replace("if not USE_COMPILE:", "if not VERBOSE:")
    assert ("ROC401", 5) in [(f.code, f.start.row) for f in lint(src)]


_LOGGER = '''import logging
import os
import torch
logger = logging.getLogger(__name__)
{rebind}
@torch.compile
def f(x):
    logger.info("x")
    return x
'''


@pytest.mark.parametrize("rebind", [
    'if not os.environ.get("DEBUG"):\n    logger.info = lambda *args, **kwargs: None',
    'def _noop(*args, **kwargs):\n    pass\nif not os.environ.get("DEBUG"):\n    logger.info = _noop',
    'class _Null:\n    def info(self, *args):\n        """Nothing."""\nif not os.environ.get("DEBUG"):\n'
    '    logger = _Null()',
])
def test_a_logger_rebound_to_a_no_op_is_not_reported(rebind):
    assert codes(_LOGGER.format(rebind=rebind)) == []


@pytest.mark.parametrize("rebind", [
    "",
    'if not os.environ.get("DEBUG"):\n    logger.warning = lambda *args, **kwargs: None',  # another method
    'def _loud(*args):\n    print(*args)\nlogger.info = _loud',  # not a no-op
    'class _Null:\n    def info(self, *args):\n        print(args)\nlogger = _Null()',
])
def test_a_logger_that_still_logs_is_reported(rebind):
    assert "ROC402" in codes(_LOGGER.format(rebind=rebind))


# -- types through chains, generator objects in a capture, dynamic shapes in compiled code ----

_CHAIN = '''import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x.item()
class Other(torch.nn.Module):
    def forward(self, x):
        return x.tolist()
{use}
'''


@pytest.mark.parametrize("use,expected", [
    ("m = torch.compile(Model().cuda().eval().half())", [("ROC401", 4)]),
    ('m = torch.compile(Model().to("cuda").bfloat16())', [("ROC401", 4)]),
    ("net = Model().cuda()\nm = torch.compile(net.eval())", [("ROC401", 4)]),
    ('fn = torch.cuda.make_graphed_callables(Model().cuda(), (torch.randn(2, device="cuda"),))',
     [("ROC301", 4)]),
    ("m = torch.compile(Model().cuda().state_dict())", []),  # not the module: a dict
    ("m = torch.compile(Other().parameters())", []),
])
def test_module_methods_that_return_the_module_keep_its_class(use, expected):
    found = [(f.code, f.start.row) for f in lint(_CHAIN.format(use=use)) if f.code in ("ROC401", "ROC301")]
    assert found == expected


_GEN = '''import torch
g = torch.cuda.CUDAGraph()
{setup}
with torch.cuda.graph(g):
    {call}
'''


@pytest.mark.parametrize("setup,call,hazard", [
    ("gen = torch.cuda.default_generators[0]", "state = gen.get_state()", True),
    ("gen = torch.cuda.default_generators[0]", "gen.set_state(saved)", True),
    ('gen = torch.Generator(device="cuda")', "gen.manual_seed(0)", True),
    ("pass", "for gen in torch.cuda.default_generators:\n        gen.manual_seed(0)", True),
    ("gen = torch.Generator()", "gen.manual_seed(0)", False),  # a CPU generator
    ('gen = torch.Generator(device="cpu")', "state = gen.get_state()", False),
    ("gen = make_rng()", "state = gen.get_state()", False),  # not known to be a torch.Generator
])
def test_rng_state_of_generator_objects_in_a_capture(setup, call, hazard):
    found = [f.code for f in lint(_GEN.format(setup=setup, call=call), select=["ROC303"])]
    assert found == (["ROC303"] if hazard else [])


@pytest.mark.parametrize("body,hazard", [
    ("    return x.nonzero()", True),
    ("    return torch.unique(x)", True),
    ("    y = x[x > 0]\n    return y, y.numel()", True),
    ("    y = x[x > 0]\n    return len(y)", True),
    ("    y = x[x > 0]\n    return y.sum()", False),  # the size never reaches Python
    ("    return torch.where(x > 0, x, 0)", False),
    ("    return x.repeat_interleave(3)", False),
    ("    return x.repeat_interleave(n_rep, dim=1)", False),  # grouped-query attention: an int count
    ("    return x.repeat_interleave(self.num_heads // 2, dim=-1)", False),
    ("    return x.repeat_interleave(repeats=self.num_key_value_groups, dim=1)", False),
    ("    return x.repeat_interleave(counts, dim=0)", True),  # per-row counts: a tensor
    ("    return x.repeat_interleave(x.sum(-1).long(), dim=0)", True),
    ("    return torch.repeat_interleave(x, tokens_per_expert, dim=0)", True),
    ('    s = "x.nonzero()"\n    return x', False),
])
def test_dynamic_shapes_in_compiled_code(body, hazard):
    src = f"import torch\n@torch.compile\ndef f(x: torch.Tensor):\n{body}\n"
    assert ([f.code for f in lint(src, select=["ROC404"])] == ["ROC404"]) is hazard
    eager = f"import torch\ndef f(x: torch.Tensor):\n{body}\n"
    assert lint(eager, select=["ROC404"]) == []
