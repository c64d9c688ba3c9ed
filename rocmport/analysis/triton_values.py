"""Where a Triton kernel's launch values come from, on CPython's tree (facts, never findings).

The question ROC513 asks: is the value a launch hands to a kernel's ``tl.constexpr`` a power
of two, a value decided at run time, or unknown? Answered from one module's ``ast`` (the
linted file's own tree, or another module of the project through the index), so the same
answers serve a kernel launched in its own file and one launched from another module.

- :class:`ModuleValues` reads one module: its launches (``kernel[grid](...)``,
  ``wrap_triton(kernel)[grid](...)``, ``run = kernel[grid]; run(...)``), each argument mapped
  by position (up to the first ``*args``) or keyword (also the keys of a ``**config`` dict it
  can read), and classifies each value with :meth:`ModuleValues.classify`.
- A value is :data:`POW2` (a power-of-two literal, ``triton.next_power_of_2(x)``,
  ``max(next_pow2, c)``, ``1 << k``, a product of those, or a name checked by an ``assert`` /
  ``if ...: raise`` that tests for a power of two), :data:`RUNTIME` (a tensor's shape, a
  parameter of the launching function whose callers in the module pass run-time values or
  that has none, an attribute of a run-time object, arithmetic on those, a value of a dict
  that a helper returns), :data:`CONST` (another integer literal: it fails on every run, so
  nobody ships it) or :data:`UNKNOWN`. Names are followed through the assignments that reach
  the launch (the last one in straight-line code, and those in branches after it), through
  the callers of the launching function in the same module, through ``self.x`` / ``ctx.x``
  assignments of the class, through dicts built in the function or returned by a helper of
  the module or of the project.

Bounded everywhere (depth, one walk per function); an unknown answer is UNKNOWN, never a guess.
"""

from __future__ import annotations

import ast
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from .bindings import dotted, import_bindings, module_imports

POW2, RUNTIME, CONST, UNKNOWN = "pow2", "runtime", "const", "unknown"

# Names of helpers that round up to a power of two (triton.next_power_of_2 and the usual
# project spellings), and of tests that check for one.
POW2_FUNCTION = re.compile(r"(?i)(?:next_?pow(?:er)?_?(?:of_?)?(?:2|two)|pow(?:er)?_?of_?(?:2|two)|pow2|"
                           r"round_?up_?(?:to_?)?pow|bit_ceil|closest_power)")
POW2_TEST = re.compile(r"(?i)(?:pow(?:er)?[ _-]?(?:of)?[ _-]?(?:2|two)\b|pow2|log2|is_power)")
# Parameter and attribute names that are tuning knobs, not model sizes (their callers pass
# tile sizes): no finding comes from them alone.
TILE_NAME = re.compile(r"(?i)(?:block|tile|blk|warp|stage|pow|p2|aligned|padded|split|chunk|^bs$|^b[mnkd]$|"
                       r"^num_?(?:ctas|programs)$)")
KV_CACHE_NAME = re.compile(r"(?i)cache|page|kv_?block")
SHAPE_METHODS = frozenset({"size", "numel", "dim", "stride", "nelement", "ndimension"})
# A dtype's size in bytes (1, 2, 4, 8, 16): a power of two on every dtype.
BYTE_SIZES = frozenset({"itemsize", "element_size", "primitive_bitwidth"})
SHAPE_ATTRIBUTES = frozenset({"shape", "ndim"})
VALUE_METHODS = frozenset({"item", "tolist"})
DEVICE_ATTRIBUTES = frozenset({"multi_processor_count", "max_shared_memory", "warp_size", "num_sms"})
CDIV = re.compile(r"(?i)(?:cdiv|ceil|round_up|div_up|align)")
WRAPPERS = frozenset({"wrap_triton", "capture_triton"})  # torch.library.wrap_triton(kernel)[grid](...)
# Launch keywords that are Triton's own options, not kernel parameters.
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "waves_per_eu", "matrix_instr_nonkdim", "kpack",
                            "grid", "warmup", "stream", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                            "debug", "extern_libs", "device"})
_MAX_DEPTH = 6


@dataclass(frozen=True)
class Value:
    """What is known of one value: its kind, and for a run-time value where it comes from."""

    kind: str
    why: str = ""  # RUNTIME: "a parameter of `f`", "a tensor's shape (`x.shape[0]`)", ...
    # RUNTIME: the name the quantity has where it is computed or received (the target of the
    # last assignment that computes it, not of an alias; a parameter; an attribute), and
    # whether it is a dimension of a KV cache (read from a tensor or object named for one)
    subject: str = ""
    cache: bool = False

    @property
    def runtime(self) -> bool:
        return self.kind == RUNTIME

    def named(self, subject: str) -> "Value":
        return Value(self.kind, self.why, subject, self.cache) if self.kind == RUNTIME else self


_POW2 = Value(POW2)
_CONST = Value(CONST)
_UNKNOWN = Value(UNKNOWN)


def combine(values: Sequence[Value]) -> Value:
    """One value for several that may reach a point: run-time when one is, a power of two
    when all are, else unknown."""
    for value in values:
        if value.kind == RUNTIME:
            return value
    if values and all(v.kind == POW2 for v in values):
        return _POW2
    return _UNKNOWN


