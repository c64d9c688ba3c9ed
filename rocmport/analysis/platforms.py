"""Which platforms a piece of code runs on, read from the conditions around it.

A platform is what runs the code's GPU work: ``cuda`` (an NVIDIA GPU and a CUDA build of
torch), ``rocm`` (an AMD GPU, a ROCm build), ``cpu`` (no GPU) and ``other`` (another
accelerator: NPU, XPU, HPU, MPS, ...). A condition is a :class:`Test`: the platforms on which
it can be true, and those on which it can be false. ``torch.version.hip is not None`` is true
on ``rocm`` only; ``torch.cuda.is_available()`` is true on ``cuda`` and ``rocm`` alike (HIP is
``torch.cuda`` on ROCm), so it lets ROCm through; an unknown condition may be either anywhere.

One classifier reads every condition, on CPython's tree (:func:`classify`): the spellings of
torch's own tests, the conventions of the projects that port to ROCm (``is_hip()``,
``_is_cuda = is_cuda()``, ``current_platform.is_rocm()``, ``SYSTEM == "rocm"``, ``"AMD" in
get_device_name()``, a Triton target's ``backend == "hip"``), and the project's own
predicates (:func:`module_tests`: module-level flags and functions that return a test; the
project index holds them for every module, so ``from .utils import is_hip`` reads as the test
its definition is). Names it does not know are read by their words, and only where a word
decides (``is_rocm``, ``on_gfx950``, ``is_npu``; ``is_cuda()`` as the NVIDIA platform, as
vLLM-style projects define it).

It reads CPython's tree and imports no LibCST: the project index uses it for every module's
predicates. ``gates`` asks it for LibCST's nodes of the file being checked. Facts, never
findings.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple

from .bindings import dotted as _dotted
from .bindings import import_bindings, module_imports

CUDA, ROCM, CPU, OTHER = "cuda", "rocm", "cpu", "other"
EVERY: FrozenSet[str] = frozenset({CUDA, ROCM, CPU, OTHER})
GPUS: FrozenSet[str] = frozenset({CUDA, ROCM})


@dataclass(frozen=True)
class Test:
    """Where a condition can be true, and where it can be false; ``arch``: it also tells AMD
    GPUs apart (a ``gcnArchName`` or ``"gfx942"`` test, a capability comparison, a helper named
    ``on_gfx950()`` / ``uses_fnuz()``), so neither of its sides holds every AMD GPU."""

    true: FrozenSet[str] = EVERY
    false: FrozenSet[str] = EVERY
    arch: bool = False
    # False when a part of the condition is unknown (``torch.cuda.is_available() and
    # find_spec("mylib")``): the sets hold, but the unknown part may be what decides
    decided: bool = field(default=True, compare=False)

    def negated(self) -> "Test":
        return Test(self.false, self.true, self.arch, self.decided)

    @property
    def known(self) -> bool:
        return self.true != EVERY or self.false != EVERY

    def __and__(self, other: "Test") -> "Test":
        return Test(self.true & other.true, self.false | other.false, self.arch or other.arch,
                    self.decided and other.decided)

    def __or__(self, other: "Test") -> "Test":
        return Test(self.true | other.true, self.false & other.false, self.arch or other.arch,
                    self.decided and other.decided)


def only(*platforms: str) -> Test:
    """True exactly on ``platforms``."""
    true = frozenset(platforms)
    return Test(true, EVERY - true)


UNKNOWN = Test(decided=False)
ALWAYS = Test(EVERY, frozenset())  # ``True``, a module's constant flag set to True
NEVER = Test(frozenset(), EVERY)  # ``False``, ``FULL_SPACE = False``: its branch runs nowhere
IS_ROCM = only(ROCM)
IS_CUDA = only(CUDA)
HAS_GPU = only(CUDA, ROCM)  # torch.cuda.is_available(), device.type == "cuda": True on ROCm too
IS_CPU = only(CPU)
IS_OTHER = only(OTHER)
ON_GPU = Test(GPUS, EVERY)  # a question only a GPU answers (a capability, an architecture)
NVIDIA_ARCH = Test(frozenset({CUDA}), EVERY)  # an NVIDIA architecture (is_hopper): never true on ROCm
# An AMD architecture: true on some AMD GPUs only (``"gfx950" in props.gcnArchName``,
# ``on_gfx942()``, ``is_fp8_fnuz()``); false on NVIDIA and on the other AMD GPUs.
ARCH = Test(frozenset({ROCM}), EVERY, True)
CAPABILITY_TEST = Test(GPUS, EVERY, True)  # a capability comparison: an NVIDIA generation or an AMD gfx version

# -- words ------------------------------------------------------------------------------
_ROCM_WORD = re.compile(r"(?i)(?:^|_)(?:rocm|hip|amd|gfx\d+\w*|mi[23]\d\d\w*|cdna\d*|rdna\d*)(?:_|$|\d)")
# Words that name an AMD architecture (or its fp8 format) rather than the vendor: ``on_gfx950``,
# ``is_mi300``, ``_on_mi3xx``, ``is_cdna3``, ``is_navi4``, ``supports_float8_fnuz``, ``is_fp8_fnuz``.
_ARCH_WORD = re.compile(r"(?i)(?:^|_)(?:gfx\d*\w*|mi[23](?:\d\d|xx)\w*|cdna\d*|rdna\d*|navi\d*|fnuz)(?:_|$|\d)")
_OTHER_WORD = re.compile(r"(?i)(?:^|_)(?:npu|xpu|hpu|mps|tpu|musa|mlu|neuron|ascend|ipex|gaudi|habana|xla"
                         r"|kunlunxin|cambricon|metax|mthreads|iluvatar|enflame|tsingmicro)(?:_|$|\d)")
_CPU_WORD = re.compile(r"(?i)^_*(?:is|on|use|using|run_on)_cpu$")
# A name for the NVIDIA platform: ``is_cuda`` (vLLM, SGLang, lmdeploy: the CUDA platform, not
# ROCm), ``is_nvidia``, ``on_nvidia``; not ``is_cuda_available``, ``use_cuda``, ``has_cuda``,
# ``is_cuda_alike``, whose projects mean "a GPU".
_NVIDIA_WORD = re.compile(r"(?i)^_*(?:is|on|running_on)_(?:cuda|nvidia|nv)$|^_*(?:is_)?nvidia(?:_gpu)?$")
# (``has_cuda_tile``, ``use_cuda_graph`` say something else: a package, a feature)
_GPU_WORD = re.compile(r"(?i)^_*(?:(?:has|use|using|with)_?(?:cuda|gpu)(?:_(?:available|enabled|device|devices))?"
                       r"|is_gpu(?:_\w+)?"
                       r"|(?:is_)?cuda_?(?:available|alike|like|enabled|is_available)|gpu_?available)$")
# An NVIDIA architecture: ``is_hopper``, ``platform.is_blackwell``, ``is_sm90()``,
# ``is_hopper_plus``: true on some NVIDIA GPUs only, false on ROCm
_NVIDIA_ARCH_WORD = re.compile(r"(?i)^_*(?:is|on|has|supports?)_(?:hopper|blackwell|ampere|ada|volta|turing|"
                               r"sm_?\d{2,3}a?)(?:_plus|_or_newer|_or_later|_or_above|_and_above|_and_newer)?$")
_ARCH_VALUE = re.compile(r"(?i)^(?:gfx\d+\w*|mi[23]\d\d\w*|cdna\d*|rdna\d*)$")
_ROCM_VALUE = {"rocm", "hip", "amd"}
_CUDA_VALUE = {"cuda", "nvidia", "nv"}
# ``device.type``, ``x.device``, DeepSpeed's ``get_accelerator().device_name()`` / ``._name``
# (its CUDA accelerator answers "cuda" on ROCm too): a GPU of either vendor when "cuda"
_DEVICE_SUBJECT = re.compile(r"(?i)(?:^|[._])(?:device|dev|type|device_type|accelerator|device_name|accelerator_name)$"
                             r"|^_name$")
_OTHER_VALUE = re.compile(r"(?i)^(?:npu|xpu|hpu|mps|tpu|musa|mlu|neuron|ipex|xla)$")
# Words of a GPU's product name, as ``torch.cuda.get_device_name()`` or nvidia-smi give it:
# ``"Tesla" in name``, ``name.startswith("NVIDIA")``.
_NVIDIA_PRODUCT = {"nvidia", "tesla", "geforce", "quadro", "titan", "jetson"}
_AMD_PRODUCT = {"amd", "radeon", "instinct"}


def arch_word(name: str) -> Optional[str]:
    """The word of ``name`` that names an AMD architecture or its fp8 format (``gfx942``,
    ``mi300``, ``mi3xx``, ``cdna3``, ``navi4``, ``fnuz``), or None."""
    match = _ARCH_WORD.search(name)
    return match.group().strip("_") if match else None


def word_test(name: str, called: bool) -> Test:
    """What a predicate's name alone says (``is_hip``, ``IS_ROCM``, ``on_gfx950``, ``is_npu``,
    ``is_cuda()``); UNKNOWN where no word decides."""
    bare = name.rsplit(".", 1)[-1]
    if _ARCH_WORD.search(bare):
        return ARCH
    if _ROCM_WORD.search(bare):
        return IS_ROCM
    if _OTHER_WORD.search(bare):
        return IS_OTHER
    if _CPU_WORD.match(bare):
        return IS_CPU
    if _NVIDIA_WORD.match(bare):
        # ``tensor.is_cuda`` (an attribute, not called) is True on ROCm; ``is_cuda()`` and a
        # flag named so mean the NVIDIA platform
        return HAS_GPU if not called and "." in name and bare.lower().endswith("cuda") and \
            not name.startswith(("current_platform", "platform")) else IS_CUDA
    if _GPU_WORD.match(bare):
        return HAS_GPU
    if _NVIDIA_ARCH_WORD.match(bare):
        return NVIDIA_ARCH
    return UNKNOWN


# -- the classifier --------------------------------------------------------------------------

@dataclass
class Env:
    """What the names of one module mean: ``imports`` (local name -> absolute dotted name),
    ``tests`` (its own module-level predicates), ``lookup`` (an absolute dotted name of the
    project -> its test, or None), ``extra`` (names known to be ROCm tests: the gate)."""

    imports: Dict[str, str]
    tests: Dict[str, Test]
    lookup: Optional[Callable[[str], Optional[Test]]] = None
    # name -> platform -> the literal values a module-level name may hold there (a flag or a
    # backend name set in the arms of a platform test: :func:`module_tests`)
    values: Dict[str, Dict[str, FrozenSet[object]]] = field(default_factory=dict)

    def absolute(self, spelled: str) -> Optional[str]:
        root, _, rest = spelled.partition(".")
        full = self.imports.get(root)
        if full is None:
            return None
        return f"{full}.{rest}" if rest else full

    def named(self, spelled: str) -> Optional[Test]:
        """The test a name is where its definition is known (this module's, or the project's)."""
        if spelled in self.tests:
            return self.tests[spelled]
        full = self.absolute(spelled)
        if full is not None and self.lookup is not None:
            return self.lookup(full)
        return None


_TORCH_TESTS = {
    "torch.version.hip": IS_ROCM,
    "torch.version.cuda": IS_CUDA,
    "torch.cuda.is_available": HAS_GPU,
    "torch.cuda.is_initialized": HAS_GPU,
    "torch.utils.cpp_extension.ROCM_HOME": IS_ROCM,
    "torch.utils.cpp_extension.IS_HIP_EXTENSION": IS_ROCM,
    "torch.utils.cpp_extension.CUDA_HOME": Test(EVERY - {ROCM}, EVERY),
    "torch.cuda.get_device_capability": ON_GPU,
    "torch.cuda.get_device_properties": ON_GPU,
    "torch.cuda.device_count": HAS_GPU,
    "torch.backends.mps.is_available": IS_OTHER,
    "torch.xpu.is_available": IS_OTHER,
    "torch.npu.is_available": IS_OTHER,
}


def _spelled_test(spelled: str, env: Env, called: bool) -> Test:
    full = env.absolute(spelled) or spelled
    for name, test in _TORCH_TESTS.items():
        if full == name:
            return test
    known = env.named(spelled)
    if known is not None:
        return known
    return word_test(spelled, called)


def _string(node: ast.AST) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _value_test(value: str, subject: Optional[str]) -> Test:
    """``subject == value`` where ``value`` names a platform."""
    lowered = value.lower()
    if _ARCH_VALUE.match(lowered):
        return ARCH
    if lowered in _ROCM_VALUE:
        return IS_ROCM
    if _OTHER_VALUE.match(lowered):
        return IS_OTHER
    if lowered == "cpu":
        return IS_CPU
    if lowered in _CUDA_VALUE:
        # ``device.type == "cuda"`` is a GPU of either vendor; ``SYSTEM == "cuda"``,
        # ``backend == "cuda"`` name the NVIDIA platform
        if lowered == "cuda" and subject is not None and _DEVICE_SUBJECT.search(subject):
            return HAS_GPU
        return IS_CUDA
    return UNKNOWN


def classify(expr: ast.AST, env: Env, depth: int = 0) -> Test:
    """The test ``expr`` is, as a condition."""
    if depth > 20:
        return UNKNOWN
    kind = type(expr)
    if kind is ast.BoolOp:
        tests = [classify(value, env, depth + 1) for value in expr.values]
        out = tests[0]
        for test in tests[1:]:
            out = (out & test) if isinstance(expr.op, ast.And) else (out | test)
        return out
    if kind is ast.UnaryOp and isinstance(expr.op, ast.Not):
        return classify(expr.operand, env, depth + 1).negated()
    if kind is ast.Compare and len(expr.ops) == 1:
        return _compare(expr.left, expr.ops[0], expr.comparators[0], env, depth)
    if kind is ast.Call:
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in ("startswith", "endswith") and len(expr.args) == 1:
            # ``name.startswith("NVIDIA")``: a product name, as ``"NVIDIA" in name`` reads it
            value = _string(expr.args[0])
            if value is not None:
                return _product_test(value)
        spelled = _dotted(func)
        if spelled is not None:
            if spelled in ("bool", "builtins.bool") and len(expr.args) == 1:
                return classify(expr.args[0], env, depth + 1)
            if spelled == "getattr" and len(expr.args) >= 2 and _string(expr.args[1]) is not None:
                base = _dotted(expr.args[0])
                if base is not None:
                    return _spelled_test(f"{base}.{_string(expr.args[1])}", env, called=False)
            if spelled in ("hasattr",) and len(expr.args) == 2 and _string(expr.args[1]) in ("hip",):
                return IS_ROCM
            if spelled.rsplit(".", 1)[-1] in ("startswith", "endswith", "match", "search", "fullmatch") and \
                    any(_arch_string(a) for a in _strings_in(expr.args)):
                return ARCH  # ``arch.startswith("gfx94")``, ``re.match("gfx95", name)``
            return _spelled_test(spelled, env, called=True)
        if isinstance(func, ast.Attribute):  # ``current_platform().is_rocm()``, ``get_x().is_hip()``
            return word_test(func.attr, called=True)
        return UNKNOWN
    if kind is ast.Constant and isinstance(expr.value, (bool, type(None))):
        return ALWAYS if expr.value else NEVER
    if kind in (ast.Name, ast.Attribute):
        spelled = _dotted(expr)
        if spelled is not None:
            return _spelled_test(spelled, env, called=False)
        if kind is ast.Attribute:  # ``current_platform().is_amd``
            return word_test(expr.attr, called=False)
    return UNKNOWN


def _compare(left: ast.AST, op: ast.cmpop, right: ast.AST, env: Env, depth: int) -> Test:
    none_right = isinstance(right, ast.Constant) and right.value is None
    if none_right and isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
        if _finds_cuda_only_package(left, env):
            # ``importlib.util.find_spec("cutlass") is not None``: never true on ROCm
            test = Test(EVERY - {ROCM}, EVERY)
            return test if isinstance(op, (ast.IsNot, ast.NotEq)) else test.negated()
        test = classify(left, env, depth + 1)
        return test if isinstance(op, (ast.IsNot, ast.NotEq)) else test.negated()
    if isinstance(op, (ast.Eq, ast.NotEq)):
        known = _value_compare(left, right, env) or _value_compare(right, left, env)
        if known is not None:
            return known if isinstance(op, ast.Eq) else known.negated()
        for value, subject in ((_string(right), left), (_string(left), right)):
            if value is not None:
                test = _value_test(value, _dotted(subject) or _call_name(subject) or _last_name(subject))
                return test if isinstance(op, ast.Eq) else test.negated()
    if isinstance(op, (ast.In, ast.NotIn)):
        # ``"AMD" in torch.cuda.get_device_name()``, ``"gfx950" in props.gcnArchName``,
        # ``SYSTEM in ("cuda", "rocm")``
        value = _string(left)
        if value is not None:
            test = _value_test(value, None) if value.lower() != "cuda" else IS_CUDA
            if not test.known:
                test = _product_test(value)
            if not test.arch and _arch_string(value):
                test = ARCH  # ``"gfx94" in arch``, ``"MI300" in torch.cuda.get_device_name()``
            return test if isinstance(op, ast.In) else test.negated()
        if isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            tests = [_value_test(_string(e), _dotted(left)) for e in right.elts if _string(e) is not None]
            if tests and len(tests) == len(right.elts) and all(t.known for t in tests):
                out = tests[0]
                for test in tests[1:]:
                    out = out | test
                return out if isinstance(op, ast.In) else out.negated()
    if isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
        for side in (left, right):
            name = _call_name(side) or _dotted(side) or ""
            if "capability" in name or name.endswith(("major", "minor")):
                return CAPABILITY_TEST
    return UNKNOWN


def _value_compare(subject: ast.AST, other: ast.AST, env: Env) -> Optional[Test]:
    """``NAME == <literal>`` where the module sets NAME to literals in the arms of platform
    tests (``env.values``): true where it may hold that literal, false where it may hold another."""
    if not isinstance(subject, ast.Name) or subject.id not in env.values or not isinstance(other, ast.Constant):
        return None
    per = env.values[subject.id]
    wanted = other.value
    true = frozenset(p for p, held in per.items() if any(v == wanted and type(v) is type(wanted) for v in held))
    false = frozenset(p for p, held in per.items() if any(not (v == wanted and type(v) is type(wanted))
                                                         for v in held))
    return Test(true, false)


def _last_name(node: ast.AST) -> Optional[str]:
    """The accelerator's name through a call (DeepSpeed's ``get_accelerator().device_name()``,
    ``._name``), where the whole cannot be spelled. Only those: ``f().type == "cuda"`` stays
    read as the NVIDIA platform, as before (reading it as a GPU of either vendor is right, but
    shows other rules code they were not shown; a change for them to make)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute) and node.attr in ("device_name", "_name", "accelerator_name"):
        return node.attr
    return None


