"""ROC515 triton-dot-branch-dtype: a `tl.dot` operand whose dtype depends on a compile-time branch.

The rule's documentation is its class's (`rocmport rule ROC515` prints it).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from rocmport.analysis import walk as _walk
from rocmport.analysis.needs import Call, Decorator
from rocmport.analysis.syntax import keyword
from rocmport.analysis.triton import DOT, KERNEL_DECORATORS, TL, Kernel, TritonAnalysis, names_in
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonRule, nvidia_only_file

_DTYPES = frozenset(TL + n for n in ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32",
                                     "float8e4nv", "float8e5", "float8e4b8", "float8e5b16", "float8e4b15", "tfloat32"))
_FILLS = frozenset({TL + "zeros", TL + "full"})

_HEAD = "import triton\nimport triton.language as tl\n\n"
_KERNEL = _HEAD + (
    "@triton.jit\n"
    "def mm(a_ptr, b_ptr, c_ptr, USE_BF16: tl.constexpr):\n"
    "    offs = tl.arange(0, 16)\n"
    "    ptrs = offs[:, None] * 16 + offs[None, :]\n"
    "    b = tl.load(b_ptr + ptrs).to(tl.float16)\n"
    "    if USE_BF16:\n"
    "        a = tl.load(a_ptr + ptrs).to(tl.bfloat16)\n"
    "    else:\n"
    "        a = tl.load(a_ptr + ptrs).to(tl.float16)\n"
    "    tl.store(c_ptr + ptrs, tl.dot(a, b))\n")


class TritonDotBranchDtype(TritonRule):
    CODE = "ROC515"
    NAME = "triton-dot-branch-dtype"
    SUMMARY = "A `tl.dot` operand whose dtype depends on a compile-time branch (off by default)."
    DEFAULT_ENABLED = False
    NEEDS = Decorator(*KERNEL_DECORATORS) & Call(*DOT)
    WHAT = """
        A `tl.dot(a, b)` in a Triton kernel where an operand is assigned on both arms of an
        `if` (or a conditional expression) decided at compile time -- a test of `tl.constexpr`
        parameters and literals -- and the two arms give it different explicit dtypes
        (`.to(tl.bfloat16)` on one, `.to(tl.float16)` on the other; `tl.zeros(..., dtype)`).
        Arms whose dtype the kernel does not state (a descriptor load on one arm, a pointer
        load on the other) are not findings: their dtypes are the launch arguments', which
        rocmport cannot see; nor are branches on run-time values (Triton rejects a type that
        differs between their arms on every backend), nor dots whose operands are cast at the
        call (`tl.dot(a.to(tl.float16), b)`).
        """
    WHY = """
        `tl.dot` requires both operands in one dtype ("Both operands must be same dtype",
        `triton/language/semantic.py`, Triton 3.9), except pairs of fp8 formats. A branch on
        a `tl.constexpr` compiles only the arm the launch selects, so an operand whose dtype
        differs between the arms is a kernel that compiles for one configuration and not
        for the other, or runs its dot in another precision. Where the configuration follows
        the platform (a TMA-descriptor path selected on NVIDIA, a pointer path or an fp8
        format selected on ROCm), the arm ROCm compiles is one that NVIDIA's runs never
        compile.

        Evidence is thin: the issue that asked for this rule describes the failure on ROCm,
        but no public thread or fixed kernel that shows it was found outside reserved
        projects, and rocmport's own check (Triton 3.9, gfx942, gfx950 and sm_90) compiles a
        descriptor load on one arm and a pointer load on the other to the same type when
        the two read the same tensor. So the rule is off by default and reports only dtypes
        the kernel states.
        """
    EXAMPLE = _KERNEL
    FIX = """
        Display-only. Give the operand one dtype on every arm (cast after the `if`, or cast
        at the call: `tl.dot(a.to(b.dtype), b)`), or make the other operand follow it.
        Which dtype is right depends on the kernel's precision, so rocmport does not choose.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def mm(a_ptr, b_ptr, c_ptr, USE_BF16: tl.constexpr):
                offs = tl.arange(0, 16)
                ptrs = offs[:, None] * 16 + offs[None, :]
                b = tl.load(b_ptr + ptrs).to(tl.float16)
                if USE_BF16:
                    a = tl.load(a_ptr + ptrs).to(tl.float16)
                else:
                    a = tl.load(a_ptr + ptrs).to(tl.float16)
                tl.store(c_ptr + ptrs, tl.dot(a, b))
            """),
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def mm(a_ptr, b_ptr, c_ptr, USE_BF16: tl.constexpr):
                offs = tl.arange(0, 16)
                ptrs = offs[:, None] * 16 + offs[None, :]
                b = tl.load(b_ptr + ptrs).to(tl.float16)
                if USE_BF16:
                    a = tl.load(a_ptr + ptrs).to(tl.bfloat16)
                else:
                    a = tl.load(a_ptr + ptrs).to(tl.float16)
                tl.store(c_ptr + ptrs, tl.dot(a.to(tl.float16), b))
            """),
        # a run-time branch: Triton rejects differing types on every backend
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def mm(a_ptr, b_ptr, c_ptr, USE_BF16):
                offs = tl.arange(0, 16)
                ptrs = offs[:, None] * 16 + offs[None, :]
                b = tl.load(b_ptr + ptrs).to(tl.float16)
                if USE_BF16:
                    a = tl.load(a_ptr + ptrs).to(tl.bfloat16)
                else:
                    a = tl.load(a_ptr + ptrs).to(tl.float16)
                tl.store(c_ptr + ptrs, tl.dot(a, b))
            """),
        # a descriptor load on one arm and a pointer load on the other: dtypes not stated
        Case("""
            import triton
            import triton.language as tl

            @triton.jit
            def mm(a_ptr, a_desc, b_ptr, c_ptr, USE_TMA: tl.constexpr):
                offs = tl.arange(0, 16)
                ptrs = offs[:, None] * 16 + offs[None, :]
                b = tl.load(b_ptr + ptrs)
                if USE_TMA:
                    a = a_desc.load([0, 0])
                else:
                    a = tl.load(a_ptr + ptrs)
                tl.store(c_ptr + ptrs, tl.dot(a, b))
            """),
        Case("""
            import triton
            import triton.language as tl

            DOC = 'a = x.to(tl.bfloat16) if USE_BF16 else x.to(tl.float16)'
            """),
    )
    INVALID = (
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def mm(a_ptr, b_ptr, c_ptr, USE_BF16: tl.constexpr):
                offs = tl.arange(0, 16)
                ptrs = offs[:, None] * 16 + offs[None, :]
                b = tl.load(b_ptr + ptrs).to(tl.float16)
                if USE_BF16:
                    a = tl.load(a_ptr + ptrs).to(tl.bfloat16)
                else:
                    a = tl.load(a_ptr + ptrs).to(tl.float16)
                tl.store(c_ptr + ptrs, tl.dot(a, b))
            """,
            line=13,
            column=28,
            message=(
                '`tl.dot` needs both operands in one dtype, and `a` is `tl.bfloat16` on one arm of the compile-time '
                'branch at line 9 and `tl.float16` on the other: the configuration that takes one of them fails to '
                'compile ("Both operands must be same dtype") or runs the dot in another precision; give `a` one '
                'dtype on every arm'
            ),
        ),
        Case(
            """
            import triton
            import triton.language as tl

            @triton.jit
            def mm(x_ptr, b_ptr, c_ptr, FP8: tl.constexpr):
                offs = tl.arange(0, 16)
                ptrs = offs[:, None] * 16 + offs[None, :]
                x = tl.load(x_ptr + ptrs)
                a = x.to(tl.float8e4nv) if FP8 else x.to(tl.float16)
                tl.store(c_ptr + ptrs, tl.dot(a, tl.load(b_ptr + ptrs)))
            """,
            line=10,
            column=28,
            message=(
                '`tl.dot` needs both operands in one dtype, and `a` is `tl.float8e4nv` on one arm of the '
                'compile-time branch at line 9 and `tl.float16` on the other: the configuration that takes one of '
                'them fails to compile ("Both operands must be same dtype") or runs the dot in another precision; '
                'give `a` one dtype on every arm'
            ),
        ),
    )

    def check(self, a: TritonAnalysis) -> None:
        if nvidia_only_file(self.context):
            return
        for kernel in a.kernels.values():
            if self.skipped(a, kernel.func):
                continue
            self._kernel(a, kernel)

    def _kernel(self, a: TritonAnalysis, kernel: Kernel) -> None:
        dots: List[cst.Call] = []
        branches: Dict[str, List[Tuple[cst.CSTNode, cst.BaseExpression, cst.BaseExpression]]] = {}
        rule = self

        class _V(cst.CSTVisitor):
            def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                return n is kernel.func

            def visit_Call(self, n: cst.Call) -> None:
                if a.call_is(n, DOT):
                    dots.append(n)

            def visit_If(self, n: cst.If) -> None:
                if not isinstance(n.orelse, cst.Else) or not rule._compile_time(n.test, kernel):
                    return
                left, right = _last_assignments(n.body), _last_assignments(n.orelse.body)
                for name in left.keys() & right.keys():
                    branches.setdefault(name, []).append((n, left[name], right[name]))

            def visit_Assign(self, n: cst.Assign) -> None:
                value = n.value
                if isinstance(value, cst.IfExp) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name) \
                        and rule._compile_time(value.test, kernel):
                    branches.setdefault(n.targets[0].target.value, []).append((n, value.body, value.orelse))

        _walk.visit(kernel.func, _V())
        if not dots or not branches:
            return
        for dot in dots:
            for arg in dot.args[:2]:
                if not isinstance(arg.value, cst.Name) or arg.value.value not in branches:
                    continue
                name = arg.value.value
                for where, left, right in branches[name]:
                    first, second = self._dtype(a, left), self._dtype(a, right)
                    if first is None or second is None or first == second:
                        continue
                    if self.skipped(a, dot):
                        return
                    line = self.context.position(where).start.line
                    self.report(dot, f"`tl.dot` needs both operands in one dtype, and `{name}` is `{_short(first)}` on "
                                     f"one arm of the compile-time branch at line {line} and `{_short(second)}` on the "
                                     "other: the configuration that takes one of them fails to compile (\"Both "
                                     "operands must be same dtype\") or runs the dot in another precision; give "
                                     f"`{name}` one dtype on every arm",
                                fix=Fix(Applicability.DISPLAY_ONLY, "Give the operand one dtype on every arm"))
                    break

    def _compile_time(self, test: cst.BaseExpression, kernel: Kernel) -> bool:
        """A test of ``tl.constexpr`` parameters and literals only."""
        names = names_in(test)
        return bool(names) and names <= set(kernel.constexprs) | {"True", "False", "None"}

    def _dtype(self, a: TritonAnalysis, expr: cst.BaseExpression) -> Optional[str]:
        """The dtype an expression states: ``x.to(tl.X)``, ``tl.zeros(shape, tl.X)``."""
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value == "to" and expr.args:
                return self._named_dtype(a, expr.args[0].value)
            if a.call_is(expr, _FILLS):
                dtype = keyword(expr, "dtype")
                positional = [x for x in expr.args if x.keyword is None]
                index = 2 if a.call_is(expr, {TL + "full"}) else 1
                node = dtype.value if dtype is not None else positional[index].value if len(positional) > index else None
                return self._named_dtype(a, node) if node is not None else None
        return None

    def _named_dtype(self, a: TritonAnalysis, node: cst.BaseExpression) -> Optional[str]:
        if not a.ctx.may_resolve(node, _DTYPES):
            return None
        found = a.qnames(node) & _DTYPES
        return sorted(found)[0] if found else None


def _last_assignments(body: cst.BaseSuite) -> Dict[str, cst.BaseExpression]:
    """name -> the value the block assigns it last (plain ``name = value`` statements)."""
    out: Dict[str, cst.BaseExpression] = {}
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine):
            for name in _bound_in(statement):
                out.pop(name, None)  # bound again in a nested block: not a plain last value
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                out[small.targets[0].target.value] = small.value
    return out


def _bound_in(node: cst.CSTNode) -> Set[str]:
    found: Set[str] = set()

    class _V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            if isinstance(n.target, cst.Name):
                found.add(n.target.value)

    _walk.visit(node, _V())
    return found


def _short(dtype: str) -> str:
    return "tl." + dtype[len(TL):] if dtype.startswith(TL) else dtype