@dataclass
class LaunchFact:
    """One launch of a kernel: the values it passes, by position and by keyword."""

    kernel: str  # the dotted name the launched callee resolves to (absolute where known)
    line: int
    function: str  # the launching function ("" at module level)
    positional: List[Tuple[Value, str]] = field(default_factory=list)  # (value, source text), before any *args
    keywords: Dict[str, Tuple[Value, str]] = field(default_factory=dict)
    opaque: bool = False  # a **splat it could not read: any parameter may be passed there

    def value_of(self, param: str, position: Optional[int]) -> Optional[Tuple[Value, str]]:
        if param in self.keywords:
            return self.keywords[param]
        if position is not None and position < len(self.positional):
            return self.positional[position]
        return None

    def digest(self) -> str:
        return repr((self.kernel, self.line, self.function, [(v.kind, v.why, t) for v, t in self.positional],
                     sorted((k, v.kind, v.why, t) for k, (v, t) in self.keywords.items()), self.opaque))


def _text(node: ast.AST, limit: int = 60) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every expression
        return "?"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_pow2(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0 and value & (value - 1) == 0


def int_literal(node: Optional[ast.AST]) -> Optional[int]:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def literal_value(node: ast.AST) -> Value:
    value = int_literal(node)
    if value is None:
        return _UNKNOWN
    return _POW2 if is_pow2(value) else _CONST


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def pow2_shaped(test: ast.AST, msg: Optional[ast.AST] = None) -> bool:
    """Does a condition (or its message) test for a power of two: ``x & (x - 1) == 0``,
    ``is_power_of_2(x)``, ``next_power_of_2(x) == x``, ``math.log2(x).is_integer()``,
    ``x in (16, 32, 64)``, ``x == 8``, ``bin(x).count("1") == 1``, or a message that says so?"""
    if isinstance(msg, ast.Constant) and isinstance(msg.value, str) and POW2_TEST.search(msg.value):
        return True
    if isinstance(msg, ast.JoinedStr) and any(isinstance(v, ast.Constant) and isinstance(v.value, str)
                                              and POW2_TEST.search(v.value) for v in msg.values):
        return True
    for node in ast.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
            for side in (node.left, node.right):
                if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Sub) and int_literal(side.right) == 1:
                    return True
        elif isinstance(node, ast.Call):
            name = _last_name(node.func)
            if POW2_FUNCTION.search(name) or POW2_TEST.search(name):
                return True
            if name == "count" and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call) \
                    and _last_name(node.func.value.func) == "bin":
                return True
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) \
                and (is_pow2(int_literal(node.comparators[0])) or is_pow2(int_literal(node.left))):
            return True  # assert top_k == 8: one value, a power of two
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            options = node.comparators[0]
            if isinstance(options, (ast.Tuple, ast.List, ast.Set)) and options.elts \
                    and all(is_pow2(int_literal(e)) for e in options.elts):
                return True
    return False


def _names(node: ast.AST) -> Set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _raises(body: Sequence[ast.stmt]) -> bool:
    return any(isinstance(stmt, ast.Raise) for stmt in body)