def _product_test(value: str) -> Test:
    """A GPU's product name holds ``value``: NVIDIA's (``Tesla``, ``GeForce``) or AMD's
    (``Radeon``, ``Instinct``)."""
    lowered = value.strip().lower()
    if lowered in _NVIDIA_PRODUCT:
        return IS_CUDA
    if lowered in _AMD_PRODUCT:
        return IS_ROCM
    return UNKNOWN


def _finds_cuda_only_package(node: ast.AST, env: Env) -> bool:
    """``importlib.util.find_spec("deep_gemm")`` (any spelling that ends so) of a package that
    has no ROCm build."""
    if not isinstance(node, ast.Call) or not node.args or _string(node.args[0]) is None:
        return False
    spelled = _dotted(node.func) or ""
    if spelled.rsplit(".", 1)[-1] != "find_spec":
        return False
    root = _string(node.args[0]).split(".", 1)[0]
    return root in CUDA_ONLY_PACKAGES or root in NVIDIA_ONLY_IMPORTS


def _arch_string(value: str) -> bool:
    """A string that names AMD architectures: ``"gfx942"``, ``"gfx94"``, ``"MI300"``, ``"mi35"``."""
    return value.lower().startswith(("gfx", "mi3", "mi2"))


def _strings_in(args) -> Iterable[str]:
    for arg in args:
        if _string(arg) is not None:
            yield _string(arg)
        elif isinstance(arg, (ast.Tuple, ast.List, ast.Set)):
            yield from (s for s in map(_string, arg.elts) if s is not None)


