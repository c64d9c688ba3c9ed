"""Per-file analysis of Triton kernels, shared by the ROC5xx rules (computed once a file).

It finds the kernels (functions decorated with ``triton.jit`` / ``autotune`` / ``heuristics``
in any spelling), their ``tl.constexpr`` parameters and the extents of their ``tl.arange``
calls, and every place a value reaches a block parameter: launch arguments
(``kernel[grid](..., BLOCK=32)``), ``triton.Config({...})`` in autotune config lists (also
lists held in module constants or built by a function of the file), ``tl.constexpr``
defaults, and module or function constants that flow into a launch. It also decides, for a
1-D block, whether growing the block keeps the kernel's results (every load and store that
the block indexes is masked, the stored values do not depend on the block size) and which
other literals (the grid's) must be rewritten together with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst
from libcst.metadata import ParentNodeProvider

from . import walk as _walk
from .resolve import ScopeBindings
from .syntax import dotted_name, keyword, literal_string, mentions_rocm

JIT_NAMES = frozenset({"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit"})
AUTOTUNE_NAMES = frozenset({"triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune"})
HEURISTICS_NAMES = frozenset({"triton.heuristics", "triton.runtime.heuristics",
                              "triton.runtime.autotuner.heuristics"})
KERNEL_DECORATORS = JIT_NAMES | AUTOTUNE_NAMES | HEURISTICS_NAMES
CONFIG_NAMES = frozenset({"triton.Config", "triton.runtime.Config", "triton.runtime.autotuner.Config"})
CDIV_NAMES = frozenset({"triton.cdiv", "triton.language.cdiv"})
TL = "triton.language."
LOADS = frozenset({TL + "load"})
STORES = frozenset({TL + "store"})
ATOMICS_PREFIX = TL + "atomic_"
# Reductions whose result does not depend on the order of the elements (given the masked
# lanes read a neutral `other=`), and those whose float result depends on it.
EXACT_REDUCTIONS = frozenset(TL + n for n in ("max", "min", "argmax", "argmin", "xor_sum"))
ORDERED_REDUCTIONS = frozenset(TL + n for n in ("sum", "cumsum", "cumprod", "reduce", "associative_scan",
                                                  "dot", "dot_scaled", "histogram"))
EXP_NAMES = frozenset({TL + "exp", TL + "exp2", TL + "math.exp", TL + "math.exp2",
                       TL + "extra.cuda.libdevice.exp", TL + "extra.libdevice.exp",
                       "triton.language.extra.libdevice.exp"})
CLAMPS = frozenset(TL + n for n in ("clamp", "minimum", "maximum", "abs", "where", "math.min", "math.max",
                                    "math.abs"))
HALF_DTYPES = frozenset({TL + "float16", TL + "bfloat16"})
ZEROS = frozenset({TL + "zeros", TL + "full"})
DOT = frozenset({TL + "dot"})
# Calls whose shape arguments must be powers of two (``extent_uses``), and the tensor methods
# that take a shape.
_SHAPE_FUNCTIONS = frozenset(TL + n for n in ("zeros", "full", "reshape", "broadcast_to", "view", "make_block_ptr",
                                              "make_tensor_descriptor"))
_SHAPE_METHODS = frozenset({"reshape", "broadcast_to", "view"})

# Paths and branches for accelerators that are neither CUDA nor ROCm: out of scope.
# (Kernel libraries with one backend folder per vendor -- FlagGems' ``runtime/backend/_cambricon``,
# ``_kunlunxin``, ``_metax``, ``_mthreads``, ``_iluvatar``, ``_aipu``, ``_hygon``, ``_arm`` -- name them.)
_FOREIGN_PATH = re.compile(r"(?i)(?:^|[/\\_])(?:ascend|npu|xpu|mlu|musa|habana|hpu|neuron|tpu|cambricon|kunlunxin|"
                           r"kunlun|metax|mthreads|iluvatar|aipu|hygon|arm)(?:[/\\_.]|$)")
FOREIGN_TEST = re.compile(r"(?i)(?:^|_)(?:ascend|npu|xpu|mlu|musa|hpu|neuron|tpu)(?:_|$|\d)")

Extent = Union[str, int]  # a constexpr parameter name, or a known integer


def _lazy(value):
    return value() if callable(value) and not isinstance(value, (set, frozenset)) else value


def is_foreign_path(path: str) -> bool:
    return bool(_FOREIGN_PATH.search(path.replace("\\", "/")))


def int_value(node: Optional[cst.CSTNode]) -> Optional[int]:
    if isinstance(node, cst.Integer):
        try:
            return int(node.evaluated_value)
        except (ValueError, TypeError):  # pragma: no cover
            return None
    return None


def names_in(node: cst.CSTNode) -> Set[str]:
    found: Set[str] = set()

    class _V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            _walk.visit(n.value, self)  # `x.dtype`: x, not dtype
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            _walk.visit(n.value, self)  # keyword names are not references
            return False

    _walk.visit(node, _V())
    return found


def next_pow2_at_least_64(value: int) -> int:
    result = 64
    while result < value:
        result *= 2
    return result


@dataclass
class Kernel:
    func: cst.FunctionDef
    name: str
    params: List[str]
    constexprs: Dict[str, cst.Param]
    autotune: Optional[cst.Call] = None
    configs: List[cst.Call] = field(default_factory=list)
    configs_wrapped: bool = False  # the config list goes through a call rocmport cannot see into
    extents: List[Extent] = field(default_factory=list)  # distinct, in order
    unknown_extent: bool = False
    launches: List["Launch"] = field(default_factory=list)

    @property
    def one_d(self) -> Optional[str]:
        """The constexpr parameter that is the only ``tl.arange`` extent, if there is one."""
        if len(self.extents) == 1 and isinstance(self.extents[0], str) and not self.unknown_extent:
            return self.extents[0]
        return None

    @property
    def dims(self) -> List[Extent]:
        return self.extents


@dataclass
class Launch:
    call: cst.Call
    kernel: Kernel
    grid: cst.BaseExpression
    args: Dict[str, cst.BaseExpression]  # parameter name -> expression passed
    scope: cst.CSTNode


@dataclass
class Site:
    """One place a value for a kernel parameter is written."""

    node: cst.Integer  # the literal that holds the value
    value: int
    kind: str  # "launch", "config", "default", "constant"
    kernel: Kernel
    param: str
    via: Optional[cst.CSTNode] = None  # the launch or Config call that hands the value over
    const_name: Optional[str] = None


class TritonAnalysis:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.module: cst.Module = ctx.module
        self.foreign_file = is_foreign_path(ctx.path)
        self._scope_cache: Dict[int, Dict[str, List[cst.CSTNode]]] = {}
        self._scopes: Optional[ScopeBindings] = None
        self.kernels: Dict[str, Kernel] = {}
        self.kernel_funcs: Dict[int, Kernel] = {}
        self.configs: List[cst.Call] = []  # every triton.Config call in the file
        self.launches: List[Launch] = []
        self.subscript_calls: List[cst.Call] = []
        if self.foreign_file:
            return
        self._collect()

    # -- metadata, resolved on first use -------------------------------------------------
    @property
    def _parents(self):
        return self.ctx.metadata(ParentNodeProvider)

    # -- names and tree helpers ----------------------------------------------------------
    def qnames(self, node: cst.CSTNode) -> Set[str]:
        return {q.name for q in self.ctx.qualified_names(node)}

    def is_(self, node: cst.CSTNode, names) -> bool:
        # Resolve names only for nodes that could end in one of ``names`` (cheap gate).
        return self.ctx.may_resolve(node, names) and bool(self.qnames(node) & names)

    def call_is(self, node: cst.CSTNode, names) -> bool:
        return isinstance(node, cst.Call) and self.is_(node.func, names)

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return _lazy(self._parents.get(node)) if node in self._parents else None

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        return self.scopes.scope_of(node)

    def in_foreign_branch(self, node: cst.CSTNode) -> bool:
        """Code in a function or class named for an accelerator that is neither CUDA nor ROCm
        (``npu_forward``); a branch on such a test (``if is_npu():``) is the platform
        analysis' (``Rule.in_rocm_branch``)."""
        return any(isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and FOREIGN_TEST.search(ancestor.name.value)
                   for ancestor in self.ancestors(node))

    # -- constants ----------------------------------------------------------------------
    @property
    def scopes(self) -> ScopeBindings:
        """The file's bindings per scope (``rocmport.analysis.resolve``)."""
        if self._scopes is None:
            self._scopes = ScopeBindings(self.module, self.parent)
        return self._scopes

    def release(self) -> None:
        """Drop everything (the bindings hold this analysis' ``parent``; the kernels and their
        launches hold each other and the trees): a visitor class made in a call, itself a
        cycle, may hold this analysis (``RuleContext.release``)."""
        for kernel in self.kernels.values():
            kernel.launches.clear()
        vars(self).clear()

    def bindings(self, scope: cst.CSTNode) -> Dict[str, List[cst.CSTNode]]:
        """name -> the values bound to it directly in ``scope`` (``ScopeBindings.bindings``)."""
        return self.scopes.bindings(scope)

    def resolve(self, name: str, at: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The one value bound to ``name`` where ``at`` is (``ScopeBindings.resolve``)."""
        return self.scopes.resolve(name, at)

    def constant(self, expr: cst.BaseExpression) -> Tuple[Optional[cst.Integer], Optional[str]]:
        """(the integer literal, the constant's name) that ``expr`` stands for."""
        if isinstance(expr, cst.Integer):
            return expr, None
        if isinstance(expr, cst.Name):
            value = self.resolve(expr.value, expr)
            if isinstance(value, cst.Integer):
                return value, expr.value
        return None, None

    # -- collection -----------------------------------------------------------------------
    def _collect(self) -> None:
        analysis = self

        class _V(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                analysis._maybe_kernel(node)

            def visit_Call(self, node: cst.Call) -> None:
                if analysis.call_is(node, CONFIG_NAMES):
                    analysis.configs.append(node)
                if isinstance(node.func, cst.Subscript):
                    analysis.subscript_calls.append(node)

        _walk.visit(self.module, _V())
        for call in self.subscript_calls:
            kernel_expr = call.func.value
            if not isinstance(kernel_expr, cst.Name):
                continue
            kernel = self.kernels.get(kernel_expr.value)
            if kernel is None or len(call.func.slice) != 1:
                continue
            slice_ = call.func.slice[0].slice
            if not isinstance(slice_, cst.Index):
                continue
            args: Dict[str, cst.BaseExpression] = {}
            if any(a.star for a in call.args):
                continue
            positional = [a for a in call.args if a.keyword is None]
            for pname, arg in zip(kernel.params, positional):
                args[pname] = arg.value
            for arg in call.args:
                if arg.keyword is not None:
                    args[arg.keyword.value] = arg.value
            launch = Launch(call, kernel, slice_.value, args, self.scope_of(call))
            kernel.launches.append(launch)
            self.launches.append(launch)

    def _maybe_kernel(self, func: cst.FunctionDef) -> None:
        autotune = None
        is_kernel = False
        for deco in func.decorators:
            expr = deco.decorator
            target = expr.func if isinstance(expr, cst.Call) else expr
            names = self.qnames(target) if self.ctx.may_resolve(target, _DECORATOR_LAST) else set()
            if names & KERNEL_DECORATORS:
                is_kernel = True
            if names & AUTOTUNE_NAMES and isinstance(expr, cst.Call):
                autotune = expr
        if not is_kernel:
            return
        params = [p.name.value for p in func.params.params]
        constexprs = {}
        for p in list(func.params.params) + list(func.params.kwonly_params):
            if p.annotation is not None and self._is_constexpr(p.annotation.annotation):
                constexprs[p.name.value] = p
        kernel = Kernel(func, func.name.value, params, constexprs, autotune)
        if autotune is not None:
            configs_arg = keyword(autotune, "configs")
            if configs_arg is None and autotune.args and autotune.args[0].keyword is None:
                configs_arg = autotune.args[0]
            if configs_arg is not None:
                kernel.configs, kernel.configs_wrapped = self._configs_of(configs_arg.value, depth=0)
        self._extents(kernel)
        self.kernels[kernel.name] = kernel
        self.kernel_funcs[id(func)] = kernel

    def _is_constexpr(self, annotation: cst.BaseExpression) -> bool:
        if self.is_(annotation, {TL + "constexpr", "triton.language.core.constexpr"}):
            return True
        name = dotted_name(annotation)
        return bool(name) and name.split(".")[-1] == "constexpr"

    def _configs_of(self, expr: cst.BaseExpression, depth: int) -> Tuple[List[cst.Call], bool]:
        """triton.Config calls that an autotune ``configs=`` expression stands for."""
        found: List[cst.Call] = []
        wrapped = False
        if depth > 3:
            return found, True
        if isinstance(expr, cst.Name):
            value = self.resolve(expr.value, expr)
            if isinstance(value, cst.FunctionDef):
                return found, True
            if value is not None and not isinstance(value, (cst.Param, cst.ImportAlias)):
                sub, w = self._configs_of(value, depth + 1)
                found.extend(sub)
                wrapped = wrapped or w
                # configs.append(triton.Config(...)) / extend in the same scope
            for call in self._appends(expr.value, expr):
                sub, w = self._configs_of(call, depth + 1)
                found.extend(sub)
            return found, wrapped
        if isinstance(expr, cst.Call) and not self.is_(expr.func, CONFIG_NAMES):
            func_name = expr.func.value if isinstance(expr.func, cst.Name) else None
            target = self.resolve(func_name, expr) if func_name else None
            if isinstance(target, cst.FunctionDef):
                found.extend(self._configs_in(target))
                return found, False
            # an unknown wrapper, e.g. autotune_configs([...]): look inside its arguments
            wrapped = True
        found.extend(self._configs_in(expr))
        return found, wrapped

    def _appends(self, name: str, at: cst.CSTNode) -> List[cst.BaseExpression]:
        scope = self.scope_of(at)
        result: List[cst.BaseExpression] = []

        class _V(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                f = node.func
                if (isinstance(f, cst.Attribute) and f.attr.value in ("append", "extend", "insert")
                        and isinstance(f.value, cst.Name) and f.value.value == name):
                    result.extend(a.value for a in node.args)

        _walk.visit(scope, _V())
        return result

    def _configs_in(self, node: cst.CSTNode) -> List[cst.Call]:
        found: List[cst.Call] = []
        analysis = self

        class _V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                if analysis.call_is(n, CONFIG_NAMES):
                    found.append(n)

        _walk.visit(node, _V())
        return found

    def _extents(self, kernel: Kernel) -> None:
        analysis = self
        extents: List[Extent] = []

        class _V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                if not analysis.call_is(n, {TL + "arange"}):
                    return
                if len(n.args) < 2:
                    kernel.unknown_extent = True
                    return
                start, end = n.args[0].value, n.args[1].value
                extent = analysis._extent(end, kernel)
                if int_value(start) != 0 or extent is None:
                    kernel.unknown_extent = True
                    return
                if extent not in extents:
                    extents.append(extent)

        _walk.visit(kernel.func.body, _V())
        kernel.extents = extents

    def _extent(self, expr: cst.BaseExpression, kernel: Kernel) -> Optional[Extent]:
        if isinstance(expr, cst.Integer):
            return int_value(expr)
        if isinstance(expr, cst.Name):
            if expr.value in kernel.constexprs:
                return expr.value
            node, _ = self.constant(expr)
            if node is not None:
                return int_value(node)
        return None

    def extent_uses(self, kernel: Kernel) -> Dict[str, List[Tuple[cst.Call, str]]]:
        """constexpr parameter -> the calls of the kernel that use it as a block extent or a
        tile dimension, in source order: ``tl.arange(0, P)`` ("arange"), and a dimension of
        ``tl.zeros`` / ``tl.full`` shapes, ``reshape`` / ``broadcast_to`` / ``view``,
        ``block_shape=`` of ``tl.make_block_ptr`` / ``tl.make_tensor_descriptor`` ("shape").
        Every such dimension must be a power of two; ``tl.static_range`` and ``range`` take
        any bound and are not uses."""
        key = ("extents", id(kernel.func))
        if key in self._scope_cache:
            return self._scope_cache[key]  # type: ignore[return-value]
        analysis = self
        uses: Dict[str, List[Tuple[cst.Call, str]]] = {}

        def note(expr: Optional[cst.BaseExpression], call: cst.Call, kind: str) -> None:
            if isinstance(expr, cst.Name) and expr.value in kernel.constexprs:
                uses.setdefault(expr.value, []).append((call, kind))

        def dims(expr: Optional[cst.BaseExpression], call: cst.Call) -> None:
            if isinstance(expr, (cst.Tuple, cst.List)):
                for element in expr.elements:
                    note(element.value, call, "shape")
            else:
                note(expr, call, "shape")

        class _V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                positional = [a.value for a in n.args if a.keyword is None and not a.star]
                func = n.func
                if isinstance(func, cst.Attribute) and func.attr.value in _SHAPE_METHODS \
                        and not analysis.ctx.may_resolve(func, _SHAPE_FUNCTIONS | {TL + "arange"}):
                    for value in positional:
                        dims(value, n)
                    return
                if not analysis.ctx.may_resolve(func, _SHAPE_FUNCTIONS | {TL + "arange"}):
                    return
                names = analysis.qnames(func)
                if TL + "arange" in names:
                    end = keyword(n, "end")
                    start = keyword(n, "start")
                    end_value = end.value if end is not None else positional[1] if len(positional) > 1 else None
                    start_value = start.value if start is not None else positional[0] if positional else None
                    if start_value is not None and int_value(start_value) == 0:
                        note(end_value, n, "arange")
                elif names & {TL + "zeros", TL + "full"}:
                    shape = keyword(n, "shape")
                    dims(shape.value if shape is not None else positional[0] if positional else None, n)
                elif names & {TL + "reshape", TL + "broadcast_to", TL + "view"}:
                    shape = keyword(n, "shape")
                    if shape is not None:
                        dims(shape.value, n)
                    for value in positional[1:]:
                        dims(value, n)
                elif names & {TL + "make_block_ptr", TL + "make_tensor_descriptor"}:
                    shape = keyword(n, "block_shape")
                    if shape is not None:
                        dims(shape.value, n)

        _walk.visit(kernel.func.body, _V())
        self._scope_cache[key] = uses  # type: ignore[assignment]
        return uses

    # -- values reaching a parameter ------------------------------------------------------
    def config_dict(self, config: cst.Call) -> Optional[cst.Dict]:
        arg = keyword(config, "kwargs")
        if arg is None and config.args and config.args[0].keyword is None:
            arg = config.args[0]
        if arg is not None and isinstance(arg.value, cst.Dict):
            return arg.value
        return None

    def config_value(self, config: cst.Call, param: str) -> Optional[cst.BaseExpression]:
        d = self.config_dict(config)
        if d is None:
            return None
        for element in d.elements:
            if isinstance(element, cst.DictElement) and literal_string(element.key) == param:
                return element.value
        return None

    def sites(self, kernel: Kernel, param: str) -> List[Site]:
        sites: List[Site] = []
        configured = False
        for config in kernel.configs:
            expr = self.config_value(config, param)
            if expr is None:
                continue
            configured = True
            node, name = self.constant(expr)
            if node is not None:
                sites.append(Site(node, int_value(node), "constant" if name else "config", kernel, param,
                                  config, name))
        launches_pass = True
        for launch in kernel.launches:
            expr = launch.args.get(param)
            if expr is None:
                launches_pass = False
                continue
            node, name = self.constant(expr)
            if node is not None:
                sites.append(Site(node, int_value(node), "constant" if name else "launch", kernel, param,
                                  launch.call, name))
        default = kernel.constexprs.get(param)
        default = default.default if default is not None else None
        if isinstance(default, cst.Integer) and not configured and not (kernel.launches and launches_pass):
            sites.append(Site(default, int_value(default), "default", kernel, param))
        return sites

    def value_of(self, kernel: Kernel, param: str, source: Optional[cst.CSTNode]) -> Optional[int]:
        """The known value of ``param`` for one config or launch (``source``), else its default."""
        expr = None
        if source is not None and self.call_is(source, CONFIG_NAMES):
            expr = self.config_value(source, param)
        elif source is not None:
            for launch in kernel.launches:
                if launch.call is source:
                    expr = launch.args.get(param)
        if expr is None:
            p = kernel.constexprs.get(param)
            expr = p.default if p is not None else None
        if expr is None:
            return None
        node, _ = self.constant(expr)
        return int_value(node)

    # -- safety of growing a 1-D block ----------------------------------------------------
    def mask_problem(self, kernel: Kernel, param: str) -> Optional[str]:
        """Why growing ``param`` could change the kernel's results, or None when every load
        and store it indexes is masked and nothing stored depends on its value."""
        key = ("mask", id(kernel.func), param)
        if key in self._scope_cache:
            return self._scope_cache[key]  # type: ignore[return-value]
        result = self._mask_problem(kernel, param)
        self._scope_cache[key] = result  # type: ignore[assignment]
        return result

    def _mask_problem(self, kernel: Kernel, param: str) -> Optional[str]:
        analysis = self
        shape: Set[str] = {param}  # names whose shape or offsets derive from the block
        value: Set[str] = {param}  # names whose values derive from the block size
        assigns: List[Tuple[List[str], cst.BaseExpression]] = []
        calls: List[cst.Call] = []

        def targets(t: cst.CSTNode) -> List[str]:
            if isinstance(t, cst.Name):
                return [t.value]
            if isinstance(t, (cst.Tuple, cst.List)):
                return [n for e in t.elements for n in targets(e.value)]
            return []

        class _V(cst.CSTVisitor):
            def visit_Assign(self, n: cst.Assign) -> None:
                assigns.append(([x for t in n.targets for x in targets(t.target)], n.value))

            def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
                if n.value is not None:
                    assigns.append((targets(n.target), n.value))

            def visit_AugAssign(self, n: cst.AugAssign) -> None:
                assigns.append((targets(n.target), cst.BinaryOperation(n.target, cst.Add(), n.value)))

            def visit_For(self, n: cst.For) -> None:
                assigns.append((targets(n.target), n.iter))

            def visit_Call(self, n: cst.Call) -> None:
                calls.append(n)

        _walk.visit(kernel.func.body, _V())
        for _ in range(len(assigns) + 1):
            changed = False
            for names, expr in assigns:
                if names_in(expr) & shape and not set(names) <= shape:
                    shape.update(names)
                    changed = True
                if self._value_names(expr) & value and not set(names) <= value:
                    value.update(names)
                    changed = True
            if not changed:
                break
        has_exact_reduction = False
        masked_without_other = False
        for call in calls:
            names = self.qnames(call.func)
            if names & ORDERED_REDUCTIONS:
                return "it sums over the block, so a larger block changes the order of float additions"
            if any(n.startswith(ATOMICS_PREFIX) for n in names):
                return "it uses atomics, whose combined result depends on how work is split"
            if names & EXACT_REDUCTIONS:
                has_exact_reduction = True
            is_load, is_store = bool(names & LOADS), bool(names & STORES)
            if not (is_load or is_store):
                continue
            pointer = call.args[0].value if call.args and call.args[0].keyword is None else None
            ptr_arg = keyword(call, "pointer")
            if ptr_arg is not None:
                pointer = ptr_arg.value
            if pointer is None:
                return "a load or store rocmport cannot read"
            mask = keyword(call, "mask")
            mask_index = 1 if is_load else 2
            positional = [a for a in call.args if a.keyword is None]
            if mask is None and len(positional) > mask_index:
                mask = positional[mask_index]
            boundary = keyword(call, "boundary_check")
            if is_store:
                stored = keyword(call, "value")
                stored = stored.value if stored is not None else (
                    positional[1].value if len(positional) > 1 else None)
                if stored is not None and self._value_names(stored) & value:
                    return f"the values it stores depend on {param}"
            if not (names_in(pointer) & shape):
                continue
            if boundary is not None:
                continue
            if mask is None or isinstance(mask.value, cst.Name) and mask.value.value == "None":
                kind = "load" if is_load else "store"
                return f"a {kind} indexed by {param} has no mask, so a larger block reads or writes out of range"
            if not (names_in(mask.value) & shape):
                return f"a mask does not depend on {param}'s offsets"
            if is_load:
                other = keyword(call, "other")
                if other is None and len(positional) <= 2:
                    masked_without_other = True
        if has_exact_reduction and masked_without_other:
            return "it reduces over masked loads that have no other= value"
        del analysis
        return None

    def _value_names(self, expr: cst.BaseExpression) -> Set[str]:
        """Names ``expr``'s value depends on, not counting what goes through a load's address
        or mask, a ``tl.where`` condition, or a mask argument."""
        found: Set[str] = set()
        analysis = self

        class _V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> bool:
                names = analysis.qnames(n.func)
                if names & LOADS:
                    return False
                if names & {TL + "where"} and n.args:
                    for a in n.args[1:]:
                        _walk.visit(a.value, self)
                    return False
                _walk.visit(n.func, self)
                for a in n.args:
                    if a.keyword is not None and a.keyword.value in ("mask", "other", "axis", "dtype"):
                        continue
                    _walk.visit(a.value, self)
                return False

            def visit_Attribute(self, n: cst.Attribute) -> bool:
                _walk.visit(n.value, self)
                return False

            def visit_Name(self, n: cst.Name) -> None:
                found.add(n.value)

        _walk.visit(expr, _V())
        return found

    # -- the grid ---------------------------------------------------------------------------
    def grid_plan(self, launch: Launch, param: str, site: Site) -> Tuple[bool, List[cst.Integer], str]:
        """Whether the launch's grid follows ``site``'s value once it is rewritten:
        (consistent, other literals to rewrite with it, reason when not)."""
        grid = launch.grid
        if isinstance(grid, cst.Name):
            value = self.resolve(grid.value, launch.call)
            if value is None or isinstance(value, (cst.Param, cst.ImportAlias, cst.For)):
                return False, [], f"its grid `{grid.value}` is not defined where rocmport can see it"
            grid = value
        if isinstance(grid, (cst.Lambda, cst.FunctionDef)):
            if self._reads_meta(grid, param):
                return True, [], ""
            return False, [], f"its grid function does not read {param} from its argument"
        if site.const_name is not None:
            if site.const_name in names_in(grid):
                return True, [], ""
            return False, [], f"its grid does not use {site.const_name}"
        literals = [n for n in _integers(grid) if int_value(n) == site.value]
        if any(int_value(n) == site.value - 1 for n in _integers(grid)):
            return False, [], f"its grid rounds with {site.value - 1}"
        if not literals:
            return False, [], f"its grid does not follow {param}"
        return True, literals, ""

    def _reads_meta(self, func: Union[cst.Lambda, cst.FunctionDef], param: str) -> bool:
        found = False

        class _V(cst.CSTVisitor):
            def visit_SimpleString(self, n: cst.SimpleString) -> None:
                nonlocal found
                if literal_string(n) == param:
                    found = True

        _walk.visit(func, _V())
        return found


def _integers(node: cst.CSTNode) -> List[cst.Integer]:
    found: List[cst.Integer] = []

    class _V(cst.CSTVisitor):
        def visit_Integer(self, n: cst.Integer) -> None:
            found.append(n)

    _walk.visit(node, _V())
    return found


def analysis(ctx) -> TritonAnalysis:
    return ctx.shared("triton", TritonAnalysis)


__all__ = ["TritonAnalysis", "Kernel", "Launch", "Site", "analysis", "int_value", "names_in",
           "next_pow2_at_least_64", "mentions_rocm", "CONFIG_NAMES", "EXP_NAMES", "CLAMPS",
           "HALF_DTYPES", "ZEROS", "DOT", "TL", "CDIV_NAMES"]



_DECORATOR_LAST = KERNEL_DECORATORS | AUTOTUNE_NAMES


# ------------------------------------------------------------------------------------------
# Names for the ROC506-ROC512 rules (Triton code that only NVIDIA compiles, AMD-only options)
# ------------------------------------------------------------------------------------------

# Options only Triton's AMD backend knows (triton/backends/amd/compiler.py, HIPOptions);
# Triton 3.9 raises KeyError for them on NVIDIA.
AMD_ONLY_OPTIONS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")
CUDA_LIBDEVICE = "triton.language.extra.cuda.libdevice"
GENERIC_LIBDEVICE = "triton.language.extra.libdevice"
LIBDEVICE_MODULES = (CUDA_LIBDEVICE, GENERIC_LIBDEVICE, TL + "extra.libdevice", TL + "extra.cuda.libdevice")
INLINE_ASM = frozenset({TL + "inline_asm_elementwise", TL + "core.inline_asm_elementwise"})
# Functions of triton/language/extra/cuda/libdevice.py that triton/language/extra/hip/
# libdevice.py does not define (Triton 3.9.0: 197 CUDA functions, 59 HIP ones; every HIP one
# but fast_tanhf has a CUDA namesake). ``triton.language.extra.libdevice`` resolves to the HIP
# module on AMD, so these fail to compile there. tests/test_triton_more.py re-reads the two
# files of an installed Triton 3.9 and compares.
LIBDEVICE_WITHOUT_HIP = frozenset("""
add_rd add_rn add_ru add_rz brev byte_perm cbrt cospi div_rd div_rn div_ru div_rz double2float_rd
double2float_rn double2float_ru double2float_rz double2hiint double2int_rd double2int_rn double2int_ru
double2int_rz double2ll_rd double2ll_rn double2ll_ru double2ll_rz double2loint double2uint_rd
double2uint_rn double2uint_ru double2uint_rz double2ull_rd double2ull_rn double2ull_ru double2ull_rz
double_as_longlong erfcinv exp10 fast_cosf fast_exp10f fast_log10f fast_log2f fast_logf fast_powf
fast_sinf fast_tanf fdim ffs float2int_rd float2int_rn float2int_ru float2int_rz float2ll_rd
float2ll_rn float2ll_ru float2ll_rz float2uint_rd float2uint_rn float2uint_ru float2uint_rz
float2ull_rd float2ull_rn float2ull_ru float2ull_rz float_as_int float_as_uint fma_rd fma_rn fma_ru
fma_rz hadd hiloint2double int2double_rn int2float_rd int2float_rn int2float_ru int2float_rz
int_as_float jn ll2double_rd ll2double_rn ll2double_ru ll2double_rz ll2float_rd ll2float_rn
ll2float_ru ll2float_rz llround logb longlong_as_double mul24 mul_rd mul_rn mul_ru mul_rz mulhi
norm3d norm4d normcdf normcdfinv rcbrt rcp64h rcp_rd rcp_rn rcp_ru rcp_rz remainder rhadd rhypot
rnorm3d rnorm4d rsqrt_rn sad saturatef scalbn sinpi sqrt_rd sqrt_rn sqrt_ru sqrt_rz sub_rd sub_rn
sub_ru sub_rz tgamma uint2double_rn uint2float_rd uint2float_rn uint2float_ru uint2float_rz
uint_as_float ull2double_rd ull2double_rn ull2double_ru ull2double_rz ull2float_rd ull2float_rn
ull2float_ru ull2float_rz yn
""".split())
# Portable spellings for some of them (triton.language, Triton >= 3.0).
LIBDEVICE_PORTABLE = {
    "sqrt_rn": "tl.sqrt_rn(x)", "div_rn": "tl.div_rn(x, y)", "fma_rn": "tl.fma(x, y, z)",
    "float_as_int": "x.to(tl.int32, bitcast=True)", "int_as_float": "x.to(tl.float32, bitcast=True)",
    "float_as_uint": "x.to(tl.uint32, bitcast=True)", "uint_as_float": "x.to(tl.float32, bitcast=True)",
    "saturatef": "tl.clamp(x, 0.0, 1.0)", "exp10": "tl.exp2(x * 3.321928094887362)",
}
LIBDEVICE_WITHOUT_HIP_NAMES = frozenset(f"{m}.{f}" for m in LIBDEVICE_MODULES for f in LIBDEVICE_WITHOUT_HIP)