def pow2_checks(tree: ast.AST, word: str) -> List[int]:
    """Lines of the ``assert`` / ``if ...: raise`` statements of a module that check a name
    spelling ``word`` (``kernel_block_size`` for "block_size") for a power of two."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            test, msg = node.test, node.msg
        elif isinstance(node, ast.If) and _raises(node.body):
            test, msg = node.test, _raise_message(node.body)
        else:
            continue
        spelled = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
        spelled |= {n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)}
        if any(word in name.lower() for name in spelled) and pow2_shaped(test, msg):
            lines.append(node.lineno)
    return lines


# -- one module -------------------------------------------------------------------------------

_AUTOGRAD_FUNCTION = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
_Scope = Optional[ast.AST]  # a FunctionDef / AsyncFunctionDef / Lambda, or None for the module


class ModuleValues:
    """Launches and value provenance in one module (CPython's tree). ``absolute`` maps a
    relative import to its absolute module; ``project`` (optional) answers for other modules:
    ``project.constant(dotted)`` -> (True, value) or None, ``project.function(dotted)`` ->
    (ModuleValues, FunctionDef) or None."""

    def __init__(self, tree: ast.AST, module: str, absolute: Optional[Callable] = None, project=None) -> None:
        self.tree = tree
        self.module = module
        self.project = project
        body = getattr(tree, "body", [])
        self.imports: Dict[str, str] = module_imports(body, absolute)
        self.functions: Dict[str, ast.AST] = {}
        self.classes: Dict[str, ast.ClassDef] = {}
        self.constants: Dict[str, ast.AST] = {}
        counts: Dict[str, int] = {}
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and getattr(stmt, "value", None) is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        counts[target.id] = counts.get(target.id, 0) + 1
                        self.constants[target.id] = stmt.value
        for name, count in counts.items():
            if count != 1:
                self.constants.pop(name, None)
        self._parents: Optional[Dict[int, ast.AST]] = None
        self._defs: Dict[int, Dict[str, List[Tuple[ast.AST, Tuple, int]]]] = {}
        self._paths: Dict[int, Tuple] = {}
        self._calls: Optional[Dict[str, List[ast.Call]]] = None
        self._checked: Dict[Tuple[int, str], bool] = {}
        self._launches: Optional[List[LaunchFact]] = None
        self._bound: Dict[int, Tuple[ast.Call, "ModuleValues"]] = {}  # helper -> the call being read

    # -- tree helpers ------------------------------------------------------------------------
    @property
    def parents(self) -> Dict[int, ast.AST]:
        if self._parents is None:
            parents: Dict[int, ast.AST] = {}
            for node in ast.walk(self.tree):
                for child in ast.iter_child_nodes(node):
                    parents[id(child)] = node
            self._parents = parents
        return self._parents

    def scope_of(self, node: ast.AST) -> _Scope:
        current = self.parents.get(id(node))
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return current
            current = self.parents.get(id(current))
        return None

    def class_of(self, func: ast.AST) -> Optional[ast.ClassDef]:
        parent = self.parents.get(id(func))
        return parent if isinstance(parent, ast.ClassDef) else None

    def statement_of(self, node: ast.AST) -> ast.AST:
        current = node
        while current is not None and not isinstance(current, ast.stmt):
            current = self.parents.get(id(current))
        return current if current is not None else node

    def resolve(self, node: ast.AST) -> Optional[str]:
        """The absolute dotted name a name or attribute chain spells through the imports (or
        this module's own top-level definitions)."""
        spelled = dotted(node)
        if spelled is None:
            return None
        root, _, rest = spelled.partition(".")
        if root in self.imports:
            full = self.imports[root]
            return f"{full}.{rest}" if rest else full
        if root in self.functions or root in self.classes or root in self.constants:
            return f"{self.module}.{spelled}"
        return None

    # -- launches --------------------------------------------------------------------------
    def launches(self) -> List[LaunchFact]:
        """Every ``K[grid](...)`` launch whose callee resolves to a dotted name."""
        if self._launches is None:
            self._launches = []
            bound: Dict[Tuple[int, str], str] = {}  # (scope, name) -> kernel, for ``run = K[grid]``
            subscripts: List[Tuple[ast.AST, ast.Subscript]] = []
            calls: List[ast.Call] = []
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Call):
                    calls.append(node)
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                        and isinstance(node.value, ast.Subscript):
                    subscripts.append((node.targets[0], node.value))
            for target, sub in subscripts:
                kernel = self._kernel_of(sub.value)
                if kernel is not None:
                    bound[(id(self.scope_of(sub)), target.id)] = kernel
            for call in calls:
                func = call.func
                kernel = None
                if isinstance(func, ast.Subscript):
                    kernel = self._kernel_of(func.value)
                elif isinstance(func, ast.Name) and bound:
                    kernel = bound.get((id(self.scope_of(call)), func.id))
                if kernel is not None:
                    self._launches.append(self._launch(call, kernel))
        return self._launches

    def _kernel_of(self, node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Call) and node.args and _last_name(node.func) in WRAPPERS:
            node = node.args[0]
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.resolve(node)
        return None

    def _launch(self, call: ast.Call, kernel: str) -> LaunchFact:
        scope = self.scope_of(call)
        name = getattr(scope, "name", "") if scope is not None else ""
        fact = LaunchFact(kernel, call.lineno, name)
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                break
            fact.positional.append((self.classify(arg, call), _text(arg)))
        for keyword in call.keywords:
            if keyword.arg is None:
                items = self.dict_items(keyword.value, call, 0)
                if items is None:
                    fact.opaque = True
                    continue
                for key, (value, text) in items.items():
                    fact.keywords.setdefault(key, (value, text))
            elif keyword.arg not in LAUNCH_OPTIONS:
                fact.keywords[keyword.arg] = (self.classify(keyword.value, call), _text(keyword.value))
        return fact

    # -- the values --------------------------------------------------------------------------
    def classify(self, expr: ast.AST, at: ast.AST, depth: int = 0) -> Value:
        """What ``expr`` (read where ``at`` is) is: POW2, RUNTIME (with why), CONST or UNKNOWN."""
        if depth > _MAX_DEPTH:
            return _UNKNOWN
        kind = type(expr)
        if kind is ast.Constant:
            return literal_value(expr)
        if kind is ast.Name:
            return self._name(expr.id, at, depth)
        if kind is ast.Attribute:
            return self._attribute(expr, at, depth)
        if kind is ast.Subscript:
            return self._subscript(expr, at, depth)
        if kind is ast.Call:
            return self._call(expr, at, depth)
        if kind is ast.BinOp:
            return self._binop(expr, at, depth)
        if kind is ast.IfExp:
            return combine([self.classify(expr.body, at, depth + 1), self.classify(expr.orelse, at, depth + 1)])
        if kind is ast.BoolOp:
            return combine([self.classify(v, at, depth + 1) for v in expr.values])
        if kind is ast.NamedExpr:
            return self.classify(expr.value, at, depth + 1)
        return _UNKNOWN

    def _binop(self, expr: ast.BinOp, at: ast.AST, depth: int) -> Value:
        op = type(expr.op)
        if op is ast.Pow and int_literal(expr.left) == 2:
            return _POW2
        left = self.classify(expr.left, at, depth + 1)
        if op is ast.LShift and left.kind == POW2:
            return _POW2
        right = self.classify(expr.right, at, depth + 1)
        if op in (ast.Mult, ast.FloorDiv, ast.Div) and left.kind == POW2 and right.kind == POW2:
            return _POW2
        for side in (left, right):
            if side.runtime:
                return side
        return _UNKNOWN

    def _call(self, call: ast.Call, at: ast.AST, depth: int) -> Value:
        func = call.func
        name = _last_name(func)
        if POW2_FUNCTION.search(name):
            return _POW2
        if isinstance(func, ast.Attribute):
            if name in BYTE_SIZES:
                return _POW2
            if name in SHAPE_METHODS:
                return _shape(call, func.value)
            if name in VALUE_METHODS:
                return Value(RUNTIME, f"a tensor's value (`{_text(call)}`)")
            if name == "get" and call.args and isinstance(call.args[0], ast.Constant) \
                    and isinstance(call.args[0].value, str):
                found = self.dict_value(func.value, call.args[0].value, at, depth + 1)
                if found is not None:
                    return found
                return _UNKNOWN
        if isinstance(func, ast.Name):
            if name == "len" and call.args:
                return Value(RUNTIME, f"a length (`{_text(call)}`)")
            if name in ("int", "operator.index") and len(call.args) == 1:
                return self.classify(call.args[0], at, depth + 1)
            if name in ("max", "min") and call.args and not any(isinstance(a, ast.Starred) for a in call.args):
                return combine([self.classify(a, at, depth + 1) for a in call.args])
        if CDIV.search(name):
            for arg in call.args:
                value = self.classify(arg, at, depth + 1)
                if value.runtime:
                    return value
            return _UNKNOWN
        returned = self.returns(func, at)
        if returned is not None:
            owner, target = returned
            with owner.bound(target, call, self):
                values = [owner.classify(r, r, depth + 1) for r in _return_values(target)]
            if values:
                value = combine(values)
                return value if value.kind != UNKNOWN else _UNKNOWN
        return _UNKNOWN

    @contextmanager
    def bound(self, func: ast.AST, call: ast.Call, caller: "ModuleValues"):
        """While a helper's returns are read for one call, its parameters stand for that
        call's arguments (read in the caller's module)."""
        previous = self._bound.get(id(func))
        self._bound[id(func)] = (call, caller)
        try:
            yield
        finally:
            if previous is None:
                self._bound.pop(id(func), None)
            else:
                self._bound[id(func)] = previous

    def returns(self, func: ast.AST, at: ast.AST) -> Optional[Tuple["ModuleValues", ast.AST]]:
        """The function a callee names: a function of this module or of the project."""
        if isinstance(func, ast.Name) and func.id in self.functions and func.id not in self.imports:
            return self, self.functions[func.id]
        full = self.resolve(func)
        if full is None or self.project is None or full.split(".", 1)[0] in ("torch", "triton", "math", "builtins"):
            return None
        return self.project.function(full)

    def _attribute(self, expr: ast.Attribute, at: ast.AST, depth: int) -> Value:
        attr = expr.attr
        if attr in BYTE_SIZES:
            return _POW2
        if attr in SHAPE_ATTRIBUTES:
            return _shape(expr, expr.value)
        if attr in DEVICE_ATTRIBUTES:
            return Value(RUNTIME, f"a device property (`{_text(expr)}`)")
        root = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            return _UNKNOWN
        full = self.resolve(expr)
        if full is not None and root.id in self.imports:
            if self.project is not None:
                found = self.project.constant(full)
                if found is not None:
                    return literal_value(ast.Constant(found[1]))
            return _UNKNOWN
        scope = self.scope_of(at) if not isinstance(at, (ast.FunctionDef, ast.AsyncFunctionDef)) else at
        # self.x / ctx.x: what the class's methods assign to that attribute
        if isinstance(expr.value, ast.Name) and scope is not None and not isinstance(scope, ast.Lambda):
            first = _first_param(scope)
            if first is not None and expr.value.id == first:
                cls = self.class_of(scope)
                if cls is not None:
                    values = [self.classify(value, value, depth + 1) for value in _attribute_writes(cls, attr)]
                    if values:
                        found = combine(values)
                        return found if found.subject else found.named(attr)
                return _UNKNOWN
        if TILE_NAME.search(attr) and not (KV_CACHE_NAME.search(attr) or KV_CACHE_NAME.search(_text(expr.value))):
            return _UNKNOWN
        if root.id in _params(scope) or root.id in self._assigned(scope):
            return Value(RUNTIME, f"an attribute of a run-time object (`{_text(expr)}`)", attr,
                         bool(KV_CACHE_NAME.search(_text(expr.value))))
        return _UNKNOWN

    def _subscript(self, expr: ast.Subscript, at: ast.AST, depth: int) -> Value:
        base = expr.value
        if isinstance(base, ast.Attribute) and base.attr in SHAPE_ATTRIBUTES:
            return _shape(expr, base.value)
        if isinstance(base, ast.Call) and _last_name(base.func) in SHAPE_METHODS \
                and isinstance(base.func, ast.Attribute):
            return _shape(expr, base.func.value)
        key = expr.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found = self.dict_value(base, key.value, at, depth + 1)
            if found is not None:
                return found
        return _UNKNOWN

    # -- names -------------------------------------------------------------------------------
    def _name(self, name: str, at: ast.AST, depth: int) -> Value:
        scope = self.scope_of(at) if not isinstance(at, (ast.FunctionDef, ast.AsyncFunctionDef)) else at
        while True:
            if self.checked(scope, name):
                return _POW2
            reaching, entry = self.reaching(scope, name, at)
            values = [self._definition(d, depth) for d in reaching]
            if entry:
                if name in _params(scope):
                    values.append(self._param(scope, name, depth))
                elif scope is not None and name in self._assigned(scope):
                    values.append(_UNKNOWN)  # bound later (a loop) or in a way not followed
                elif scope is not None:
                    at, scope = scope, self.scope_of(scope)  # a closure's or the module's name
                    continue
                else:
                    values.append(self._global(name, depth))
            return combine(values) if values else _UNKNOWN

    def _global(self, name: str, depth: int) -> Value:
        if name in self.constants:
            return self.classify(self.constants[name], self.constants[name], depth + 1)
        if name in self.imports and self.project is not None:
            found = self.project.constant(self.imports[name])
            if found is not None:
                return literal_value(ast.Constant(found[1]))
        return _UNKNOWN

    def _definition(self, definition: Tuple[ast.AST, Tuple, int], depth: int) -> Value:
        node, _, index = definition
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            if index < 0:
                found = self.classify(value, node, depth + 1)
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if found.runtime and not isinstance(value, ast.Name) and isinstance(target, ast.Name):
                    return found.named(target.id)  # computed here: the quantity is called so
                return found
            name = _unpacked_name(node, index)
            if isinstance(value, (ast.Tuple, ast.List)) and index < len(value.elts) \
                    and not any(isinstance(e, ast.Starred) for e in value.elts):
                return self.classify(value.elts[index], node, depth + 1)
            unpacked = self.classify(value, node, depth + 1)
            if unpacked.runtime and "shape" in unpacked.why:
                return unpacked.named(name)  # a, b = x.shape
            return _UNKNOWN
        if isinstance(node, ast.AugAssign):
            value = self.classify(node.value, node, depth + 1)
            target = node.target
            previous = self._name(target.id, node, depth + 1) if isinstance(target, ast.Name) else _UNKNOWN
            if isinstance(node.op, (ast.Mult, ast.FloorDiv)) and previous.kind == POW2 and value.kind == POW2:
                return _POW2
            if isinstance(node.op, ast.LShift) and previous.kind == POW2:
                return _POW2
            return value if value.runtime else previous if previous.runtime else _UNKNOWN
        if isinstance(node, (ast.For, ast.comprehension)):
            items = node.iter
            if isinstance(items, (ast.Tuple, ast.List, ast.Set)) and items.elts:
                return combine([literal_value(e) for e in items.elts])
            return _UNKNOWN
        return _UNKNOWN

    def _param(self, func: ast.AST, name: str, depth: int) -> Value:
        """A parameter of the function a value is read in: what its callers in the module pass,
        else a run-time value unless it is a tuning knob (a tile-like name, a power-of-two
        default)."""
        if isinstance(func, ast.Lambda):
            return _UNKNOWN
        args = func.args
        ordered = [a.arg for a in args.posonlyargs + args.args]
        if ordered and ordered[0] in ("self", "cls") and name == ordered[0]:
            return _UNKNOWN
        default = _default(func, name)
        binding = self._bound.get(id(func))
        if binding is not None:  # read for one call: its argument
            call, caller = binding
            passed = _argument(call, ordered, name)
            if passed is None:
                return literal_value(default) if default is not None else _UNKNOWN
            value = caller.classify(passed, call, depth + 1)
            return value if value.subject or not value.runtime else value.named(name)
        callers = self.callers(func)
        if callers:
            values = []
            method = self.class_of(func) is not None
            for call in callers:
                passed = _argument(call, ordered[1:] if method and ordered and ordered[0] in ("self", "cls", "ctx")
                                   else ordered, name)
                if passed is None:
                    values.append(literal_value(default) if default is not None else _UNKNOWN)
                else:
                    value = self.classify(passed, call, depth + 1)
                    if value.runtime:
                        return value if value.subject else value.named(name)
                    values.append(value)
            return combine(values) if values else _UNKNOWN
        if TILE_NAME.search(name) and not KV_CACHE_NAME.search(name):
            return _UNKNOWN
        if default is not None and not (isinstance(default, ast.Constant) and default.value is None):
            value = literal_value(default)
            if value.kind == POW2 or value.kind == UNKNOWN:
                return _UNKNOWN  # a knob with a power-of-two (or computed) default
        elif default is not None:
            return _UNKNOWN  # None: filled in below, or a knob
        if _annotation_says_not_int(func, name):
            return _UNKNOWN
        return Value(RUNTIME, f"a parameter of `{func.name}`", name)

    def callers(self, func: ast.AST) -> List[ast.Call]:
        """Calls of a module-level function (``f(...)``) or a method (``self.f(...)``) in this
        module."""
        if self._calls is None:
            self._calls = {}
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Call):
                    key = node.func.id if isinstance(node.func, ast.Name) else (
                        "self." + node.func.attr if isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id in ("self", "cls") else None)
                    if key is not None:
                        self._calls.setdefault(key, []).append(node)
        name = getattr(func, "name", None)
        if name is None:
            return []
        if self.class_of(func) is not None:
            return self._calls.get("self." + name, [])
        if self.functions.get(name) is func:
            return self._calls.get(name, [])
        return []

    def checked(self, scope: _Scope, name: str) -> bool:
        """Does the function (or module) assert that ``name`` is a power of two -- or, for the
        backward of an op, does its forward (``_checked_by_forward``)?"""
        key = (id(scope), name)
        found = self._checked.get(key)
        if found is None:
            self._checked[key] = False  # a cycle of forwards reads False
            found = False
            body = getattr(scope, "body", None) if scope is not None else getattr(self.tree, "body", [])
            if isinstance(body, list):
                for node in _statements(body):
                    if isinstance(node, ast.Assert) and name in _names(node.test) and pow2_shaped(node.test, node.msg):
                        found = True
                        break
                    if isinstance(node, ast.If) and name in _names(node.test) and _raises(node.body) \
                            and pow2_shaped(node.test, _raise_message(node.body)):
                        found = True
                        break
            if not found:
                found = self._checked_by_forward(scope, name)
            self._checked[key] = found
        return found

    def _checked_by_forward(self, scope: _Scope, name: str) -> bool:
        """Is ``name`` a dimension of a tensor parameter (``B, D, T = K.size()``,
        ``D = K.shape[1]``) of a function that only the ``backward`` of this module's
        ``torch.autograd.Function`` classes call, whose ``forward`` calls a function of the
        module that checks the same dimension of its parameter of the same name for a power
        of two, each handed the same name (the backward's from ``ctx.saved_tensors``)? The
        backward gets the tensors the forward saved, so the forward's check holds there
        (FBGEMM's ``jagged_dense_flash_attention_fwd`` / ``_bwd``)."""
        source = self._shape_source(scope, name)
        if source is None:
            return False
        callers = self.callers(scope)
        if not callers:
            return False
        for call in callers:
            method = self.scope_of(call)
            cls = self.class_of(method) if method is not None else None
            if cls is None or getattr(method, "name", "") != "backward" \
                    or not any((self.resolve(base) or "") in _AUTOGRAD_FUNCTION for base in cls.bases):
                return False
            forward = next((item for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and item.name == "forward"), None)
            passed = _argument(call, _ordered(scope), source[0])
            if forward is None or not isinstance(passed, ast.Name):
                return False
            if not any(self._checks_in_forward(node, passed.id, source, scope) for node in ast.walk(forward)):
                return False
        return True

    def _checks_in_forward(self, call: ast.AST, tensor: str, source: Tuple[str, int], backward: ast.AST) -> bool:
        """Is ``call`` (in a forward) a call of a function of the module that is handed the
        tensor ``tensor`` (the name the backward hands its launcher too) as its parameter
        ``source[0]`` and checks dimension ``source[1]`` of it for a power of two?"""
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            return False
        helper = self.functions.get(call.func.id)
        if helper is None or helper is backward:
            return False
        passed = _argument(call, _ordered(helper), source[0])
        if not isinstance(passed, ast.Name) or passed.id != tensor:
            return False
        return any(self._shape_source(helper, name) == source and self.checked(helper, name)
                   for name in self._definitions(helper))

    def _shape_source(self, scope: _Scope, name: str) -> Optional[Tuple[str, int]]:
        """(tensor parameter, dimension) when ``name``'s one binding in the function reads a
        dimension of one of its parameters: ``a, name, b = x.size()`` / ``x.shape``,
        ``name = x.size(1)`` / ``x.shape[1]``; else None."""
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        definitions = self._definitions(scope).get(name, [])
        if len(definitions) != 1 or not isinstance(definitions[0][0], ast.Assign):
            return None
        node, _, index = definitions[0]
        value, tensor, dim = node.value, None, None
        if index >= 0:
            tensor, dim = _whole_shape(value), index
        elif index == -1:
            if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Attribute) \
                    and value.value.attr == "shape":
                tensor, dim = value.value.value, int_literal(value.slice)
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and value.func.attr == "size" and len(value.args) == 1 and not value.keywords:
                tensor, dim = value.func.value, int_literal(value.args[0])
        if not isinstance(tensor, ast.Name) or dim is None or dim < 0 or tensor.id not in _params(scope):
            return None
        return tensor.id, dim

    def _assigned(self, scope: _Scope) -> Set[str]:
        return set(self._definitions(scope))

    def _definitions(self, scope: _Scope) -> Dict[str, List[Tuple[ast.AST, Tuple, int]]]:
        """name -> (binding statement, its block path, unpack index or -1) for every binding
        in the function's own body (not nested functions), in source order."""
        key = id(scope)
        found = self._defs.get(key)
        if found is not None:
            return found
        found = {}
        body = getattr(scope, "body", None) if scope is not None else getattr(self.tree, "body", [])
        if not isinstance(body, list):
            self._defs[key] = found
            return found

        def bind(target: ast.AST, node: ast.AST, path: Tuple, index: int = -1) -> None:
            if isinstance(target, ast.Name):
                found.setdefault(target.id, []).append((node, path, index))
            elif isinstance(target, (ast.Tuple, ast.List)):
                for i, element in enumerate(target.elts):
                    bind(element.value if isinstance(element, ast.Starred) else element, node, path,
                         -2 if isinstance(element, ast.Starred) else i)

        def visit(stmts: Sequence[ast.stmt], path: Tuple) -> None:
            for stmt in stmts:
                self._paths[id(stmt)] = path
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    found.setdefault(stmt.name, []).append((stmt, path, -3))
                    continue
                if isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        bind(target, stmt, path)
                elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and getattr(stmt, "value", None) is not None:
                    bind(stmt.target, stmt, path)
                elif isinstance(stmt, (ast.For, ast.AsyncFor)):
                    bind(stmt.target, stmt, path + ((id(stmt), "body"),))
                elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    for bound, _full in import_bindings(stmt):  # the resolver's one answer
                        found.setdefault(bound, []).append((stmt, path, -3))
                elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                    for item in stmt.items:
                        if item.optional_vars is not None:
                            bind(item.optional_vars, stmt, path)
                for node in ast.walk(stmt) if not isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While,
                                                                    ast.With, ast.AsyncWith, ast.Try)) else ():
                    if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                        found.setdefault(node.target.id, []).append((node, path, -3))
                for attr in ("body", "orelse", "finalbody"):
                    inner = getattr(stmt, attr, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                        visit(inner, path + ((id(stmt), attr),))
                for i, handler in enumerate(getattr(stmt, "handlers", ()) or ()):
                    if handler.name:
                        found.setdefault(handler.name, []).append((handler, path, -3))
                    visit(handler.body, path + ((id(stmt), f"handler{i}"),))
                for i, case in enumerate(getattr(stmt, "cases", ()) or ()):
                    visit(case.body, path + ((id(stmt), f"case{i}"),))

        visit(body, ())
        self._defs[key] = found
        return found

    def reaching(self, scope: _Scope, name: str, at: ast.AST) -> Tuple[List[Tuple[ast.AST, Tuple, int]], bool]:
        """The bindings of ``name`` in ``scope`` that may reach ``at``: the last one before it
        in a block that holds it, and those after that in other blocks; and whether the value
        from before the function (a parameter, a global) may reach too."""
        definitions = self._definitions(scope).get(name, [])
        statement = self.statement_of(at)
        path = self._path_of(statement, scope)
        line = getattr(statement, "lineno", 0)
        reaching: List[Tuple[ast.AST, Tuple, int]] = []
        entry = True
        for definition in definitions:
            node, def_path, _ = definition
            loop = isinstance(node, (ast.For, ast.AsyncFor))
            if loop and _holds(node, statement):
                reaching, entry = [definition], False  # the loop's target, inside the loop
                continue
            if node is statement or getattr(node, "lineno", 0) >= line:
                continue  # after the read (a loop's back edge is not followed)
            if not loop and path is not None and def_path == path[:len(def_path)]:
                reaching, entry = [definition], False  # straight-line before the read: it kills the others
            else:
                reaching.append(definition)  # in a branch (or a finished loop): it may reach
        return reaching, entry

    def _path_of(self, statement: ast.AST, scope: _Scope) -> Optional[Tuple]:
        self._definitions(scope)
        found = self._paths.get(id(statement))
        if found is not None:
            return found
        # a statement inside a nested block not visited (an expression statement's parent)
        current = self.parents.get(id(statement))
        while current is not None and id(current) not in self._paths:
            current = self.parents.get(id(current))
        return self._paths.get(id(current)) if current is not None else None

    # -- dicts -------------------------------------------------------------------------------
    def dict_value(self, container: ast.AST, key: str, at: ast.AST, depth: int) -> Optional[Value]:
        items = self.dict_items(container, at, depth)
        if items is None or key not in items:
            return None
        return items[key][0]

    def dict_items(self, container: ast.AST, at: ast.AST, depth: int) -> Optional[Dict[str, Tuple[Value, str]]]:
        """key -> (value, text) for a dict the expression stands for (a display, ``dict(...)``,
        a name bound to one with ``d["k"] = v`` writes, a helper that returns one); None when
        it cannot tell."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(container, ast.Dict):
            out: Dict[str, Tuple[Value, str]] = {}
            for k, v in zip(container.keys, container.values):
                if k is None:
                    inner = self.dict_items(v, at, depth + 1)
                    if inner is None:
                        return None
                    out.update(inner)
                elif isinstance(k, ast.Constant) and isinstance(k.value, str):
                    out[k.value] = (self.classify(v, at, depth + 1), _text(v))
            return out
        if isinstance(container, ast.Call):
            if isinstance(container.func, ast.Name) and container.func.id == "dict" and not container.args:
                return {k.arg: (self.classify(k.value, at, depth + 1), _text(k.value))
                        for k in container.keywords if k.arg is not None}
            returned = self.returns(container.func, at)
            if returned is None:
                return None
            owner, target = returned
            merged: Dict[str, Tuple[Value, str]] = {}
            with owner.bound(target, container, self):
                results = [owner.dict_items(r, r, depth + 1) for r in _return_values(target)]
            if not results or any(r is None for r in results):
                return None
            for result in results:
                for k, (value, text) in result.items():
                    if k in merged:
                        merged[k] = (combine([merged[k][0], value]), merged[k][1])
                    else:
                        merged[k] = (value, text)
            return merged
        if isinstance(container, ast.Name):
            scope = self.scope_of(at) if not isinstance(at, (ast.FunctionDef, ast.AsyncFunctionDef)) else at
            reaching, entry = self.reaching(scope, container.id, at)
            if entry and scope is not None and container.id in _params(scope):
                return None
            if not reaching:
                if container.id in self.constants:
                    return self.dict_items(self.constants[container.id], self.constants[container.id], depth + 1)
                return None
            merged = {}
            for node, _, index in reaching:
                if not isinstance(node, (ast.Assign, ast.AnnAssign)) or index != -1:
                    return None
                result = self.dict_items(node.value, node, depth + 1)
                if result is None:
                    return None
                merged.update(result)
            # d["key"] = value between the binding and the read
            line = getattr(self.statement_of(at), "lineno", 0)
            for stmt in _statements(getattr(scope, "body", []) if scope is not None else []):
                if isinstance(stmt, ast.Assign) and stmt.lineno < line:
                    for target in stmt.targets:
                        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                                and target.value.id == container.id and isinstance(target.slice, ast.Constant) \
                                and isinstance(target.slice.value, str):
                            merged[target.slice.value] = (self.classify(stmt.value, stmt, depth + 1),
                                                          _text(stmt.value))
            return merged
        return None


# -- small helpers ------------------------------------------------------------------------------

def _shape(expr: ast.AST, tensor: ast.AST) -> Value:
    """A dimension of a tensor: run-time; a KV cache's when the tensor is named for one."""
    return Value(RUNTIME, f"a tensor's shape (`{_text(expr)}`)", "", bool(KV_CACHE_NAME.search(_text(tensor))))


def _unpacked_name(node: ast.AST, index: int) -> str:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)) and 0 <= index < len(target.elts) \
                and isinstance(target.elts[index], ast.Name):
            return target.elts[index].id
    return ""