def _call_name(node: ast.AST) -> Optional[str]:
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return None


_SKIP_ON_ROCM = re.compile(r"(?i)^_*skip\w*?_?(?:if|on)_?(?:rocm|hip|amd)$|^_*skip_?(?:rocm|hip|amd)$")


def skips_on_rocm(name: str) -> bool:
    """Does a decorator named ``name`` skip its test on ROCm (torch's ``skipIfRocm``,
    ``skipCUDAIfRocm``, ``skip_if_rocm``, ``skipOnHip``)?"""
    return _SKIP_ON_ROCM.match(name) is not None


# -- a module's own predicates ------------------------------------------------------------

def _returned(fn: ast.AST) -> Optional[ast.AST]:
    """The expression a function returns when its body is one ``return`` (a docstring aside),
    or ``if <test>: return True / return False`` shapes read as that test."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def module_tests(body: Iterable[ast.stmt], env: Env) -> Dict[str, Test]:
    """The predicates a module defines at module level: a name assigned once from a test
    (``_is_cuda = is_cuda()``, ``IS_HIP = torch.version.hip is not None``) and a function
    whose body returns one (``def is_hip(): return torch.version.hip is not None``), in
    order, so a later one may use an earlier one. Fills and returns ``env.tests``. A constant
    flag (``USE_COMPILE = False``: a bool assigned once at module level to a name spelled as a
    constant, named in no ``global`` statement) is a test too: true everywhere or nowhere, so
    code under ``if USE_COMPILE:`` runs nowhere. (``model = None`` is no flag: a local of that
    name would read as it.)"""
    assigned: Dict[str, int] = {}
    statements = list(body)
    for stmt in statements:
        for node in ast.walk(stmt) if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                             ast.ClassDef)) else ():
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                assigned[node.id] = assigned.get(node.id, 0) + 1
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            assigned[stmt.name] = assigned.get(stmt.name, 0) + 1
    rebound: Optional[set] = None  # names a ``global`` statement lets a function rebind
    for stmt in statements:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and assigned.get(targets[0].id) == 1:
                test = classify(stmt.value, env)
                if test.known and test in (ALWAYS, NEVER):
                    name = targets[0].id
                    if not (isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, bool)
                            and name.upper() == name and any(c.isalpha() for c in name)):
                        continue  # a constant flag is a bool in a constant's name (`model = None` is not)
                    if rebound is None:
                        rebound = {name for s in statements for n in ast.walk(s) if isinstance(n, ast.Global)
                                   for name in n.names}
                    if targets[0].id in rebound:
                        continue
                if test.known:
                    env.tests[targets[0].id] = test
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and assigned.get(stmt.name) == 1:
            value = _returned(stmt)
            if value is not None:
                test = classify(value, env)
                if test.known:
                    env.tests[stmt.name] = test
            elif _answers_by_architecture(stmt, env):
                env.tests[stmt.name] = ARCH
    _literal_flags(statements, env)
    return env.tests


# -- names set to literals in the arms of platform tests --------------------------------------

_UNBOUND = object()
_MAYBE = "maybe"  # a block that may or may not run (a loop, the body of ``try``)
_LITERALS = (bool, int, float, str, type(None))


def _module_blocks(body: Iterable[ast.stmt], conds: Tuple, env: Env) -> Iterator[Tuple[ast.stmt, Tuple]]:
    """Each statement that runs at module level, in order, with the conditions it runs under:
    ``(test, True)`` in an ``if``'s body, ``(test, False)`` in its ``else``, ``_MAYBE`` in a
    loop or a ``try``. Definitions are statements; their bodies are not walked."""
    for stmt in body:
        yield stmt, conds
        if isinstance(stmt, ast.If):
            test = classify(stmt.test, env)
            yield from _module_blocks(stmt.body, conds + ((test, True),), env)
            yield from _module_blocks(stmt.orelse, conds + ((test, False),), env)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _module_blocks(stmt.body, conds, env)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            yield from _module_blocks(stmt.body, conds + (_MAYBE,), env)
            yield from _module_blocks(stmt.orelse, conds + (_MAYBE,), env)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            yield from _module_blocks(stmt.body, conds + (_MAYBE,), env)
            for handler in stmt.handlers:
                yield from _module_blocks(handler.body, conds + (_MAYBE,), env)
            yield from _module_blocks(stmt.orelse, conds + (_MAYBE,), env)
            yield from _module_blocks(stmt.finalbody, conds, env)


def _runs(conds: Tuple, platform: str) -> Optional[bool]:
    """True: the statement surely runs on ``platform``; None: it may; False: it cannot."""
    sure = True
    for cond in conds:
        if cond == _MAYBE:
            sure = False
            continue
        test, arm = cond
        taken, other = (test.true, test.false) if arm else (test.false, test.true)
        if platform not in taken:
            return False
        if platform in other:
            sure = False
    return True if sure else None


def _literal_flags(statements: List[ast.stmt], env: Env) -> None:
    """Names that the module sets only to literals, some of them in the arms of platform tests
    (``if is_cuda(): from .ops import f; HAS_F = True`` / ``else: HAS_F = False``, or
    ``BACKEND = "cutlass"`` / ``"triton"``): the literal each may hold on each platform, in
    ``env.values``, and, where it decides, the test ``if NAME:`` is, in ``env.tests``. Read in
    the module's order, as Python runs it (a later assignment on a platform replaces an earlier one)."""
    if not any(isinstance(stmt, (ast.If, ast.Try)) for stmt in statements):
        return  # no arm to set a name in
    blocks = list(_module_blocks(statements, (), env))
    assignments: Dict[str, List[Tuple[object, Tuple]]] = {}
    other: set = set()
    for stmt, conds in blocks:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            literal = isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, _LITERALS)
            for target in targets:
                if isinstance(target, ast.Name) and literal:
                    assignments.setdefault(target.id, []).append((stmt.value.value, conds))
                else:
                    other.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            other.update(bound for bound, _full in import_bindings(stmt))
        else:  # loops, with, augmented assignments, walruses: any other binding of a name
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                heads = [stmt.target, stmt.iter]
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                heads = list(stmt.items)
            elif isinstance(stmt, (ast.If, ast.While)):
                heads = [stmt.test]
            elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                heads = [h.type for h in stmt.handlers if h.type is not None]
                other.update(h.name for h in stmt.handlers if h.name)
            else:
                heads = [stmt]
            for head in heads:
                other.update(n.id for n in ast.walk(head) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))
    candidates = {name: sets for name, sets in assignments.items()
                  if name not in other and name not in env.tests
                  and any(cond != _MAYBE and cond[0].known for _, conds in sets for cond in conds)}
    if not candidates:
        return  # none is set in the arm of a platform test
    # a function that rebinds one (``global NAME``) may set it to anything
    for stmt, _ in blocks:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for node in ast.walk(stmt):
                if isinstance(node, (ast.Global, ast.Nonlocal)):
                    for n in node.names:
                        candidates.pop(n, None)
    platforms = (CUDA, ROCM, CPU, OTHER)
    for name, sets in candidates.items():
        held: Dict[str, set] = {p: {_UNBOUND} for p in platforms}
        for value, conds in sets:
            for p in platforms:
                runs = _runs(conds, p)
                if runs is True:
                    held[p] = {value}
                elif runs is None:
                    held[p].add(value)
        env.values[name] = {p: frozenset(v for v in values if v is not _UNBOUND) for p, values in held.items()}
        true = frozenset(p for p, values in held.items() if any(v is not _UNBOUND and v for v in values))
        false = frozenset(p for p, values in held.items() if any(v is not _UNBOUND and not v for v in values))
        decided = all(cond != _MAYBE and cond[0].decided for _, conds in sets for cond in conds)
        if 0 < len(true) < len(platforms) or 0 < len(false) < len(platforms):  # it tells platforms apart
            env.tests[name] = Test(true, false, decided=decided)



