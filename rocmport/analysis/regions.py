"""The region and call-graph analysis shared by the capture rules and the graph-break rules.

One pass over a file collects its functions, classes, instance bindings and the regions
that matter: CUDA-graph captures (``with torch.cuda.graph(...)``, ``capture_begin`` /
``capture_end``, ``make_graphed_callables``) and compiled code (``@torch.compile``,
``f = torch.compile(f)``, compiled module instances, and what a project decorator or helper
that compiles is given: ``effects.ModuleFacts.compilers``, through the project index for
another module's). Each region is then followed through
the calls it makes to functions and methods of the same file (``f()``, ``self.m()``,
instances of classes defined in the file through ``__call__`` / ``forward``), transitively
and with a guard against cycles. What the code met on the way does becomes a typed event
(``_events``: a fact, with its region and the chain of calls that reaches it), listed in
``RegionAnalysis.events``; the rules of both families pick their events and write their own
findings. The analysis knows no rule code and writes no message. It runs once per file
(``RuleContext.shared``), however many of those rules are enabled. What a name stands for in
a scope is the resolver's answer (``RegionAnalysis.names``, a ``_resolve.ScopeBindings`` whose
tables the collection pass records on the same visits).

Cost: the collection pass is linear in the file; every reached function is scanned once
(its events are cached), and each region walks the call graph once.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from . import effects as _effects
from . import walk as _walk
from .events import (
    BooleanMaskIndex,
    CompiledCall,
    CopyToHost,
    DataDependentShape,
    DeviceSynchronize,
    HostToDeviceCopy,
    LoggingCall,
    PinMemory,
    PrintCall,
    RegionEvent,
    RngStateCall,
    ScalarRead,
    StreamCreated,
    StreamEntered,
    StreamSynchronize,
    TensorBranch,
    TensorFormatted,
    TensorToPython,
    UntraceableCall,
)
from .names import COMPILE_NAMES
from .platforms import other_accelerator_name
from .resolve import BindingRecorder, ScopeBindings
from .statics import default_value
from .syntax import dotted_name, keyword, literal_string

SHARED_KEY = "rocmport.regions"

GRAPH_CM_NAMES = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})
GRAPHED_CALLABLES_NAMES = frozenset({"torch.cuda.make_graphed_callables",
                                     "torch.cuda.graphs.make_graphed_callables"})
DISABLE_NAMES = frozenset({"torch.compiler.disable", "torch._dynamo.disable",
                           "torch._dynamo.eval_frame.disable", "torch._disable_dynamo"})
SYNC_NAMES = frozenset({"torch.cuda.synchronize"})
# A stream made, or entered, in captured code.
STREAM_NEW_NAMES = frozenset({"torch.cuda.Stream", "torch.cuda.streams.Stream"})
STREAM_CM_NAMES = frozenset({"torch.cuda.stream"})
# What the collection phase looks for (qualified names are resolved only for nodes that may be these).
_COLLECT_LAST = GRAPH_CM_NAMES | GRAPHED_CALLABLES_NAMES | DISABLE_NAMES | COMPILE_NAMES
RNG_NAMES = {
    "torch.cuda.get_rng_state": "get", "torch.cuda.get_rng_state_all": "get",
    "torch.cuda.random.get_rng_state": "get", "torch.get_rng_state": "get",
    "torch.random.get_rng_state": "get",
    "torch.cuda.set_rng_state": "set", "torch.cuda.set_rng_state_all": "set",
    "torch.cuda.random.set_rng_state": "set", "torch.set_rng_state": "set",
    "torch.random.set_rng_state": "set",
    "torch.cuda.manual_seed": "seed", "torch.cuda.manual_seed_all": "seed",
    "torch.cuda.random.manual_seed": "seed", "torch.manual_seed": "seed",
    "torch.random.manual_seed": "seed",
    "torch.cuda.seed": "seed", "torch.cuda.seed_all": "seed", "torch.seed": "seed",
    "torch.random.seed": "seed",
    "torch.Generator.get_state": "get", "torch.Generator.set_state": "set",
    "torch.Generator.manual_seed": "seed", "torch.Generator.seed": "seed",
}
# nn.Module methods that return the module itself: ``Model().cuda().eval()`` holds a Model.
_MODULE_SELF_METHODS = frozenset({"cuda", "to", "eval", "train", "half", "float", "double", "bfloat16", "cpu",
                                  "requires_grad_", "share_memory", "to_empty", "type", "xpu", "apply"})
# torch.Generator methods that read or change the generator's state: "get", "set" or "seed".
GENERATOR_METHODS = {"get_state": "get", "set_state": "set", "manual_seed": "seed", "seed": "seed"}
NONZERO_NAMES = frozenset({"torch.nonzero", "torch.argwhere", "torch.masked_select",
                           "torch.unique", "torch.unique_consecutive"})
# Factories that make a CPU tensor unless told otherwise.
CPU_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.zeros",
                           "torch.ones", "torch.empty", "torch.full", "torch.arange", "torch.rand",
                           "torch.randn", "torch.randint", "torch.linspace", "torch.Tensor",
                           "torch.LongTensor", "torch.FloatTensor", "torch.IntTensor"})
PYDATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.Tensor"})
# Names whose call result is not a tensor although they live in torch's namespace.
_NOT_TENSOR_FUNCS = frozenset({"numel", "typename", "result_type", "can_cast", "promote_types",
                               "device", "dtype", "Size", "finfo", "iinfo", "compile", "no_grad",
                               "enable_grad", "inference_mode", "autocast", "set_grad_enabled",
                               "Generator", "Stream", "Event", "load", "save", "manual_seed", "seed",
                               "initial_seed", "use_deterministic_algorithms", "set_printoptions",
                               "set_default_dtype", "set_default_device", "from_dlpack"})
_TENSOR_NAMESPACES = ("torch.", "torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")
# Tensor methods whose result is a tensor (or a tensor's truth value), whatever the receiver.
_TENSOR_METHODS = frozenset({
    "sum", "mean", "max", "min", "any", "all", "norm", "abs", "amax", "amin", "argmax", "argmin",
    "std", "var", "prod", "count_nonzero", "cumsum", "isnan", "isinf", "isfinite", "eq", "ne",
    "gt", "lt", "ge", "le", "logical_and", "logical_or", "logical_not", "equal", "allclose",
    "isclose", "masked_fill", "clamp", "sigmoid", "softmax", "exp", "sqrt", "square", "detach",
    "clone", "contiguous", "float", "half", "bfloat16", "double", "bool", "long", "square",
    "maximum", "minimum", "matmul", "mm", "bmm", "t", "transpose", "permute", "reshape", "view",
    "squeeze", "unsqueeze", "flatten", "masked_select", "nonzero", "unique", "topk", "sort",
    "rsqrt", "tanh", "relu",
})
_NOT_TENSOR_ATTRS = frozenset({"shape", "ndim", "device", "dtype", "is_cuda", "requires_grad",
                               "layout", "names", "is_leaf", "grad_fn"})
_BOOL_FUNCS = frozenset({"torch.isnan", "torch.isinf", "torch.isfinite", "torch.logical_and",
                         "torch.logical_or", "torch.logical_not", "torch.logical_xor", "torch.eq",
                         "torch.ne", "torch.gt", "torch.lt", "torch.ge", "torch.le", "torch.isin",
                         "torch.isclose", "torch.bernoulli"})
_BOOL_METHODS = frozenset({"bool", "isnan", "isinf", "isfinite", "logical_and", "logical_or",
                           "logical_not", "logical_xor", "eq", "ne", "gt", "lt", "ge", "le", "isin",
                           "isclose"})
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical",
                         "fatal", "log"})
_LOGGER_NAME = re.compile(r"(?i)(?:^|_)(?:log|logger|logging)$")
# Guards that tell compiled/captured code from eager code: ``if not is_compiling(): ...``.
_GUARD_NAME = re.compile(r"(?:^|\.|_)(?:is_compiling|is_dynamo_compiling|is_torchdynamo_compiling|"
                         r"is_current_stream_capturing|is_capturing|is_exporting|is_scripting)$")
_CAPTURE_SCALARS = re.compile(r"""capture_scalar_outputs['"]?\s*[=:,]\s*True\b""")
_CONTAINER_DEPTH = 4


# ----------------------------------------------------------------------------------------
# The model of a file
# ----------------------------------------------------------------------------------------

@dataclass(eq=False)
class Scope:
    """A function, or the module: what its names refer to."""

    node: cst.CSTNode
    parent: Optional["Scope"] = None
    cls: Optional["ClassInfo"] = None  # the class of a method
    name: str = "<module>"
    label: str = "<module>"
    funcs: Dict[str, "Scope"] = field(default_factory=dict)
    classes: Dict[str, "ClassInfo"] = field(default_factory=dict)
    instances: Dict[str, Set["ClassInfo"]] = field(default_factory=dict)
    compiled_names: Dict[str, int] = field(default_factory=dict)  # name -> line compiled
    # ``x.attr = value`` (attributes of instances and modules: names are the resolver's,
    # ``RegionAnalysis.names``)
    attribute_assigns: List[Tuple[cst.Attribute, cst.BaseExpression]] = field(default_factory=list)
    globals: Set[str] = field(default_factory=set)
    island: bool = False  # @torch.compiler.disable
    compiled_line: Optional[int] = None  # decorated with @torch.compile
    self_name: Optional[str] = None
    _tensor_params: Optional[Set[str]] = None
    _scan: Optional["ScanResult"] = None

    @property
    def is_function(self) -> bool:
        return isinstance(self.node, cst.FunctionDef)


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    name: str
    scope: Scope  # where the class is defined
    methods: Dict[str, Scope] = field(default_factory=dict)
    bases: List[str] = field(default_factory=list)
    attrs: Dict[str, Set["ClassInfo"]] = field(default_factory=dict)
    compiled_attrs: Dict[str, int] = field(default_factory=dict)
    compiled_line: Optional[int] = None  # decorated with a project decorator that compiles its forward


@dataclass
class ScanResult:
    events: List[RegionEvent]  # without their region: a function's scan is shared by every region
    calls: List[Tuple[cst.Call, List[Scope]]]


@dataclass(eq=False)
class Region:
    kind: str  # "capture" or "compiled"
    line: int
    # How the region is made: "with" (``with torch.cuda.graph(...)``), "capture_begin",
    # "make_graphed_callables", or "compile" (a compiled function: ``entries[0]``).
    origin: str
    scope: Optional[Scope]  # where the region's own code runs (lexical regions)
    nodes: Sequence[cst.CSTNode] = ()  # lexical statements of the region
    entries: Sequence[Scope] = ()  # functions entered from the region
    chain_includes_entry: bool = False
    start: int = 0  # offset where the region begins (for warm-up checks)
    # ``torch.cuda.synchronize()`` statements that end a capture ``with`` block after other
    # statements: id of the call -> its statement
    trailing_syncs: Dict[int, cst.CSTNode] = field(default_factory=dict)
    with_node: Optional[cst.With] = None
    # a compiled function compiled only under ``if C:`` (``not C`` in its ``else``): C
    condition: Optional[str] = None

    @property
    def compiled_label(self) -> str:
        """The compiled function of a compiled region (``Model.forward``)."""
        return self.entries[0].label if self.entries else ""


# ----------------------------------------------------------------------------------------
# Pass 1: collect scopes, classes, assignments and region candidates
# ----------------------------------------------------------------------------------------

class _Collector(cst.CSTVisitor):
    def __init__(self, analysis: "RegionAnalysis"):
        super().__init__()
        self.a = analysis
        self.stack: List[object] = [analysis.module_scope]
        # what binds each name in each scope: the resolver's tables, made on the same visits
        self.names = analysis.recorder = BindingRecorder(analysis.module, nested=True)

    # the innermost function or module scope
    def scope(self) -> Scope:
        for item in reversed(self.stack):
            if isinstance(item, Scope):
                return item
        return self.a.module_scope  # pragma: no cover

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.names.visit_ClassDef(node)
        scope = self.scope()
        info = ClassInfo(node, node.name.value, scope,
                         bases=[n for n in (dotted_name(b.value) for b in node.bases) if n])
        scope.classes.setdefault(node.name.value, info)
        self.a.all_classes.append(info)
        self.stack.append(info)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.names.leave_ClassDef(original_node)
        self.stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.names.visit_FunctionDef(node)
        top = self.stack[-1]
        outer = self.scope()
        cls = top if isinstance(top, ClassInfo) else None
        label = f"{cls.name}.{node.name.value}" if cls else node.name.value
        scope = Scope(node, parent=outer, cls=cls, name=node.name.value, label=label)
        if cls is not None:
            cls.methods.setdefault(node.name.value, scope)
            params = node.params.params or node.params.posonly_params
            if params and not any(self.a.is_decorator(d, {"staticmethod"}) for d in node.decorators):
                scope.self_name = params[0].name.value
        else:
            outer.funcs[node.name.value] = scope
        for decorator in node.decorators:
            expr = decorator.decorator
            target = expr.func if isinstance(expr, cst.Call) else expr
            names = self.a.qnames(target) if self.a.ctx.may_resolve(target, _COLLECT_LAST) else set()
            if names & COMPILE_NAMES:
                scope.compiled_line = self.a.line(decorator)
            elif names & DISABLE_NAMES:
                scope.island = True
        self.a.all_functions.append(scope)
        self.stack.append(scope)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.names.leave_FunctionDef(original_node)
        self.stack.pop()

    def visit_Global(self, node: cst.Global) -> None:
        self.scope().globals.update(n.name.value for n in node.names)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.names.visit_Assign(node)
        if isinstance(self.stack[-1], ClassInfo):
            return
        scope = self.scope()
        for target in node.targets:
            if isinstance(target.target, cst.Attribute):
                scope.attribute_assigns.append((target.target, node.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.names.visit_AnnAssign(node)
        if node.value is None or isinstance(self.stack[-1], ClassInfo):
            return
        if isinstance(node.target, cst.Attribute):
            self.scope().attribute_assigns.append((node.target, node.value))

    def visit_For(self, node: cst.For) -> None:
        self.names.visit_For(node)

    # the other visits that bind names: the resolver's
    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.names.visit_Lambda(node)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.names.leave_Lambda(original_node)

    def visit_Param(self, node: cst.Param) -> None:
        self.names.visit_Param(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.names.visit_AugAssign(node)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.names.visit_CompFor(node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.names.visit_NamedExpr(node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.names.visit_WithItem(node)

    def visit_Import(self, node: cst.Import) -> None:
        self.names.visit_Import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.names.visit_ImportFrom(node)

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            expr = item.item
            if (isinstance(expr, cst.Call) and self.a.ctx.may_resolve(expr.func, _COLLECT_LAST)
                    and self.a.qnames(expr.func) & GRAPH_CM_NAMES):
                self.a.capture_withs.append((self.scope(), node))
                return

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "capture_begin":
            if not self._other_accelerators_graph(func.value):
                self.a.capture_begins.append((self.scope(), node))
            return
        if not self.a.ctx.may_resolve(func, _COLLECT_LAST):
            if node.args and self.a.project_compile_call(node):
                self.a.compile_calls.append((self.scope(), node, self._enclosing_class()))
            return
        names = self.a.qnames(func)
        if names & GRAPHED_CALLABLES_NAMES:
            self.a.graphed_calls.append((self.scope(), node))
        elif names & COMPILE_NAMES:
            self.a.compile_calls.append((self.scope(), node, self._enclosing_class()))
        elif names & DISABLE_NAMES and node.args:
            self.a.disable_calls.append((self.scope(), node, self._enclosing_class()))
        elif node.args and self.a.project_compile_call(node):
            self.a.compile_calls.append((self.scope(), node, self._enclosing_class()))

    def _other_accelerators_graph(self, receiver: cst.BaseExpression) -> bool:
        """``capture_begin`` of another accelerator's graph: ``self.xpu_graph.capture_begin()``,
        ``super().capture_begin()`` in a class based on ``torch._C._XPUGraph`` (torch.xpu's own
        graphs, Ascend's ``NPUGraph``): no CUDA graph, never run on ROCm."""
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super":
            cls = self._enclosing_class()
            return cls is not None and any(other_accelerator_name(base) for base in cls.bases)
        spelled = dotted_name(receiver)
        return spelled is not None and other_accelerator_name(spelled)

    def _enclosing_class(self) -> Optional[ClassInfo]:
        scope = self.scope()
        return scope.cls if scope.is_function else None


# ----------------------------------------------------------------------------------------
# The analysis
# ----------------------------------------------------------------------------------------

# A name for a count that is a Python int: ``n_rep``, ``num_heads``, ``self.num_key_value_groups``,
# ``group_size``, ``repeat_factor`` (a tensor of per-element counts is ``counts``, ``lengths``,
# ``tokens_per_expert``, ``repeats``: data).
_COUNT_NAME = re.compile(r"(?i)^_*(?:n|num|number_of)_\w+$|^\w*_(?:groups|heads|rep|ratio|factor|times|size|dim|multiple)$"
                         r"|^n_?rep$|^(?:groups|factor|ratio|stride)$")


def _count_like(expr: cst.BaseExpression) -> bool:
    """A repeat count that the code spells as a Python int: an integer literal, a name or
    attribute named like a count (``_COUNT_NAME``), or arithmetic of them (``self.num_heads //
    2``); a call, subscript or other name may be a tensor of counts."""
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, (cst.Name, cst.Attribute)):
        spelled = dotted_name(expr)
        return spelled is not None and _COUNT_NAME.match(spelled.rsplit(".", 1)[-1]) is not None
    if isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, (cst.FloorDivide, cst.Multiply, cst.Add, cst.Subtract)):
        return _count_like(expr.left) and _count_like(expr.right)
    return False


class RegionAnalysis:
    def __init__(self, ctx, collector: Optional["Feeder"] = None):
        self.ctx = ctx
        self.module = ctx.module
        self.text = ctx.text
        self.module_scope = Scope(ctx.module)
        self.all_functions: List[Scope] = []
        self.all_classes: List[ClassInfo] = []
        self.capture_withs: List[Tuple[Scope, cst.With]] = []
        self.capture_begins: List[Tuple[Scope, cst.Call]] = []
        self.graphed_calls: List[Tuple[Scope, cst.Call]] = []
        self.compile_calls: List[Tuple[Scope, cst.Call, Optional[ClassInfo]]] = []
        self.disable_calls: List[Tuple[Scope, cst.Call, Optional[ClassInfo]]] = []
        # the file turns ``torch._dynamo.config.capture_scalar_outputs`` on
        self.capture_scalars = bool(_CAPTURE_SCALARS.search(self.text))
        self.events: List[RegionEvent] = []
        self._project: Optional[Tuple[object, Optional[_effects.ModuleFacts]]] = None
        self._compiler_kinds: Dict[str, Optional[str]] = {}
        self._callee_effects: Dict[str, _effects.Effects] = {}
        self._libraries: Optional[Set[str]] = None
        self._offset_cache: Dict[int, int] = {}
        self._values: Dict[int, Dict[str, List[cst.BaseExpression]]] = {}  # id(scope) -> values()

        if collector is None:
            _walk.visit(self.module, _Collector(self))
        else:
            collector.adopt(self)
        self.names = ScopeBindings(self.module, self._parent)  # what a name stands for in a scope
        self.names.adopt(self.recorder)
        self.compiled: List[Tuple[Scope, int]] = []
        self._mark_project_decorated()
        if not (self.capture_withs or self.capture_begins or self.graphed_calls or self.compile_calls
                or any(f.compiled_line is not None for f in self.all_functions)
                or any(c.compiled_line is not None for c in self.all_classes)):
            return  # no capture and nothing compiled: no region, nothing to resolve
        self._bind_instances()
        self._mark_compiled()
        regions = self._capture_regions() + self._compiled_regions()
        regions.sort(key=lambda r: (r.line, r.kind))
        for region in regions:
            self._walk_region(region)

    def release(self) -> None:
        """Break the scopes' references to each other (parents, classes, methods, the
        scans' callees) and drop the rest: the rules have read the events, and without these
        cycles the file's trees are freed by reference counting (``RuleContext.release``)."""
        for scope in self._all_scopes():
            scope.node = scope.parent = scope.cls = scope._scan = None  # type: ignore[assignment]
            scope.funcs.clear()
            scope.classes.clear()
            scope.instances.clear()
        for cls in self.all_classes:
            cls.methods.clear()
            cls.attrs.clear()
        self.all_classes.clear()
        # the rest too (the bindings hold ``_parent``, the recorder the module): a visitor
        # class made in a call, itself a cycle, may hold this analysis
        vars(self).clear()

    # -- metadata, resolved on first use (most files never need it) -----------------------
    @property
    def _pos(self):
        return self.ctx.metadata(PositionProvider)

    # -- small helpers ----------------------------------------------------------------------
    def qnames(self, node: cst.CSTNode) -> Set[str]:
        """Qualified names of a dotted name. ``torch.zeros(3).cuda`` has none: the provider
        would call it ``torch.zeros.cuda``, ignoring the call."""
        if isinstance(node, cst.Attribute) and dotted_name(node) is None:
            return set()
        return {q.name for q in self.ctx.qualified_names(node)}

    def is_decorator(self, decorator: cst.Decorator, names: Set[str]) -> bool:
        expr = decorator.decorator
        return isinstance(expr, cst.Name) and expr.value in names

    def line(self, node: cst.CSTNode) -> int:
        return self._pos[node].start.line

    def offset(self, node: cst.CSTNode) -> int:
        key = id(node)
        if key not in self._offset_cache:
            start = self._pos[node].start
            self._offset_cache[key] = self.ctx.lines.offset(start.line, start.column)
        return self._offset_cache[key]

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def short(self, node: cst.CSTNode, limit: int = 40) -> str:
        text = " ".join(self.code(node).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    # -- name resolution ----------------------------------------------------------------------
    def lookup_func(self, scope: Optional[Scope], name: str) -> Optional[Scope]:
        while scope is not None:
            if name in scope.funcs:
                return scope.funcs[name]
            scope = scope.parent
        return None

    def lookup_class(self, scope: Optional[Scope], name: str) -> Optional[ClassInfo]:
        while scope is not None:
            if name in scope.classes:
                return scope.classes[name]
            scope = scope.parent
        return None

    def lookup_instances(self, scope: Optional[Scope], name: str) -> Set[ClassInfo]:
        while scope is not None:
            if name in scope.instances:
                return scope.instances[name]
            if name in scope.funcs or name in scope.classes:
                return set()
            scope = scope.parent
        return set()

    def method(self, cls: ClassInfo, name: str, _seen: Optional[Set[int]] = None) -> Optional[Scope]:
        """``name`` in ``cls`` or its bases defined in the file (depth first)."""
        if name in cls.methods:
            return cls.methods[name]
        seen = _seen if _seen is not None else set()
        seen.add(id(cls))
        for base in cls.bases:
            info = self.lookup_class(cls.scope, base.split(".")[-1]) if "." not in base else None
            if info is not None and id(info) not in seen:
                found = self.method(info, name, seen)
                if found is not None:
                    return found
        return None

    def attr_classes(self, cls: ClassInfo, name: str, _seen: Optional[Set[int]] = None) -> Set[ClassInfo]:
        if name in cls.attrs:
            return cls.attrs[name]
        seen = _seen if _seen is not None else set()
        seen.add(id(cls))
        for base in cls.bases:
            info = self.lookup_class(cls.scope, base) if "." not in base else None
            if info is not None and id(info) not in seen:
                found = self.attr_classes(info, name, seen)
                if found:
                    return found
        return set()

    def call_targets(self, cls: ClassInfo) -> List[Scope]:
        """What calling an instance of ``cls`` runs: ``__call__``, else ``forward``."""
        target = self.method(cls, "__call__") or self.method(cls, "forward")
        return [target] if target is not None else []

    def is_self(self, node: cst.CSTNode, scope: Optional[Scope]) -> bool:
        while scope is not None and scope.is_function:
            if scope.cls is not None and scope.self_name:
                return isinstance(node, cst.Name) and node.value == scope.self_name
            scope = scope.parent  # a closure inside a method sees the method's ``self``
        return False

    def self_class(self, scope: Optional[Scope]) -> Optional[ClassInfo]:
        while scope is not None and scope.is_function:
            if scope.cls is not None:
                return scope.cls
            scope = scope.parent
        return None

    def classes_of(self, expr: cst.BaseExpression, scope: Optional[Scope], depth: int = 0) -> Set[ClassInfo]:
        """Classes of the file whose instances ``expr`` holds (an instance or a container)."""
        if depth > _CONTAINER_DEPTH:
            return set()
        if isinstance(expr, cst.Name):
            return self.lookup_instances(scope, expr.value)
        if isinstance(expr, cst.Attribute):
            if self.is_self(expr.value, scope):
                cls = self.self_class(scope)
                return self.attr_classes(cls, expr.attr.value) if cls else set()
            return set()
        if isinstance(expr, cst.Subscript):
            return self.classes_of(expr.value, scope, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Name):
                cls = self.lookup_class(scope, func.value)
                if cls is not None:
                    return {cls}
            if isinstance(func, cst.Attribute) and func.attr.value in _MODULE_SELF_METHODS:
                held = self.classes_of(func.value, scope, depth + 1)  # Model().cuda().eval(): still a Model
                if held:
                    return held
            if expr.args and ((self.ctx.may_resolve(func, COMPILE_NAMES) and self.qnames(func) & COMPILE_NAMES)
                              or self.project_compile_call(expr)):
                return self.classes_of(expr.args[0].value, scope, depth + 1)
            found: Set[ClassInfo] = set()
            for arg in expr.args:  # nn.Sequential(A(), B()), nn.ModuleList([...])
                found |= self.classes_of(arg.value, scope, depth + 1)
            return found
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            found = set()
            for element in expr.elements:
                found |= self.classes_of(element.value, scope, depth + 1)
            return found
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return self.classes_of(expr.elt, scope, depth + 1)
        if isinstance(expr, cst.Dict):
            found = set()
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    found |= self.classes_of(element.value, scope, depth + 1)
            return found
        if isinstance(expr, cst.DictComp):
            return self.classes_of(expr.value, scope, depth + 1)
        return set()

    def resolve_callee(self, func: cst.BaseExpression, scope: Optional[Scope]) -> List[Scope]:
        """Functions of the file that calling ``func`` runs."""
        if isinstance(func, cst.Name):
            target = self.lookup_func(scope, func.value)
            if target is not None:
                return [target]
            cls = self.lookup_class(scope, func.value)
            if cls is not None:
                init = self.method(cls, "__init__")
                return [init] if init is not None else []
            return [t for c in self._sorted(self.lookup_instances(scope, func.value)) for t in self.call_targets(c)]
        if isinstance(func, cst.Attribute):
            value, attr = func.value, func.attr.value
            if self.is_self(value, scope):
                cls = self.self_class(scope)
                if cls is None:
                    return []
                target = self.method(cls, attr)
                if target is not None:
                    return [target]
                return [t for c in self._sorted(self.attr_classes(cls, attr)) for t in self.call_targets(c)]
            if (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "super"
                    and self.qnames(value.func) == {"builtins.super"}):
                cls = self.self_class(scope)
                if cls is None:
                    return []
                for base in cls.bases:
                    info = self.lookup_class(cls.scope, base) if "." not in base else None
                    target = self.method(info, attr) if info is not None else None
                    if target is not None:
                        return [target]
                return []
            if isinstance(value, cst.Name):
                cls = self.lookup_class(scope, value.value)
                if cls is not None:
                    target = self.method(cls, attr)
                    return [target] if target is not None else []
            classes = self.classes_of(value, scope)
            found = []
            for cls in self._sorted(classes):
                target = self.method(cls, attr)
                if target is not None:
                    found.append(target)
            return found
        if isinstance(func, cst.Subscript):
            return [t for c in self._sorted(self.classes_of(func.value, scope)) for t in self.call_targets(c)]
        return []

    def _sorted(self, classes: Iterable[ClassInfo]) -> List[ClassInfo]:
        return sorted(classes, key=lambda c: self.offset(c.node))

    # -- pass 2: instances and compiled code ------------------------------------------------------
    def _all_scopes(self) -> Iterator[Scope]:
        yield self.module_scope
        yield from self.all_functions

    def _bind_instances(self) -> None:
        for _ in range(2):  # a second round resolves ``b = a`` after ``a = Model()``
            for scope in self._all_scopes():
                for name, bound in self.names.bindings(scope.node).items():
                    for value in bound:  # ``name = value`` or ``for name in value``
                        value = value.iter if isinstance(value, cst.For) else value
                        classes = self.classes_of(value, scope) if isinstance(value, cst.BaseExpression) else None
                        if classes:
                            holder = self.module_scope if name in scope.globals else scope
                            holder.instances.setdefault(name, set()).update(classes)
                for target, value in scope.attribute_assigns:
                    classes = self.classes_of(value, scope)
                    if classes:
                        self._bind(target, classes, scope)

    def _bind(self, target: cst.Attribute, classes: Set[ClassInfo], scope: Scope) -> None:
        if self.is_self(target.value, scope):
            cls = self.self_class(scope)
            if cls is not None:
                cls.attrs.setdefault(target.attr.value, set()).update(classes)

    def _compile_targets(self, arg: cst.BaseExpression, scope: Scope) -> List[Scope]:
        """The functions ``torch.compile(arg)`` compiles."""
        if isinstance(arg, cst.Name):
            target = self.lookup_func(scope, arg.value)
            if target is not None:
                return [target]
        elif isinstance(arg, cst.Attribute):
            value, attr = arg.value, arg.attr.value
            if attr not in ("forward", "__call__") and self.is_self(value, scope):
                cls = self.self_class(scope)
                target = self.method(cls, attr) if cls else None
                if target is not None:
                    return [target]
            elif attr in ("forward", "__call__"):
                if self.is_self(value, scope):
                    cls = self.self_class(scope)  # self.forward = torch.compile(self.forward)
                    target = self.method(cls, attr) if cls else None
                    return [target] if target is not None else []
                return [t for c in self._sorted(self.classes_of(value, scope))
                        for t in ([self.method(c, attr)] if self.method(c, attr) else [])]
        return [t for c in self._sorted(self.classes_of(arg, scope)) for t in self.call_targets(c)]

    def _mark_compiled(self) -> None:
        self.compiled: List[Tuple[Scope, int]] = []
        for scope in self.all_functions:
            if scope.compiled_line is not None:
                self.compiled.append((scope, scope.compiled_line))
        for cls in self.all_classes:
            if cls.compiled_line is not None:
                for target in self.call_targets(cls):
                    self.compiled.append((target, cls.compiled_line))
        for scope, call, _cls in self.disable_calls:
            for target in self._compile_targets(call.args[0].value, scope):
                target.island = True
        self.compiled_when: Dict[int, Set[Optional[str]]] = {}  # id(target) -> conditions of its compile sites
        for scope, call, _cls in self.compile_calls:
            line = self.line(call)
            if call.args and call.args[0].keyword is None and not call.args[0].star:
                for target in self._compile_targets(call.args[0].value, scope):
                    self.compiled.append((target, line))
                    self.compiled_when.setdefault(id(target), set()).add(self._site_condition(call))
        for scope in self.all_functions:
            if scope.compiled_line is not None:
                self.compiled_when.setdefault(id(scope), set()).add(None)
        for cls in self.all_classes:
            if cls.compiled_line is not None:
                for target in self.call_targets(cls):
                    self.compiled_when.setdefault(id(target), set()).add(None)
        # names bound to compiled callables (called in a capture, they compile there)
        for scope in self._all_scopes():
            for name, values in self.values(scope).items():
                for value in values:
                    if self._compiles(value):
                        holder = self.module_scope if name in scope.globals else scope
                        holder.compiled_names.setdefault(name, self.line(value))
            for target, value in scope.attribute_assigns:
                if self._compiles(value) and self.is_self(target.value, scope):
                    cls = self.self_class(scope)
                    if cls is not None:
                        cls.compiled_attrs.setdefault(target.attr.value, self.line(value))

    def _compiles(self, value: cst.BaseExpression) -> bool:
        """``torch.compile(...)`` (any spelling), or a call of a project function that
        compiles its argument."""
        if not isinstance(value, cst.Call):
            return False
        if self.ctx.may_resolve(value.func, COMPILE_NAMES) and self.qnames(value.func) & COMPILE_NAMES:
            return True
        return bool(value.args) and self.project_compile_call(value)

    # -- the project: compilers declared in other modules (or this one), calls' effects -----
    def _project_facts(self):
        """(the project index, this module's call facts from its current tree)."""
        if self._project is None:
            from .index import ProjectIndex

            ctx = self.ctx
            index = ctx.index if ctx.index is not None else ctx.shared("own_index", lambda c: ProjectIndex([c.path]))
            name = index.module_name(ctx.path) or "__main__"
            tree = ctx.facts.tree if ctx.facts is not None else None
            own = None
            if tree is not None:
                own = _effects.ModuleFacts(name, tree, lambda module, level: index.absolute(name, module, level),
                                           index.effects, index.compiler, index.platform_test)
            self._project = (index, own)
        return self._project

    def compiler_kind(self, func: cst.BaseExpression) -> Optional[str]:
        """How the callee ``func`` compiles what it is given when it is a function (or
        class) of the project that does: "call", "class" or "factory"
        (``effects.ModuleFacts.compilers``); None otherwise."""
        spelled = dotted_name(func)
        if spelled is None:
            return None
        if spelled in self._compiler_kinds:
            return self._compiler_kinds[spelled]
        self._compiler_kinds[spelled] = None
        index, own = self._project_facts()
        kind = None
        if own is not None:
            root, _, rest = spelled.partition(".")
            if not rest and root not in own.imports:
                kind = own.compiler(root)
            else:
                full = own.resolve(_cst_to_ast(spelled))
                if full is not None and full.split(".", 1)[0] not in ("torch", "functools", "builtins"):
                    kind = index.compiler(full)
        self._compiler_kinds[spelled] = kind
        return kind

    def project_compile_call(self, call: cst.Call) -> bool:
        """A call that compiles its first argument through a project helper:
        ``maybe_compile(model)``, ``CompiledWrapper(Model())``, ``make_compiler(**kw)(fn)``."""
        if "compile" not in self.text:
            return False
        func = call.func
        if isinstance(func, cst.Call):
            return self.compiler_kind(func.func) == "factory"
        return self.compiler_kind(func) == "call"

    def _mark_project_decorated(self) -> None:
        """Functions and classes decorated with a project decorator that compiles: a
        function's own code, a class's ``forward`` (or ``__call__``)."""
        if "compile" not in self.text or self.ctx.facts is None:
            return
        for scope in self.all_functions:
            if scope.compiled_line is None and not scope.island:
                for decorator in scope.node.decorators:
                    if self._compiling_decorator(decorator, for_class=False):
                        scope.compiled_line = self.line(decorator)
                        break
        for cls in self.all_classes:
            for decorator in cls.node.decorators:
                if self._compiling_decorator(decorator, for_class=True):
                    cls.compiled_line = self.line(decorator)
                    break

    def _compiling_decorator(self, decorator: cst.Decorator, for_class: bool) -> bool:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            return self.compiler_kind(expr.func) == "factory"
        kind = self.compiler_kind(expr)
        return kind == "call" or (for_class and kind == "class")

    def callee_effects(self, func: cst.BaseExpression) -> _effects.Effects:
        """What calling ``func`` does when it is a function of another module of the project
        (``effects.Effects``: an untraceable call in its body, through its calls)."""
        spelled = dotted_name(func)
        if spelled is None:
            return _effects.NONE
        found = self._callee_effects.get(spelled)
        if found is None:
            found = _effects.NONE
            index, own = self._project_facts()
            if own is not None:
                root = spelled.partition(".")[0]
                if root in own.imports:
                    full = own.resolve(_cst_to_ast(spelled))
                    if full is not None and full.split(".", 1)[0] not in ("torch", "functools", "builtins"):
                        found = index.effects(full)
            self._callee_effects[spelled] = found
        return found

    def ctypes_library(self, func: cst.BaseExpression) -> bool:
        """``lib.fn`` where ``lib`` is a module-level name bound to a ctypes library."""
        if self._libraries is None:
            _index, own = self._project_facts()
            self._libraries = own.libraries if own is not None else set()
        spelled = dotted_name(func)
        return spelled is not None and "." in spelled and spelled.split(".", 1)[0] in self._libraries

    def compiled_callee(self, func: cst.BaseExpression, scope: Optional[Scope]) -> Optional[int]:
        """The line where the callee ``func`` was compiled, when it is a compiled callable."""
        if isinstance(func, cst.Call) and self.qnames(func.func) & COMPILE_NAMES:
            return self.line(func)  # torch.compile(f)(x)
        if isinstance(func, cst.Name):
            current = scope
            while current is not None:
                if func.value in current.compiled_names:
                    return current.compiled_names[func.value]
                if func.value in self.values(current):
                    return None  # bound here to something else
                if func.value in current.funcs:
                    return current.funcs[func.value].compiled_line
                current = current.parent
            return None
        if isinstance(func, cst.Attribute) and self.is_self(func.value, scope):
            cls = self.self_class(scope)
            if cls is not None:
                if func.attr.value in cls.compiled_attrs:
                    return cls.compiled_attrs[func.attr.value]
                target = self.method(cls, func.attr.value)
                if target is not None:
                    return target.compiled_line
        return None

    # -- regions ----------------------------------------------------------------------------
    def _capture_regions(self) -> List[Region]:
        regions = []
        for scope, node in self.capture_withs:
            line = self.line(node)
            body = node.body
            trailing: Dict[int, cst.CSTNode] = {}
            if isinstance(body, cst.IndentedBlock):
                # the run of ``torch.cuda.synchronize()`` statements that ends the block, when
                # other statements come before it (an empty block would not parse)
                for stmt in reversed(body.body):
                    if (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                            and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call)
                            and self.qnames(stmt.body[0].value.func) & SYNC_NAMES):
                        trailing[id(stmt.body[0].value)] = stmt
                    else:
                        break
                if len(trailing) == len(body.body):
                    trailing = {}
            statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
            regions.append(Region("capture", line, "with", scope, nodes=statements, start=self.offset(node),
                                  trailing_syncs=trailing, with_node=node))
        for scope, call in self.capture_begins:
            nodes = self._between_begin_end(scope, call)
            if nodes is None:
                continue
            line = self.line(call)
            regions.append(Region("capture", line, "capture_begin", scope, nodes=nodes, start=self.offset(call)))
        for scope, call in self.graphed_calls:
            if not call.args:
                continue
            first = call.args[0].value
            items = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [first]
            entries: List[Scope] = []
            for item in items:
                targets = self.resolve_callee(item, scope)
                if isinstance(item, cst.Call):  # make_graphed_callables(Model(), ...)
                    targets = [t for c in self._sorted(self.classes_of(item, scope)) for t in self.call_targets(c)]
                entries.extend(t for t in targets if t not in entries)
            if entries:
                line = self.line(call)
                regions.append(Region("capture", line, "make_graphed_callables", scope, entries=entries,
                                      chain_includes_entry=True, start=self.offset(call)))
        return regions

    def _between_begin_end(self, scope: Scope, call: cst.Call) -> Optional[List[cst.CSTNode]]:
        """The statements after ``g.capture_begin()`` up to ``g.capture_end()`` in the same
        block (to the block's end when no ``capture_end`` follows there)."""
        receiver = self.code(call.func.value)
        container = scope.node
        found: Optional[List[cst.CSTNode]] = None

        class _Finder(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                nonlocal found
                if found is not None:
                    return False
                body = getattr(node, "body", None)
                if isinstance(node, (cst.IndentedBlock, cst.Module)) and isinstance(body, (list, tuple)):
                    for index, stmt in enumerate(body):
                        if _statement_calls(stmt, call):
                            rest = []
                            for after in body[index + 1:]:
                                if _ends_capture(after, receiver, analysis):
                                    break
                                rest.append(after)
                            found = rest
                            return False
                return True

        analysis = self
        _walk.visit(container, _Finder())
        return found

    def _compiled_regions(self) -> List[Region]:
        regions = []
        seen: Set[int] = set()
        for target, line in sorted(self.compiled, key=lambda item: item[1]):
            if id(target) in seen:
                continue
            seen.add(id(target))
            conditions = self.compiled_when.get(id(target), {None})
            regions.append(Region("compiled", line, "compile", None, entries=[target],
                                  condition=next(iter(conditions)) if len(conditions) == 1 else None))
        return regions

    # -- the path on which a function is compiled ----------------------------------------------
    def _parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        from libcst.metadata import ParentNodeProvider

        return self.ctx.metadata(ParentNodeProvider).get(node)

    def _site_condition(self, call: cst.Call) -> Optional[str]:
        """``C`` when the compile call only runs under ``if C:`` (``not C`` in its ``else``),
        C a flag (a name or attribute chain); None otherwise."""
        child, node = call, self._parent(call)
        while node is not None and not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            if isinstance(node, cst.If) and child is not node.test:
                flag = _flag(node.test)
                if flag is None:
                    return None
                return flag if child is node.body else _negate(flag)
            child, node = node, self._parent(node)
        return None

    def never_compiled_here(self, region: Region, node: cst.CSTNode) -> bool:
        """Does ``node`` only run on the path where the region's function is not compiled:
        it is compiled under ``if C:`` and ``node`` sits under ``if not C:`` (or the ``else``
        of ``if C:``) in the compiled code?"""
        condition = region.condition
        if condition is None:
            return False
        child, current = node, self._parent(node)
        while current is not None and not isinstance(current, cst.Module):
            if isinstance(current, cst.If) and child is not current.test:
                flag = _flag(current.test)
                if flag is not None:
                    runs_when = flag if child is current.body else _negate(flag)
                    if runs_when == _negate(condition):
                        return True
            child, current = current, self._parent(current)
        return False

    # -- scanning a function or a region's statements ------------------------------------------
    def values(self, scope: Optional[Scope]) -> Dict[str, List[cst.BaseExpression]]:
        """name -> the values plain assignments bind to it in ``scope`` (the resolver's)."""
        if scope is None:
            return {}
        found = self._values.get(id(scope))
        if found is None:
            found = self._values[id(scope)] = self.names.assigned(scope.node)
            params: Set[str] = set()
            if isinstance(scope.node, cst.FunctionDef):
                p = scope.node.params
                for param in (*p.posonly_params, *p.params, *p.kwonly_params):
                    if param.annotation is not None and _is_tensor_annotation(param.annotation.annotation):
                        params.add(param.name.value)
            scope._tensor_params = params
        return found

    def is_tensor(self, expr: cst.BaseExpression, scope: Optional[Scope], depth: int = 0) -> bool:
        """Is ``expr`` (probably) a tensor? Conservative: unknown values are not."""
        if depth > 6:
            return False
        if isinstance(expr, cst.Name):
            values = self.values(scope)
            if scope is not None and expr.value in (scope._tensor_params or ()):
                return True
            return any(self.is_tensor(v, scope, depth + 1) for v in values.get(expr.value, ()))
        if isinstance(expr, cst.Call):
            func = expr.func
            names = self.qnames(func)
            torch_names = [n for n in names if n.startswith("torch.")]
            if torch_names:
                for name in torch_names:
                    if any(name.startswith(ns) and "." not in name[len(ns):] for ns in _TENSOR_NAMESPACES):
                        last = name.rsplit(".", 1)[-1]
                        if last in _NOT_TENSOR_FUNCS or last.startswith(("is_", "get_", "set_", "_")):
                            return False
                        return not (name.count(".") == 1 and last[:1].isupper())  # torch.Size, ...
                return False
            if isinstance(func, cst.Attribute):
                if func.attr.value in _TENSOR_METHODS:
                    return not self._is_module_receiver(func.value)
            return False
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in _NOT_TENSOR_ATTRS:
                return False
            if expr.attr.value in ("T", "mT", "data", "grad", "real", "imag"):
                return self.is_tensor(expr.value, scope, depth + 1)
            return False
        if isinstance(expr, cst.Subscript):
            return self.is_tensor(expr.value, scope, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            return self.is_tensor(expr.left, scope, depth + 1) or self.is_tensor(expr.right, scope, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self.is_tensor(expr.expression, scope, depth + 1)
        if isinstance(expr, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
                return False
            return self.is_tensor(expr.left, scope, depth + 1) or any(
                self.is_tensor(c.comparator, scope, depth + 1) for c in expr.comparisons)
        if isinstance(expr, cst.BooleanOperation):
            return self.is_tensor(expr.left, scope, depth + 1) or self.is_tensor(expr.right, scope, depth + 1)
        return False

    def _is_module_receiver(self, node: cst.CSTNode) -> bool:
        """``np.max`` / ``math.prod``: a method name called on an imported module."""
        if isinstance(node, cst.Name):
            return any(q.source.name == "IMPORT" for q in self.ctx.qualified_names(node))
        return isinstance(node, cst.Attribute) and self._is_module_receiver(node.value)

    def is_bool_mask(self, expr: cst.BaseExpression, scope: Optional[Scope], base: cst.BaseExpression,
                     depth: int = 0) -> bool:
        if depth > 4:
            return False
        if isinstance(expr, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
                return False
            if isinstance(expr.left, cst.Name) and isinstance(base, cst.Name) and expr.left.value == base.value:
                return True  # x[x > 0]
            return self.is_tensor(expr, scope)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self.is_bool_mask(expr.expression, scope, base, depth + 1) or self.is_tensor(expr.expression, scope)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return self.is_bool_mask(expr.left, scope, base, depth + 1) or self.is_bool_mask(expr.right, scope, base, depth + 1)
        if isinstance(expr, cst.Call):
            if self.qnames(expr.func) & _BOOL_FUNCS:
                return True
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _BOOL_METHODS \
                    and not self._is_module_receiver(expr.func.value):
                return True
            return False
        if isinstance(expr, cst.Name):
            return any(self.is_bool_mask(v, scope, base, depth + 1) for v in self.values(scope).get(expr.value, ()))
        return False

    def scan_function(self, scope: Scope) -> ScanResult:
        if scope._scan is None:
            body = scope.node.body
            nodes = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else (body,)
            scope._scan = self.scan(nodes, scope)
        return scope._scan

    def scan(self, nodes: Sequence[cst.CSTNode], scope: Optional[Scope]) -> ScanResult:
        events: List[RegionEvent] = []
        calls: List[Tuple[cst.Call, List[Scope]]] = []
        skip: Set[int] = set()
        stack: List[cst.CSTNode] = list(reversed(self._guarded_block(list(nodes))))
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                continue  # defined here, run elsewhere
            children: Optional[List[cst.CSTNode]] = None
            if isinstance(node, cst.IndentedBlock):
                children = self._guarded_block(list(node.body))
            if isinstance(node, (cst.If, cst.While)):
                polarity = self._guard_polarity(node.test) if isinstance(node, cst.If) else None
                if polarity is not None:
                    # ``if is_compiling():`` body runs in the region, ``else`` does not, and
                    # the reverse for ``if not ...``; a mixed test: neither is followed.
                    children = [node.test]
                    if polarity == "positive":
                        children.append(node.body)
                    elif polarity == "negative" and node.orelse is not None:
                        children.append(node.orelse)
                elif self.is_tensor(node.test, scope) or self._tensor_truth(node.test, scope):
                    events.append(TensorBranch(node.test, keyword="while" if isinstance(node, cst.While) else "if"))
            elif isinstance(node, cst.Call):
                self._classify_call(node, scope, events, skip)
                targets = self.resolve_callee(node.func, scope)
                if targets:
                    calls.append((node, targets))
                elif not (events and events[-1].node is node):
                    found = self.callee_effects(node.func).untraceable
                    if found is not None:
                        events.append(UntraceableCall(node, kind=found.kind, what=found.what,
                                                      through=self.code(node.func), module=found.module,
                                                      line=found.line,
                                                      cached=self.callee_effects(node.func).cached))
            elif isinstance(node, cst.FormattedString):
                if id(node) not in skip and any(self.is_tensor(part.expression, scope) for part in node.parts
                                                if isinstance(part, cst.FormattedStringExpression)):
                    events.append(TensorFormatted(node))
            elif isinstance(node, cst.Subscript):
                if id(node) not in skip:
                    self._classify_subscript(node, scope, events)
            elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, cst.Subscript):
                        skip.add(id(target))  # x[mask] = v is a store, not a dynamic shape
            if children is None:
                children = list(node.children)
            stack.extend(reversed(children))
        return ScanResult(events, calls)

    def _guarded_block(self, statements: List[cst.CSTNode]) -> List[cst.CSTNode]:
        """Statements of a block that run in the region: after ``if is_compiling(): return``
        (a guard whose compiled side leaves the function), the rest runs only in eager code."""
        for index, stmt in enumerate(statements):
            if isinstance(stmt, cst.If) and stmt.orelse is None and _exits(stmt.body) \
                    and self._guard_polarity(stmt.test) == "positive":
                return statements[: index + 1]
        return statements

    def _guard_polarity(self, test: cst.BaseExpression) -> Optional[str]:
        def is_guard(expr) -> bool:
            if isinstance(expr, cst.Call):
                name = dotted_name(expr.func) or ""
                return bool(_GUARD_NAME.search(name)) or any(_GUARD_NAME.search(n) for n in self.qnames(expr.func))
            return False

        if is_guard(test):
            return "positive"
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and is_guard(test.expression):
            return "negative"
        found = False

        class _Any(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                nonlocal found
                found = found or is_guard(node)

        _walk.visit(test, _Any())
        return "mixed" if found else None

    def _tensor_truth(self, test: cst.BaseExpression, scope: Optional[Scope]) -> bool:
        """``if not t:`` / ``if t.any() and ...``: the truth value of a tensor."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.is_tensor(test.expression, scope)
        return False

    def _classify_call(self, node: cst.Call, scope: Optional[Scope], events: List[RegionEvent],
                       skip: Set[int]) -> None:
        func = node.func
        names = self.qnames(func)
        for name in sorted(names):
            kind = _effects.classify(name)
            if kind is not None:
                events.append(UntraceableCall(node, kind=kind, what=name))
                return
        if self.ctypes_library(func):
            events.append(UntraceableCall(node, kind="ctypes", what=dotted_name(func) or ""))
            return
        if isinstance(func, cst.Name) and names == {"builtins.print"}:
            of_tensor = False
            for arg in node.args:
                value = arg.value
                if isinstance(value, cst.FormattedString):
                    skip.add(id(value))
                    if any(self.is_tensor(p.expression, scope) for p in value.parts
                           if isinstance(p, cst.FormattedStringExpression)):
                        of_tensor = True
                        break
                elif self.is_tensor(value, scope):
                    of_tensor = True
                    break
            events.append(PrintCall(node, of_tensor=of_tensor))
            return
        if isinstance(func, cst.Name) and func.value in ("float", "int", "bool", "complex") \
                and names == {f"builtins.{func.value}"}:
            if len(node.args) == 1 and self.is_tensor(node.args[0].value, scope):
                events.append(TensorToPython(node, builtin=func.value))
            return
        if names & SYNC_NAMES:
            events.append(DeviceSynchronize(node))
            return
        if names & (STREAM_NEW_NAMES | STREAM_CM_NAMES):
            if names & STREAM_NEW_NAMES:
                events.append(StreamCreated(node))
            elif node.args and node.args[0].keyword is None and not node.args[0].star:
                events.append(StreamEntered(node, stream=self.code(node.args[0].value)))
            return
        for name in names:
            if name in RNG_NAMES:
                events.append(RngStateCall(node, name=name, op=RNG_NAMES[name]))
                return
            if name in NONZERO_NAMES:
                events.append(DataDependentShape(node, op=name))
                return
            if name == "torch.where" and len(node.args) == 1:
                events.append(DataDependentShape(node, op="torch.where"))
                return
            if name == "torch.repeat_interleave":
                self._repeat_interleave(node, node.args[1:2], events, name, method=False)
                return
            if name in PYDATA_FACTORIES:
                device = keyword(node, "device")
                if device is not None and not _is_cpu_device(device.value):
                    events.append(HostToDeviceCopy(node, from_python_data=True))
                return
        if names & {n for n in names if n.startswith("torch.")}:
            return
        if not isinstance(func, cst.Attribute):
            if isinstance(func, cst.Name) and names <= {"logging." + m for m in LOG_METHODS} and names:
                events.append(LoggingCall(node))
            return
        attr = func.attr.value
        receiver = func.value
        if self._is_module_receiver(receiver):
            if attr in LOG_METHODS and "logging" in {q.split(".")[0] for q in self.qnames(receiver)} | {dotted_name(receiver)}:
                events.append(LoggingCall(node))
            return
        if GENERATOR_METHODS.get(attr) and self._is_cuda_generator(receiver, scope):
            name = f"torch.Generator.{attr}"
            events.append(RngStateCall(node, name=name, op=RNG_NAMES[name]))
        elif attr in ("item", "tolist", "numpy") and not node.args:
            events.append(ScalarRead(node, method=attr))
        elif attr == "cpu":
            events.append(CopyToHost(node))
        elif attr == "to" and _to_device(node) is not None and _is_cpu_device(_to_device(node)):
            events.append(CopyToHost(node, device=_to_device(node)))
        elif attr == "synchronize":
            events.append(StreamSynchronize(node))
        elif attr in ("nonzero", "masked_select", "unique", "unique_consecutive", "argwhere"):
            events.append(DataDependentShape(node, op=attr, method=True))
        elif attr == "repeat_interleave":
            self._repeat_interleave(node, node.args[:1], events, attr, method=True)
        elif attr == "pin_memory":
            events.append(PinMemory(node))
        elif attr in ("cuda", "to"):
            if attr == "to":
                device = _to_device(node)
                if device is None or _is_cpu_device(device):
                    return
            if self._is_cpu_tensor(receiver, scope):
                events.append(HostToDeviceCopy(node))
        elif attr in LOG_METHODS and self._is_logger(receiver, scope) and not self._silenced(receiver, attr, scope):
            events.append(LoggingCall(node))

    def _repeat_interleave(self, node: cst.Call, repeats: Sequence[cst.Arg], events: List[RegionEvent], op: str,
                           method: bool) -> None:
        if keyword(node, "output_size") is not None:
            return
        rep = keyword(node, "repeats")
        value = rep.value if rep is not None else (repeats[0].value if repeats and repeats[0].keyword is None else None)
        if value is not None and _count_like(value):
            return  # a fixed repeat count gives a fixed shape
        events.append(DataDependentShape(node, op=op, method=method))

    def _is_logger(self, receiver: cst.BaseExpression, scope: Optional[Scope]) -> bool:
        name = dotted_name(receiver)
        if name is None:
            if isinstance(receiver, cst.Call):  # logging.getLogger(__name__).info(...)
                return any(n.startswith("logging.") for n in self.qnames(receiver.func))
            return False
        last = name.rsplit(".", 1)[-1]
        if _LOGGER_NAME.search(last):
            return True
        if isinstance(receiver, cst.Name):
            current = scope
            while current is not None:
                for value in self.values(current).get(receiver.value, ()):
                    if isinstance(value, cst.Call) and any(
                            n.startswith("logging.") or n.endswith("get_logger") for n in self.qnames(value.func)):
                        return True
                current = current.parent
        return False

    def _is_cuda_generator(self, expr: cst.BaseExpression, scope: Optional[Scope], depth: int = 0) -> bool:
        """A CUDA ``torch.Generator``: ``torch.cuda.default_generators[i]``, a generator that
        a ``for`` takes from them, ``torch.Generator(device="cuda")``, or a name bound to one."""
        if depth > 3:
            return False
        if isinstance(expr, cst.Subscript):
            return "torch.cuda.default_generators" in self.qnames(expr.value)
        if isinstance(expr, cst.Call):
            if not self.qnames(expr.func) & {"torch.Generator", "torch._C.Generator"}:
                return False
            device = keyword(expr, "device")
            value = device.value if device is not None else (
                expr.args[0].value if expr.args and expr.args[0].keyword is None else None)
            return value is not None and not _is_cpu_device(value)
        if isinstance(expr, cst.Name):
            current = scope
            while current is not None:
                if any(self._is_cuda_generator(v, current, depth + 1)
                       for v in self.values(current).get(expr.value, ())):
                    return True
                for bound in self.names.bindings(current.node).get(expr.value, ()):
                    if isinstance(bound, cst.For) and "torch.cuda.default_generators" in self.qnames(bound.iter):
                        return True
                current = current.parent
        return False

    def size_read(self, node: cst.Subscript) -> bool:
        """``t = x[mask]`` followed by ``t.numel()``, ``t.size(...)``, ``t.shape`` or ``len(t)``
        in the same function (or ``x[mask].numel()`` itself): the data-dependent size reaches
        Python."""
        parent = self._parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr.value in ("numel", "size", "shape"):
            return True
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0].target, cst.Name)):
            return False
        name = re.escape(parent.targets[0].target.value)
        body = parent
        while body is not None and not isinstance(body, (cst.FunctionDef, cst.Module)):
            body = self._parent(body)
        if body is None:
            return False
        return bool(re.search(rf"(?<![\w.]){name}\s*\.\s*(?:numel|size)\s*\(|(?<![\w.]){name}\s*\.\s*shape\b"
                              rf"|\blen\(\s*{name}\s*\)", self.code(body)))

    def _silenced(self, receiver: cst.BaseExpression, attr: str, scope: Optional[Scope]) -> bool:
        """A logger that the file rebinds to a no-op (typically unless a variable is set):
        ``logger.info = lambda *a, **k: None``, ``logger = _NullLogger()`` whose ``info`` does
        nothing (or whose ``__getattr__`` hands out a no-op), ``logger = noop``, or ``logger =
        logging.getLogger(...) if os.environ.get("DEBUG") else _NullLogger()`` (the arm taken
        when the variable is unset, where ``statics`` knows it): the call may do nothing, so it
        is not reported."""
        name = dotted_name(receiver)
        if name is None:
            return False
        current = scope
        while current is not None:
            rebinds = [(dotted_name(target), value) for target, value in current.attribute_assigns]
            rebinds += [(bound, value) for bound, values in self.values(current).items() for value in values]
            for target_name, value in rebinds:
                if target_name == f"{name}.{attr}" and self._is_noop(value, current):
                    return True
                if target_name == name and any(self._noop_object(v, attr, current) for v in self._arms(value)):
                    return True
            current = current.parent
        return False

    def _arms(self, value: cst.BaseExpression) -> List[cst.BaseExpression]:
        """The values a conditional expression may give: the arm taken by default when its test
        is known (``statics.default_value``: no environment variable set), else both."""
        if not isinstance(value, cst.IfExp):
            return [value]
        known, test = default_value(value.test, self.qnames)
        if known:
            return self._arms(value.body if test else value.orelse)
        return self._arms(value.body) + self._arms(value.orelse)

    def _noop_object(self, value: cst.BaseExpression, attr: str, scope: Scope) -> bool:
        """``_NullLogger()``: an instance of a class of the file whose ``attr`` does nothing, or
        whose ``__getattr__`` returns something that does nothing."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
            return False
        cls = self.lookup_class(scope, value.func.value)
        if cls is None:
            return False
        method = self.method(cls, attr)
        if method is not None:
            return _trivial(method.node)
        fallback = self.method(cls, "__getattr__")
        if fallback is None or not isinstance(fallback.node.body, cst.IndentedBlock):
            return False
        returns = [small.value for stmt in fallback.node.body.body if isinstance(stmt, cst.SimpleStatementLine)
                   for small in stmt.body if isinstance(small, cst.Return) and small.value is not None]
        return bool(returns) and all(self._is_noop(r, fallback) for r in returns)

    def _is_noop(self, value: cst.BaseExpression, scope: Scope) -> bool:
        if isinstance(value, cst.Lambda):
            body = value.body
            return (isinstance(body, cst.Name) and body.value == "None") or isinstance(body, cst.Ellipsis)
        if isinstance(value, cst.Name):
            func = self.lookup_func(scope, value.value)
            return func is not None and _trivial(func.node)
        return False

    def _is_cpu_tensor(self, expr: cst.BaseExpression, scope: Optional[Scope], depth: int = 0) -> bool:
        if depth > 4:
            return False
        if isinstance(expr, cst.Call):
            names = self.qnames(expr.func)
            if names & CPU_FACTORIES:
                device = keyword(expr, "device")
                return device is None or _is_cpu_device(device.value)
            if isinstance(expr.func, cst.Attribute):
                if expr.func.attr.value == "cpu":
                    return True
                if expr.func.attr.value in ("pin_memory", "float", "half", "long", "int", "contiguous", "clone"):
                    return self._is_cpu_tensor(expr.func.value, scope, depth + 1)
            return False
        if isinstance(expr, cst.Name) and scope is not None:
            values = self.values(scope).get(expr.value, ())
            return bool(values) and all(self._is_cpu_tensor(v, scope, depth + 1) for v in values)
        return False

    def _classify_subscript(self, node: cst.Subscript, scope: Optional[Scope], events: List[RegionEvent]) -> None:
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and self.is_bool_mask(index.value, scope, node.value):
                events.append(BooleanMaskIndex(node, size_read=self.size_read(node)))
                return

    # -- walking a region ---------------------------------------------------------------------
    def _walk_region(self, region: Region) -> None:
        capture = region.kind == "capture"
        queue: List[Tuple[Scope, Tuple[Scope, ...]]] = []
        visited: Set[int] = set()

        def enqueue(targets: Iterable[Scope], chain: Tuple[Scope, ...]) -> None:
            for target in targets:
                if id(target) in visited:
                    continue
                if not capture and target.island:
                    continue  # @torch.compiler.disable: an eager island
                visited.add(id(target))
                queue.append((target, chain + (target,)))

        if region.nodes:
            result = self.scan(region.nodes, region.scope)
            self._emit(region, result.events, (), region.scope)
            for call, targets in result.calls:
                enqueue(targets, ())
        if region.chain_includes_entry:
            enqueue(region.entries, ())
        else:
            for entry in region.entries:
                if not capture and entry.island:
                    continue
                visited.add(id(entry))
                result = self.scan_function(entry)
                self._emit(region, result.events, (), entry)
                for call, targets in result.calls:
                    enqueue(targets, ())
        index = 0
        while index < len(queue):  # breadth first: a node's first event has the shortest chain
            scope, chain = queue[index]
            index += 1
            result = self.scan_function(scope)
            self._emit(region, result.events, chain, scope)
            for call, targets in result.calls:
                enqueue(targets, chain)

    def _emit(self, region: Region, events: List[RegionEvent], chain: Tuple[Scope, ...],
              scope: Optional[Scope]) -> None:
        """Add a scan's events to ``self.events``, with their region and chain."""
        if region.kind == "capture":
            for event in events:
                self.events.append(replace(event, region=region, via=chain))
            if region.nodes and not chain:
                self._compiled_calls(region, region.nodes, region.scope)
            elif chain:
                self._compiled_calls(region, (), scope, chain)
        else:
            for event in events:
                if not self.never_compiled_here(region, event.node):
                    self.events.append(replace(event, region=region, via=chain))

    def _compiled_calls(self, region: Region, nodes, scope, chain: Tuple[Scope, ...] = ()) -> None:
        """Calls of compiled callables in a capture's code (or in the last function of the chain)."""
        if chain:
            body = chain[-1].node.body
            nodes = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else (body,)
        for call in self.calls_in(nodes):
            line = self.compiled_callee(call.func, scope)
            if line is not None:
                self.events.append(CompiledCall(call, region, chain, compiled_line=line,
                                                warmed_up=self._warmed_up(region, call, chain)))

    def calls_in(self, nodes) -> List[cst.Call]:
        """Every call in ``nodes``, in source order, outside nested functions and classes."""
        found: List[cst.Call] = []
        stack = list(reversed(list(nodes)))
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(node, cst.Call):
                found.append(node)
            stack.extend(reversed(list(node.children)))
        return found

    def _warmed_up(self, region: Region, call: cst.Call, chain: Tuple[Scope, ...]) -> bool:
        """Was the callable (or, through a chain, the chain's first function) called before
        the region begins, in the function that holds the region?"""
        if region.scope is None:
            return False
        wanted = self.code(call.func) if not chain else None
        entry = chain[0] if chain else None
        container = region.scope.node
        body = container.body
        nodes = body if isinstance(body, (list, tuple)) else (
            body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else (body,))
        for other in self.calls_in(nodes):
            if self.offset(other) >= region.start:
                continue
            if wanted is not None and self.code(other.func) == wanted:
                return True
            if entry is not None and entry in self.resolve_callee(other.func, region.scope):
                return True
        return False

    def entered_before(self, scope: Optional[Scope], start: int, stream: str) -> bool:
        """Was ``torch.cuda.stream(<stream>)`` entered before offset ``start``, in the function
        (or module) of ``scope``?"""
        if scope is None:
            return False
        body = scope.node.body
        nodes = body if isinstance(body, (list, tuple)) else (
            body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else (body,))
        for call in self.calls_in(nodes):
            if (self.offset(call) < start and call.args and call.args[0].keyword is None
                    and self.code(call.args[0].value) == stream
                    and self.ctx.may_resolve(call.func, STREAM_CM_NAMES)
                    and self.qnames(call.func) & STREAM_CM_NAMES):
                return True
        return False


def _cst_to_ast(spelled: str) -> ast.AST:
    """The ``ast`` expression of a dotted name."""
    parts = spelled.split(".")
    node: ast.AST = ast.Name(parts[0], ast.Load())
    for part in parts[1:]:
        node = ast.Attribute(node, part, ast.Load())
    return node


def _trivial(function: cst.CSTNode) -> bool:
    """A function whose body does nothing: ``pass``, ``...``, a docstring, ``return [None]``."""
    if not isinstance(function, cst.FunctionDef) or not isinstance(function.body, cst.IndentedBlock):
        return False
    for stmt in function.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        for small in stmt.body:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.Ellipsis,
                                                                         cst.ConcatenatedString)):
                continue
            if isinstance(small, cst.Return) and (small.value is None or (
                    isinstance(small.value, cst.Name) and small.value.value == "None")):
                continue
            return False
    return True


# A comparison and its negation: ``a != b`` is ``not a == b`` (so ``_negate`` pairs them).
_NEGATED_OPS = {cst.NotEqual: "==", cst.NotIn: "in", cst.IsNot: "is", cst.GreaterThanEqual: "<",
                cst.LessThanEqual: ">"}
_PLAIN_OPS = {cst.Equal: "==", cst.In: "in", cst.Is: "is", cst.LessThan: "<", cst.GreaterThan: ">"}
_FLAG_CALLS = frozenset({"isinstance", "hasattr", "callable", "issubclass"})
_CODE = cst.Module(body=[])


def _flag(test: cst.BaseExpression) -> Optional[str]:
    """``args.compile`` / ``not USE_COMPILE``: a flag (a dotted name, or its negation); also a
    comparison (``model_type != "mamba"`` is ``not model_type == "mamba"``) and an
    ``isinstance(model, Mamba)``, as their text: the same text at the compile site and in the
    compiled code is the same decision, made before the compiled call."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _flag(test.expression)
        return None if inner is None else _negate(inner)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        left, right = _operand_text(test.left), _operand_text(target.comparator)
        if left is None or right is None:
            return None
        op = type(target.operator)
        if op in _PLAIN_OPS:
            return f"{left} {_PLAIN_OPS[op]} {right}"
        if op in _NEGATED_OPS:
            return f"not {left} {_NEGATED_OPS[op]} {right}"
        return None
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value in _FLAG_CALLS:
        parts = [_operand_text(a.value) for a in test.args if a.keyword is None and not a.star]
        if len(parts) == len(test.args) and None not in parts:
            return f"{test.func.value}({', '.join(parts)})"
        return None
    return dotted_name(test)


def _operand_text(node: cst.BaseExpression) -> Optional[str]:
    """A comparison's operand as a flag spells it: a dotted name, a literal, a tuple of them."""
    name = dotted_name(node)
    if name is not None:
        return name
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float)) or (
            isinstance(node, cst.Name) and node.value in ("None", "True", "False")):
        return _CODE.code_for_node(node)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        parts = [_operand_text(e.value) for e in node.elements]
        return None if None in parts else "(" + ", ".join(parts) + ")"
    return None


def _negate(flag: str) -> str:
    return flag[4:] if flag.startswith("not ") else "not " + flag


def _exits(block: cst.BaseSuite) -> bool:
    body = block.body
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    return isinstance(last, (cst.Return, cst.Raise, cst.Continue, cst.Break))


def _statement_calls(stmt: cst.CSTNode, call: cst.Call) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Expr) and small.value is call:
                return True
    return False


def _ends_capture(stmt: cst.CSTNode, receiver: str, analysis: RegionAnalysis) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            value = small.value if isinstance(small, cst.Expr) else None
            if (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                    and value.func.attr.value == "capture_end" and analysis.code(value.func.value) == receiver):
                return True
    return False


def _is_tensor_annotation(node: cst.BaseExpression) -> bool:
    name = dotted_name(node)
    return name is not None and name.rsplit(".", 1)[-1] in ("Tensor", "FloatTensor", "LongTensor", "BoolTensor")


def _to_device(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The device argument of ``.to(...)``, when it names one."""
    arg = keyword(call, "device")
    if arg is not None:
        return arg.value
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        value = call.args[0].value
        text = literal_string(value)
        if text is not None:
            return value
        if isinstance(value, cst.Call) and dotted_name(value.func) in ("torch.device", "device"):
            return value
        name = dotted_name(value)
        if name is not None and re.search(r"(?i)(?:^|[._])(?:dev|device)$", name):
            return value
        if isinstance(value, cst.Integer):
            return value
    return None


def _is_cpu_device(value: cst.BaseExpression) -> bool:
    text = literal_string(value)
    if text is None and isinstance(value, cst.Call) and value.args:
        text = literal_string(value.args[0].value)  # torch.device("cpu")
    return text is not None and text.split(":")[0] == "cpu"


class Feeder:
    """Lets the engine's one batched traversal feed the collection pass: the first rule of
    the families that is created for a file forwards its visits here, so the analysis does
    not walk the tree a second time."""

    # the collection pass's visits, and those that make the resolver's tables of names
    _EVENTS = tuple(dict.fromkeys(("visit_ClassDef", "leave_ClassDef", "visit_FunctionDef", "leave_FunctionDef",
                                   "visit_Global", "visit_Assign", "visit_AnnAssign", "visit_For", "visit_With",
                                   "visit_Call") + BindingRecorder.EVENTS))

    def __init__(self, ctx):
        self.ctx = ctx
        self.owner: Optional[object] = None
        self.done = False
        self._records: List[Tuple[str, cst.CSTNode]] = []

    def record(self, event: str, node: cst.CSTNode) -> None:
        self._records.append((event, node))

    def release(self) -> None:
        """Forget the rule that feeds it (which holds it): see ``RegionAnalysis.release``."""
        self.owner = None
        self._records = []

    def adopt(self, analysis: "RegionAnalysis") -> None:
        """Replay the recorded visits into a collector (cheap: no tree walk)."""
        collector = _Collector(analysis)
        for event, node in self._records:
            getattr(collector, event)(node)
        self._records = []


def feeder(ctx, rule) -> Optional[Feeder]:
    """The feeder, when ``rule`` is the one that feeds it (else None)."""
    shared = ctx.shared(SHARED_KEY + ".feeder", Feeder)
    if shared.owner is None:
        shared.owner = rule
        return shared
    return None


def analysis(ctx) -> RegionAnalysis:
    """The file's analysis, computed once and shared by every capture and graph-break rule."""
    def build(context):
        fed = context._cache.get(SHARED_KEY + ".feeder")
        return RegionAnalysis(context, fed if fed is not None and fed.done else None)
    return ctx.shared(SHARED_KEY, build)


class RegionRule:
    """Mixin for the rules of both families: the feeding rule records the visits the
    collection pass needs, and at the end of the module every rule turns the events of the
    file's analysis into its own findings (:meth:`check`, which hands each event of the
    family's region, ``REGION``, to the rule's ``on_event``)."""

    REGION = ""  # the event flag of the family's region: "in_capture" or "in_compiled"

    def __init__(self, context) -> None:
        super().__init__(context)  # type: ignore[call-arg]
        self._init_feeder(context)
        self._reported: Set[int] = set()  # nodes already reported (the first event wins)

    def check(self, found: "RegionAnalysis") -> None:
        """Report this rule's findings from ``found.events`` (a rule may override it to read
        other facts of ``found``)."""
        self.found = found
        for event in found.events:
            if getattr(event, self.REGION) and id(event.node) not in self._reported:
                self.on_event(event)

    def on_event(self, event) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _init_feeder(self, context) -> None:
        self._feeder = feeder(context, self)

    def leave_Module(self, original_node: cst.Module) -> None:
        # leave_Module comes after the whole tree: whichever rule gets here first, the
        # feeder has seen every visit.
        fed = self.context._cache.get(SHARED_KEY + ".feeder")
        if fed is not None and fed.owner is not None:
            fed.done = True
        self.check(analysis(self.context))


def _forward(event: str):
    def forward(self, node: cst.CSTNode) -> None:
        if self._feeder is not None:
            self._feeder.record(event, node)
    forward.__name__ = forward.__qualname__ = event
    return forward


for _event in Feeder._EVENTS:  # the feeding rule records each visit the collection pass takes
    setattr(RegionRule, _event, _forward(_event))