def _statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body, nested blocks included, nested functions and classes not."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for attr in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, attr, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _statements(inner)
        for handler in getattr(stmt, "handlers", ()) or ():
            yield from _statements(handler.body)
        for case in getattr(stmt, "cases", ()) or ():
            yield from _statements(case.body)


def _holds(outer: ast.AST, inner: ast.AST) -> bool:
    return any(node is inner for node in ast.walk(outer))


def _raise_message(body: Sequence[ast.stmt]) -> Optional[ast.AST]:
    for stmt in body:
        if isinstance(stmt, ast.Raise) and isinstance(stmt.exc, ast.Call) and stmt.exc.args:
            return stmt.exc.args[0]
    return None


def _return_values(func: ast.AST) -> List[ast.AST]:
    if isinstance(func, ast.Lambda):
        return [func.body]
    return [stmt.value for stmt in _statements(getattr(func, "body", [])) if isinstance(stmt, ast.Return)
            and stmt.value is not None]


def _ordered(func: ast.AST) -> List[str]:
    args = func.args  # type: ignore[attr-defined]
    return [a.arg for a in args.posonlyargs + args.args]


def _whole_shape(value: ast.AST) -> Optional[ast.AST]:
    """The tensor of ``x.shape`` or ``x.size()``, or None."""
    if isinstance(value, ast.Attribute) and value.attr == "shape":
        return value.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size" \
            and not value.args and not value.keywords:
        return value.func.value
    return None