def attribute_tests(tree: ast.AST, env: Env) -> Dict[str, Test]:
    """Flags a class keeps on ``self`` from a platform test (``self.use_fp32_gemm =
    current_platform().is_hopper_plus and ...``), read as that test where ``self.<name>`` is
    a condition (``env.tests["self.<name>"]``). Every assignment of the attribute in the file's
    classes must be such a test (their union is kept); any other store of it leaves it unknown."""
    values: Dict[str, List[ast.AST]] = {}
    other: set = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self" \
                            and not isinstance(sub.ctx, ast.Load):
                        if sub is target and isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                            values.setdefault(sub.attr, []).append(node.value)
                        else:
                            other.add(sub.attr)
    found: Dict[str, Test] = {}
    for name, assigned in values.items():
        if name in other:
            continue
        tests = [classify(value, env) for value in assigned]
        if all(t.known for t in tests):
            out = tests[0]
            for t in tests[1:]:
                out = out | t
            if out.known:
                found[name] = out
                env.tests.setdefault(f"self.{name}", out)
    return found



def _answers_by_architecture(fn: ast.AST, env: Env) -> bool:
    """A function that returns only ``True`` / ``False`` and decides by an architecture test
    (``if torch.version.hip: ... if cap == (9, 4): return True ... return False``): a helper
    such as ``supports_float8_fnuz()``, whatever its name."""
    # ``return`` and ``if`` are statements: only statements are walked (every ``return``,
    # nested functions' too), and the walk ends at the first one that returns something else
    returns: List[ast.Return] = []
    ifs: List[ast.If] = []
    stack: List[ast.stmt] = list(fn.body)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Return:
            value = node.value
            if not (isinstance(value, ast.Constant) and isinstance(value.value, bool)):
                return False
            returns.append(node)
            continue
        if kind is ast.If:
            ifs.append(node)
        for block in ("body", "orelse", "finalbody"):
            stack.extend(getattr(node, block, ()))
        for handler in getattr(node, "handlers", ()):
            stack.extend(handler.body)
        for case in getattr(node, "cases", ()):
            stack.extend(case.body)
    if not any(r.value.value for r in returns):
        return False
    tests = [classify(node.test, env) for node in ifs]
    on_rocm = any(t.true and t.true <= {ROCM} for t in tests)  # its answer is about AMD GPUs
    return on_rocm and any(t.arch for t in tests)



