"""ROC514 triton-shift-out-of-range: a Triton shift whose amount can be negative or at least the bit width.

The rule's documentation is its class's (`rocmport rule ROC514` prints it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from rocmport.analysis import walk as _walk
from rocmport.analysis.needs import Decorator
from rocmport.analysis.syntax import keyword
from rocmport.analysis.triton import KERNEL_DECORATORS, TL, Kernel, TritonAnalysis, int_value, names_in
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonRule, nvidia_only_file

_SHIFTS = (cst.LeftShift, cst.RightShift)
_AUG_SHIFTS = (cst.LeftShiftAssign, cst.RightShiftAssign)
_LOAD = frozenset({TL + "load"})
_STORES = frozenset({TL + "store"})
_WHERE = frozenset({TL + "where"})
_CLAMPS = frozenset({TL + "maximum", TL + "clamp", TL + "abs", TL + "math.max", TL + "math.abs"})
_REDUCTIONS = frozenset(TL + n for n in ("sum", "reduce", "xor_sum", "max", "min", "argmax", "argmin", "cumsum",
                                         "cumprod", "associative_scan", "histogram", "reduce_or"))
_ATOMIC = TL + "atomic_"
_SINKS = _REDUCTIONS | _STORES | frozenset(TL + "atomic_" + n for n in ("add", "or", "xor", "and", "max", "min",
                                                                       "xchg", "cas"))
_INT64 = frozenset({TL + "int64", TL + "uint64"})
_INT32 = frozenset({TL + "int32", TL + "uint32"})

_HEAD = "import triton\nimport triton.language as tl\n\n"


@dataclass(frozen=True)
class _Negative:
    """Where a shift amount can be negative: lanes that a load fills with a negative ``other=``
    (those its ``mask`` leaves out), or a ``tl.where`` arm that is a negative literal."""

    node: cst.CSTNode
    guard: FrozenSet[str]  # names of the mask (condition) whose lanes hold real data
    var: FrozenSet[str]  # the names that carry the negative value


class TritonShiftOutOfRange(TritonRule):
    CODE = "ROC514"
    NAME = "triton-shift-out-of-range"
    SUMMARY = "A Triton shift whose amount can be negative or at least the bit width: AMD and NVIDIA differ."
    NEEDS = Decorator(*KERNEL_DECORATORS)
    WHAT = """
        A `<<` or `>>` in a Triton kernel whose amount can be out of range, where the kernel
        itself shows it: (a) the amount comes (through `%`, `*`, `-`, casts and names) from a
        `tl.load(..., other=-1)` (any negative `other=`) or a `tl.where(c, x, -1)`, and the
        shifted value reaches memory or a reduction on the lanes that hold that negative
        value (a store or atomic whose mask does not exclude them, `tl.sum`, `tl.reduce`,
        ...); or (b) the amount is `x % c` or `x & c` with `c` beyond the bit width of a
        shifted 32-bit value (`1 << (i % 64)`). Not findings: amounts masked into range
        (`& 31`), clamped (`tl.maximum(s, 0)`), a shift inside `tl.where(idx >= 0, ...)` or
        whose result a `tl.where` on the same condition discards, stores masked with the
        load's own mask, and constant amounts (Triton warns about those itself).
        """
    WHY = """
        Triton lowers a shift to LLVM's `shl` / `lshr` / `ashr`, whose result is undefined
        (poison) when the amount is negative or at least the bit width. The backends then
        differ: NVIDIA's `shl.b32` clamps the amount, so a shift by 32 or more, or by a
        negative amount (read as unsigned), gives 0; AMD's `v_lshlrev_b32` uses the amount's
        low 5 bits (CDNA3 ISA), so `1 << 33` is 2 and `1 << -1` is `1 << 31`. rocmport checked
        both ends: Triton 3.9 compiles the same kernel to `shl.b32` for sm_90 and to
        `v_lshlrev_b32` for gfx942, with no range check in either, and on an NVIDIA H200
        (Triton 3.6) `1 << s` gave 0 for s = 32, 33, 63, 64 and -1. Code that relies on
        NVIDIA's 0 (a sentinel index of -1 whose bit "disappears") sets a wrong bit on AMD.

        Triton itself warns only for constant amounts ("This may result in undefined
        behavior", triton-lang/triton#2996, where AMD's shift test had to stop shifting past
        the bit width); ROCm's port had to define the result of such shifts
        (ROCm/triton#57), and JAX's Pallas-on-Triton bitshift test failed on ROCm for the same
        reason (jax-ml/jax#33157). No fixed real-world kernel bug of this shape was found
        outside reserved projects, so the rule reports only what the kernel proves.
        """
    EXAMPLE = _HEAD + (
        "@triton.jit\n"
        "def expert_bits(ids_ptr, bits_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    ids = tl.load(ids_ptr + offs, mask=offs < n, other=-1)\n"
        "    bit = 1 << (ids % 32)\n"
        "    tl.atomic_or(bits_ptr + ids // 32, bit)\n")
    FIX = """
        Display-only. Keep the amount in range on every lane, or discard the lanes where it
        is not: `tl.where(ids >= 0, 1 << (ids % 32), 0)`, mask the store or atomic with the
        load's mask, or shift by `ids & 31` when a wrap-around is what is meant. Which one is
        right depends on what the kernel means by the sentinel, so rocmport does not choose.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        # the lanes with the sentinel never reach memory
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def k(ids_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                m = offs < n
                ids = tl.load(ids_ptr + offs, mask=m, other=-1)
                tl.store(out_ptr + offs, 1 << (ids % 32), mask=m)
            """),
        # guarded by a where on the same value
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def k(ids_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                ids = tl.load(ids_ptr + offs, mask=offs < n, other=-1)
                bit = tl.where(ids >= 0, 1 << (ids % 32), 0)
                tl.atomic_or(out_ptr + tl.maximum(ids, 0) // 32, bit)
            """),
        # masked into range
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def k(ids_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                ids = tl.load(ids_ptr + offs, mask=offs < n, other=-1)
                tl.atomic_or(out_ptr, 1 << (ids & 31))
            """),
        # a non-negative other=, and a shift by a loaded value that the kernel does not bound
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def k(w_ptr, s_ptr, out_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                w = tl.load(w_ptr + offs, mask=offs < 7, other=0)
                tl.store(out_ptr + offs, tl.sum(w >> ((offs % 8) * 4)))
            """),
        # a 64-bit shift by up to 63
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def k(out_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(out_ptr + offs, tl.full((BLOCK,), 1, tl.int64) << (offs % 64))
            """),
        # the hazard in a string; a plain Python function
        Case("""
            import triton
            import triton.language as tl

            DOC = '1 << (ids % 32)'
            """),
        Case("""
            import triton
            import triton.language as tl

            def bits(ids):
                return [1 << (i % 64) for i in ids]
            """),
    )
    INVALID = (
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def expert_bits(ids_ptr, bits_ptr, n, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                ids = tl.load(ids_ptr + offs, mask=offs < n, other=-1)
                bit = 1 << (ids % 32)
                tl.atomic_or(bits_ptr + ids // 32, bit)
            """,
            line=8,
            column=11,
            message=(
                "the shift amount `ids % 32` is negative on the lanes that `tl.load(..., other=-1)` fills (line 7), "
                "and those lanes reach memory or a reduction: a shift by a negative amount is undefined, NVIDIA "
                "gives 0 and AMD shifts by the amount's low bits, so the results differ on ROCm; keep the amount in "
                "range or discard those lanes (`tl.where(ids >= 0, ..., 0)`, or the load's mask on the store)"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def k(ids_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                ids = tl.load(ids_ptr + offs, mask=offs < n, other=-1)
                tl.store(out_ptr, tl.reduce_or(1 << (ids % 32), 0))
            """,
            line=8,
            column=36,
            message=(
                "the shift amount `ids % 32` is negative on the lanes that `tl.load(..., other=-1)` fills (line 7), "
                "and those lanes reach memory or a reduction: a shift by a negative amount is undefined, NVIDIA "
                "gives 0 and AMD shifts by the amount's low bits, so the results differ on ROCm; keep the amount in "
                "range or discard those lanes (`tl.where(ids >= 0, ..., 0)`, or the load's mask on the store)"
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def k(out_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(out_ptr + offs, 1 << (offs % 64))
            """,
            line=7,
            column=30,
            message=(
                "the shift amount `offs % 64` reaches 63, at least the 32-bit width of the shifted value: the result "
                "is undefined, NVIDIA gives 0 and AMD shifts by the amount's low 5 bits, so the results differ on "
                "ROCm; keep the amount below 32 or shift a 64-bit value"
            ),
        ),
    )

    def check(self, a: TritonAnalysis) -> None:
        if nvidia_only_file(self.context):
            return
        for kernel in a.kernels.values():
            if self.skipped(a, kernel.func):
                continue
            _KernelShifts(self, a, kernel).run()


class _KernelShifts:
    """The shifts of one kernel and the values that flow into and out of them."""

    def __init__(self, rule: TritonShiftOutOfRange, a: TritonAnalysis, kernel: Kernel) -> None:
        self.rule = rule
        self.a = a
        self.kernel = kernel
        self.assigned: Dict[str, List[cst.BaseExpression]] = {}
        self.uses: List[Tuple[Set[str], cst.BaseExpression, Optional[str]]] = []  # (names read, expr, target)
        self.shifts: List[Tuple[cst.CSTNode, cst.BaseExpression, cst.BaseExpression]] = []
        self.calls: List[cst.Call] = []

    def run(self) -> None:
        analysis = self

        class _V(cst.CSTVisitor):
            def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                return n is analysis.kernel.func

            def visit_Assign(self, n: cst.Assign) -> None:
                for t in n.targets:
                    if isinstance(t.target, cst.Name):
                        analysis.assigned.setdefault(t.target.value, []).append(n.value)
                        analysis.uses.append((names_in(n.value), n.value, t.target.value))

            def visit_AugAssign(self, n: cst.AugAssign) -> None:
                if isinstance(n.target, cst.Name):
                    combined = cst.BinaryOperation(n.target, cst.BitOr(), n.value)
                    analysis.assigned.setdefault(n.target.value, []).append(combined)
                    analysis.uses.append((names_in(n.value) | {n.target.value}, n.value, n.target.value))
                    if isinstance(n.operator, _AUG_SHIFTS):
                        analysis.shifts.append((n, n.target, n.value))

            def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
                if isinstance(n.operator, _SHIFTS):
                    analysis.shifts.append((n, n.left, n.right))

            def visit_Call(self, n: cst.Call) -> None:
                analysis.calls.append(n)

        _walk.visit(self.kernel.func, _V())
        reported: Set[int] = set()
        for node, value, amount in self.shifts:
            if id(node) in reported or int_value(amount) is not None:
                continue
            message = self._width(value, amount) or self._negative(node, amount)
            if message is not None and not self.rule.skipped(self.a, node):
                reported.add(id(node))
                self.rule.report(node, message, fix=Fix(Applicability.DISPLAY_ONLY,
                                                         "Keep the shift amount in range on every lane"))

    # -- (b) an amount past the bit width ---------------------------------------------------
    def _width(self, value: cst.BaseExpression, amount: cst.BaseExpression) -> Optional[str]:
        width = self._bits(value, set())
        if width != 32:
            return None
        top = self._upper(amount)
        if top is None or top < width:
            return None
        text = self.rule.context.source(amount)
        return (f"the shift amount `{text}` reaches {top}, at least the 32-bit width of the shifted value: the result "
                "is undefined, NVIDIA gives 0 and AMD shifts by the amount's low 5 bits, so the results differ on "
                "ROCm; keep the amount below 32 or shift a 64-bit value")

    def _bits(self, expr: cst.BaseExpression, seen: Set[str]) -> Optional[int]:
        """The bit width of a shifted value where the kernel shows it: a small int literal is
        int32, a cast or a ``tl.full`` says its dtype."""
        value = int_value(expr)
        if value is not None:
            return 32 if -(2 ** 31) <= value < 2 ** 31 else 64
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value == "to" and expr.args:
                return self._dtype_bits(expr.args[0].value)
            names = self.a.qnames(func) if self.a.ctx.may_resolve(func, {TL + "full", TL + "zeros"}) else set()
            if names & {TL + "full", TL + "zeros"}:
                dtype = keyword(expr, "dtype")
                positional = [a for a in expr.args if a.keyword is None]
                index = 2 if TL + "full" in names else 1
                node = dtype.value if dtype is not None else positional[index].value if len(positional) > index else None
                return self._dtype_bits(node) if node is not None else None
        if isinstance(expr, cst.Name) and expr.value not in seen:
            values = self.assigned.get(expr.value, [])
            widths = {self._bits(v, seen | {expr.value}) for v in values}
            return widths.pop() if len(widths) == 1 else None
        return None

    def _dtype_bits(self, node: cst.BaseExpression) -> Optional[int]:
        if not self.a.ctx.may_resolve(node, _INT64 | _INT32):
            return None
        names = self.a.qnames(node)
        return 64 if names & _INT64 else 32 if names & _INT32 else None

    def _upper(self, amount: cst.BaseExpression) -> Optional[int]:
        """The largest value ``x % c`` or ``x & c`` can take, c a literal; None otherwise."""
        if isinstance(amount, cst.BinaryOperation):
            c = int_value(amount.right)
            if c is not None and c > 0:
                if isinstance(amount.operator, cst.Modulo):
                    return c - 1
                if isinstance(amount.operator, cst.BitAnd):
                    return c
        return None

    # -- (a) an amount that a negative sentinel reaches ------------------------------------
    def _negative(self, node: cst.CSTNode, amount: cst.BaseExpression) -> Optional[str]:
        origin = self._origin(amount, set())
        if origin is None or self._discarded(node, origin):
            return None
        text = self.rule.context.source(amount)
        where = self.rule.context.position(origin.node).start.line
        source = "`tl.load(..., other=-1)` fills" if isinstance(origin.node, cst.Call) and \
            self.a.call_is(origin.node, _LOAD) else "`tl.where` fills with a negative value"
        return (f"the shift amount `{text}` is negative on the lanes that {source} (line {where}), and those lanes "
                "reach memory or a reduction: a shift by a negative amount is undefined, NVIDIA gives 0 and AMD "
                "shifts by the amount's low bits, so the results differ on ROCm; keep the amount in range or discard "
                f"those lanes (`tl.where({_first_name(origin)} >= 0, ..., 0)`, or the load's mask on the store)")

    def _origin(self, expr: cst.BaseExpression, seen: Set[str]) -> Optional[_Negative]:
        """Where ``expr`` can be negative because of a sentinel, following names, ``%``,
        ``*``, ``-`` and casts; None when it is masked (``& c``), clamped, or nothing shows it."""
        if isinstance(expr, cst.Name):
            if expr.value in seen:
                return None
            for value in self.assigned.get(expr.value, []):
                found = self._origin(value, seen | {expr.value})
                if found is not None:
                    return _Negative(found.node, found.guard, found.var | {expr.value})
            return None
        if isinstance(expr, cst.BinaryOperation):
            op = expr.operator
            if isinstance(op, (cst.Modulo, cst.Subtract)):
                return self._origin(expr.left, seen)
            if isinstance(op, cst.Multiply):
                return self._origin(expr.left, seen) or self._origin(expr.right, seen)
            return None  # & c, // c, + c, |: in range, or not shown to be negative
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value == "to":
                return self._origin(func.value, seen)
            if self.a.call_is(expr, _LOAD):
                other = keyword(expr, "other")
                positional = [a for a in expr.args if a.keyword is None]
                other_value = other.value if other is not None else positional[2].value if len(positional) > 2 else None
                mask = keyword(expr, "mask")
                mask_value = mask.value if mask is not None else positional[1].value if len(positional) > 1 else None
                if other_value is not None and _negative_literal(other_value):
                    return _Negative(expr, frozenset(names_in(mask_value)) if mask_value is not None else frozenset(),
                                     frozenset())
                return None
            if self.a.call_is(expr, _WHERE) and len(expr.args) >= 3:
                condition = expr.args[0].value
                for arm in (expr.args[1].value, expr.args[2].value):
                    if _negative_literal(arm):
                        return _Negative(expr, frozenset(names_in(condition)), frozenset())
                    found = self._origin(arm, seen)
                    if found is not None and not (names_in(condition) & found.var):
                        return found
                return None
        return None

    def _discarded(self, shift: cst.CSTNode, origin: _Negative) -> bool:
        """Do the lanes with the negative amount never reach memory or a reduction? The
        shift's value is followed through assignments; a ``tl.where`` whose condition reads
        the negative value (or the load's mask) discards them, a store or atomic whose mask
        reads the load's mask excludes them."""
        guards = origin.var | origin.guard
        carried: Set[str] = set()
        target = self._assignment_target(shift)
        if target is not None:
            carried.add(target)
        for _ in range(len(self.uses) + 1):
            grown = False
            for names, expr, name in self.uses:
                if name is not None and name not in carried and names & carried and not self._guarded(expr, guards):
                    carried.add(name)
                    grown = True
            if not grown:
                break
        for call in self.calls:
            if not self._holds(call, shift, carried):
                continue
            names = self.a.qnames(call.func) if self.a.ctx.may_resolve(call.func, _SINKS) else set()
            if names & _REDUCTIONS:
                if not self._guarded(call, guards, inside=shift):
                    return False
            elif names & _STORES or any(n.startswith(_ATOMIC) for n in names):
                mask = keyword(call, "mask")
                positional = [a for a in call.args if a.keyword is None]
                index = 2
                mask_value = mask.value if mask is not None else positional[index].value if len(positional) > index \
                    else None
                if mask_value is not None and names_in(mask_value) & guards:
                    continue
                if self._guarded(call, guards, inside=shift):
                    continue
                return False
        return True

    def _assignment_target(self, node: cst.CSTNode) -> Optional[str]:
        for ancestor in self.a.ancestors(node):
            if isinstance(ancestor, cst.Assign):
                targets = [t.target for t in ancestor.targets]
                return targets[0].value if len(targets) == 1 and isinstance(targets[0], cst.Name) else None
            if isinstance(ancestor, cst.AugAssign):
                return ancestor.target.value if isinstance(ancestor.target, cst.Name) else None
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return None
        return None

    def _holds(self, call: cst.Call, shift: cst.CSTNode, carried: Set[str]) -> bool:
        """Does the call read the shift's value (the shift itself, or a name that carries it)?"""
        values = [a.value for a in call.args if a.keyword is None or a.keyword.value not in ("mask", "other")]
        for value in values:
            if names_in(value) & carried or _contains(value, shift):
                return True
        return False

    def _guarded(self, expr: cst.CSTNode, guards: FrozenSet[str], inside: Optional[cst.CSTNode] = None) -> bool:
        """Is the value inside a ``tl.where`` whose condition reads one of ``guards``?"""
        found = False
        analysis = self.a

        class _V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> bool:
                nonlocal found
                if analysis.call_is(n, _WHERE) and n.args and names_in(n.args[0].value) & guards:
                    found = True
                    return False
                return True

        if inside is not None:
            for ancestor in self.a.ancestors(inside):
                if isinstance(ancestor, cst.Call) and self.a.call_is(ancestor, _WHERE) and ancestor.args \
                        and names_in(ancestor.args[0].value) & guards:
                    return True
                if ancestor is expr:
                    break
        _walk.visit(expr, _V())
        return found


def _negative_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        value = int_value(expr.expression)
        return value is not None and value > 0
    value = int_value(expr)
    return value is not None and value < 0


def _contains(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    found = False

    class _V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nonlocal found
            if node is inner:
                found = True
            return not found

    _walk.visit(outer, _V())
    return found


def _first_name(origin: _Negative) -> str:
    return sorted(origin.var)[0] if origin.var else "x"