def _params(scope: _Scope) -> Set[str]:
    if scope is None or not hasattr(scope, "args"):
        return set()
    args = scope.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    for extra in (args.vararg, args.kwarg):
        if extra is not None:
            names.add(extra.arg)
    return names


def _first_param(scope: ast.AST) -> Optional[str]:
    args = getattr(scope, "args", None)
    if args is None:
        return None
    ordered = args.posonlyargs + args.args
    return ordered[0].arg if ordered else None


def _default(func: ast.AST, name: str) -> Optional[ast.AST]:
    args = func.args
    positional = args.posonlyargs + args.args
    for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        if arg.arg == name:
            return default
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        if arg.arg == name:
            return default
    return None


def _annotation_says_not_int(func: ast.AST, name: str) -> bool:
    """A parameter annotated with something other than an int (a tensor, a bool, a string)."""
    args = func.args
    for arg in args.posonlyargs + args.args + args.kwonlyargs:
        if arg.arg == name and arg.annotation is not None:
            text = _text(arg.annotation, 200)
            return not re.search(r"\bint\b|constexpr", text)
    return False


def _argument(call: ast.Call, ordered: Sequence[str], name: str) -> Optional[ast.AST]:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if name in ordered:
        position = list(ordered).index(name)
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                return None
            if i == position:
                return arg
    return None


def _attribute_writes(cls: ast.ClassDef, attr: str) -> List[ast.AST]:
    """Values assigned to ``<first parameter>.attr`` in the methods of a class."""
    out: List[ast.AST] = []
    for item in cls.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = _first_param(item)
        if first is None:
            continue
        for stmt in _statements(item.body):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and getattr(stmt, "value", None) is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and target.attr == attr \
                            and isinstance(target.value, ast.Name) and target.value.id == first:
                        out.append(stmt.value)
    return out


__all__ = ["POW2", "RUNTIME", "CONST", "UNKNOWN", "Value", "LaunchFact", "ModuleValues", "combine", "is_pow2",
           "pow2_shaped", "pow2_checks", "int_literal", "KV_CACHE_NAME", "literal_value", "POW2_FUNCTION", "TILE_NAME", "LAUNCH_OPTIONS"]