def other_accelerator_name(name: str) -> bool:
    """Does a dotted name speak of another accelerator (``self.xpu_graph``,
    ``torch._C._XPUGraph``, ``torch.npu.NPUGraph``): a word of one of its parts is one?"""
    return any(_OTHER_WORD.search(word) for part in name.split(".") for word in name_words(part))


def other_accelerator_path(path: str) -> bool:
    """A module inside a directory for another accelerator: the per-vendor backend trees of
    operator libraries (``backend/_kunlunxin/ops/mm.py``, ``_mthreads/``, ``npu/``), which a
    vendor registry selects at import, so their code never runs on an AMD GPU."""
    parts = re.split(r"[/\\]", path)[:-1]
    return any(_OTHER_WORD.search(part) for part in parts if part not in ("", ".", ".."))


# -- code for NVIDIA GPUs only ----------------------------------------------------------------

# Packages with no ROCm build: a module that imports one unconditionally cannot load on ROCm,
# so nothing in it runs there (module -> what it is). Packages that ship ROCm builds
# (flash_attn, triton, apex, transformer_engine's ROCm fork) are not here.
CUDA_ONLY_PACKAGES: Dict[str, str] = {
    "flash_attn_interface": "FlashAttention 3, built from flash-attention's hopper/ directory (SM90+ only)",
    "flash_attn_3": "FlashAttention 3's package (SM90+ only)",
    "deep_gemm": "DeepGEMM, FP8 GEMM kernels for SM90 / SM100 only",
    "flash_mla": "FlashMLA, MLA decoding kernels for SM90 / SM100 only",
    "pycuda": "PyCUDA, bindings to NVIDIA's CUDA driver",
    "tensorrt": "TensorRT, NVIDIA's inference runtime",
    "torch_tensorrt": "Torch-TensorRT, NVIDIA's TensorRT backend for torch",
    # a dotted name: a module of a package that itself has ROCm builds
    "triton.language.extra.tlx": "TLX, Triton's low-level extension for NVIDIA Hopper and Blackwell warp"
                                 " specialisation (Meta's Triton; not in ROCm's Triton)",
}


def cuda_only_package(module: str) -> Optional[str]:
    """The entry of ``CUDA_ONLY_PACKAGES`` that an imported module ``module`` is (the package
    itself or one of its modules), or None."""
    for name in CUDA_ONLY_PACKAGES:
        if module == name or module.startswith(name + "."):
            return name
    return None


# Packages with no ROCm build that ROC704 leaves to the CUDA-only closure of the project
# (ROC707: an NVIDIA-only module imports them on purpose; reporting each import there tells an
# NVIDIA-only component that it is NVIDIA-only): a module that imports one unconditionally is
# still code for NVIDIA GPUs only (``gates.nvidia_only``).
NVIDIA_ONLY_IMPORTS: Dict[str, str] = {
    "cutlass": "the CUTLASS / CuTe DSL (nvidia-cutlass-dsl), for NVIDIA GPUs only",
    "cuda": "cuda-python (cuda.bindings, cuda.core, cuda.tile), bindings to NVIDIA's driver and runtime",
}

# ROCm packages whose kernels are built for some AMD architectures only (module -> what it
# is): importing one succeeds on every AMD GPU, so an import alone is no test that its kernels
# run on the GPU at hand.
ARCH_LIMITED_PACKAGES: Dict[str, str] = {
    "aiter": "AITER, AMD's kernel library, built for CDNA3 / CDNA4 (MI300 gfx942, MI350 gfx950) only",
}

# Words of a function's or class's name that say it is for an NVIDIA-only feature: Hopper and
# Blackwell instructions (TMA, WGMMA, tcgen05), SM generations, NVFP4, and NVIDIA-only kernel
# libraries. A name is split into words first (``HopperAttention``, ``fp8_gemm_sm90``).
_NVIDIA_FEATURE_WORD = re.compile(
    r"^(?:fa3|tma|wgmma|hopper|blackwell|tcgen05|sm_?(?:9\d|1[0-2]\d)a?|nvfp4|cutlass|cute|flashinfer|trtllm"
    r"|tensorrt|deepgemm|flashmla|nvidia|nvshmem|marlin|machete)$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")  # FP8GemmSM90, NVIDIAModelOpt


def name_words(name: str) -> Iterable[str]:
    """The words of an identifier, lower case: ``FP8GemmSM90`` -> fp8, gemm, sm90."""
    return (word for word in _CAMEL.sub("_", name).lower().split("_") if word)


def nvidia_feature_word(name: str) -> Optional[str]:
    """The word of ``name`` that names an NVIDIA-only feature (``sm90``, ``nvfp4``, ``hopper``,
    ``cutlass``), or None."""
    return next((word for word in name_words(name) if _NVIDIA_FEATURE_WORD.match(word)), None)


def module_env(tree: ast.Module, index, path: Optional[str]) -> Env:
    """What a module's names mean as platform tests before its own predicates are read
    (``platforms.module_tests``): its module-level imports (relative ones made absolute through
    the project ``index``; without it, left out) and the index's predicates of other modules."""
    own = index.module_name(path) if index is not None and path else None

    def absolute(module, level):
        return index.absolute(own, module, level) if own else None

    return Env(module_imports(tree.body, absolute), {}, index.platform_test if index is not None else None)
