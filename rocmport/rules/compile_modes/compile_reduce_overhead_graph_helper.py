"""ROC106 compile-reduce-overhead-graph-helper: torch.compile(f, mode="reduce-overhead"): keep CUDA graphs on ROCm with a manual-capture helper (opt-in).

The rule's documentation is its class's (`rocmport rule ROC106` prints it).
"""

from __future__ import annotations

import libcst as cst

from rocmport.analysis.names import (
    is_torch_compile,
)
from rocmport.analysis.syntax import dotted_name, keyword, literal_string, mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.prelude import GRAPH_HELPER
from rocmport.rules.base import Case

from .common import CompileCalls

TRAINING_MESSAGE = (
    'mode="reduce-overhead" becomes "default" on ROCm, which gives up its CUDA graphs; `{helper}(...)` cannot '
    "keep them here: {caller}() runs backward on its output, and the helper falls back under autograd; wrap the "
    "whole step (forward, loss, backward, a capturable optimizer's step) in `{helper}` instead"
)
NO_GRAD_SPELLINGS = frozenset({"torch.no_grad", "torch.inference_mode", "no_grad", "inference_mode"})


class _Callers(cst.CSTVisitor):
    """For each function of a file not decorated with ``torch.no_grad()`` /
    ``inference_mode()``: the callables it calls by name (``f``, ``self.f``) and whether it
    runs ``.backward()``."""

    def __init__(self) -> None:
        self.stack: list = []
        self.training: dict = {}  # callee name -> the first function that calls it and runs backward

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append((node, set(), [False]))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        node, callees, backward = self.stack.pop()
        if backward[0] and not any(dotted_name(getattr(d.decorator, "func", d.decorator)) in NO_GRAD_SPELLINGS
                                   for d in node.decorators):
            for name in callees:
                self.training.setdefault(name, node.name.value)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.stack:
            return
        _, callees, backward = self.stack[-1]
        name = dotted_name(node.func)
        if name is not None:
            callees.add(name)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "backward":
            backward[0] = True


class ReduceOverheadGraphHelper(CompileCalls):
    CODE = "ROC106"
    NAME = "compile-reduce-overhead-graph-helper"
    SUMMARY = ('torch.compile(f, mode="reduce-overhead"): keep CUDA graphs on ROCm with a manual-capture'
               " helper (opt-in).")
    DEFAULT_ENABLED = False
    WHAT = """
        A function or module compiled with a literal `mode="reduce-overhead"`:
        `torch.compile(f, mode="reduce-overhead", ...)` (any alias, `model=` too),
        `torch.compile(mode="reduce-overhead")(f)` and the decorator
        `@torch.compile(mode="reduce-overhead")`, also when ROC101 has already gated the mode
        (`"default" if is_rocm else "reduce-overhead"`). Not flagged: a call already wrapped
        in `rocmport_cudagraph(...)` (or a decorator already under `@rocmport_cudagraph`),
        `model.compile(...)` (it compiles in place and returns nothing to wrap),
        `functools.partial(torch.compile, ...)` and `CompileConfig(...)` (the compiled
        callable is made elsewhere), and modes given by expressions (ROC104). Where a
        function of the file calls the compiled callable by the name it is bound to and runs
        `.backward()` (a training step), the finding says where the helper can gain instead
        and wraps nothing. Off by default: enable it with `--extend-select ROC106` and apply
        it with `--unsafe-fixes`.
        """
    WHY = """
        ROC101 makes the call safe on ROCm by compiling with "default", which gives up the
        CUDA graphs that made "reduce-overhead" fast: a launch-bound 12-layer MLP took 460
        us a call with "default" against 159 with "reduce-overhead" (H200, torch 2.11).
        Capturing and replaying the "default"-compiled callable by hand (HIP graphs) works on
        ROCm where inductor's own CUDA graphs do not reliably, and gave 160 us.

        In training the compiled model's outputs require grad, and a captured graph cannot
        hold autograd's state, so the helper runs the compiled model plainly on every call
        (3819 us a step against 2543 with "reduce-overhead", a 12-layer MLP with Adam, H200).
        Around the whole step instead (forward, loss, backward and an optimizer made with
        `capturable=True`, returning the loss detached) it captured one graph: 815 us a step,
        3.1 times faster than "reduce-overhead" (`benchmarks/gpu_helper_checks.py`).
        """
    EXAMPLE = """
        decode_one_token = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)
        """
    FIXED_EXAMPLE = """
        decode_one_token = rocmport_cudagraph(torch.compile(decode_one_token, mode="default" if is_rocm else "reduce-overhead", fullgraph=True))
        """
    FIX = """
        Unsafe. The compiled callable is wrapped in the prelude's `rocmport_cudagraph(...)`
        (`@rocmport_cudagraph` above the decorator) and the mode is gated as ROC101 gates it;
        with ROC101 selected too, the result is the same. On NVIDIA `rocmport_cudagraph`
        returns the compiled callable itself, so that path is unchanged. On ROCm it returns a
        wrapper that warms up, captures one graph per input signature, copies inputs into
        static buffers and replays, falling back to the plain compiled call where a graph
        would be wrong (CPU or non-tensor inputs, autograd, in-place updates of inputs, a
        failed capture, too many signatures); outputs are cloned by default. Why unsafe: on
        ROCm the result is a wrapper, not the `OptimizedModule` (attributes are forwarded,
        `isinstance(..., nn.Module)` is False), and a graph freezes the Python state the
        function reads at capture (globals, flags, module attributes), as inductor's CUDA
        graphs would not. A training step (the compiled callable called where `.backward()`
        runs) gets no edit: the message names the function, where wrapping the whole step
        gains and wrapping the model does not.
        """
    FIX_APPLICABILITY = Applicability.UNSAFE
    VALID = (
        Case("""
            import torch
            f = rocmport_cudagraph(torch.compile(g, mode="default" if is_rocm else "reduce-overhead"))
            """),
        Case("""
            import torch
            model.compile(mode="reduce-overhead")
            """),
        Case("""
            import functools
            import torch
            c = functools.partial(torch.compile, mode="reduce-overhead")
            """),
        Case("""
            import torch
            f = torch.compile(g, mode="max-autotune")
            """),
        Case("""
            import torch
            f = torch.compile(g, mode=cfg.mode)
            """),
        Case("""
            import torch

            @rocmport_cudagraph
            @torch.compile(mode="default" if is_rocm else "reduce-overhead")
            def f(x):
                return x
            """),
        Case("""
            import torch
            if torch.version.hip:
                f = g
            else:
                f = torch.compile(g, mode="reduce-overhead")
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            f = torch.compile(g, mode="reduce-overhead")
            """,
            line=2,
            column=5,
            message=(
                'mode="reduce-overhead" becomes "default" on ROCm, which gives up its CUDA graphs; '
                '`rocmport_cudagraph(...)` captures and replays them by hand there (opt-in)'
            ),
        ),
        Case(
            """
            import torch
            f = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")
            """,
            line=2,
            column=5,
            message=(
                'mode="reduce-overhead" becomes "default" on ROCm, which gives up its CUDA graphs; '
                '`rocmport_cudagraph(...)` captures and replays them by hand there (opt-in)'
            ),
        ),
        Case(
            """
            import torch

            @torch.compile(mode="reduce-overhead", fullgraph=True)
            def f(x):
                return x
            """,
            line=3,
            column=2,
            message=(
                'mode="reduce-overhead" becomes "default" on ROCm, which gives up its CUDA graphs; '
                '`rocmport_cudagraph(...)` captures and replays them by hand there (opt-in)'
            ),
        ),
        Case(
            """
            import torch

            model = torch.compile(net, mode="reduce-overhead")


            def train(batches, opt):
                for x, y in batches:
                    loss = (model(x) - y).square().mean()
                    loss.backward()
                    opt.step()
            """,
            line=3,
            column=9,
            message=TRAINING_MESSAGE.format(helper="rocmport_cudagraph", caller="train"),
        ),
        Case(
            """
            from torch import compile as tc
            f = tc(mode="reduce-overhead")(g)
            """,
            line=2,
            column=5,
            message=(
                'mode="reduce-overhead" becomes "default" on ROCm, which gives up its CUDA graphs; '
                '`rocmport_cudagraph(...)` captures and replays them by hand there (opt-in)'
            ),
        ),
    )

    def check_call(self, call: cst.Call, kind: str) -> None:
        if not is_torch_compile(self, call.func):
            return
        leaves = [leaf for value in self.argument(call, "mode") for leaf in self.mode_leaves(value)
                  if literal_string(leaf) == "reduce-overhead"]
        if len(leaves) != 1:
            return
        leaf = leaves[0]
        gated = self.in_rocm_branch(leaf)
        if gated and not self._gated_by_rocm_fix(leaf):
            return  # a gated form of the user's own: leave it alone
        wrapped = self._wrap_edits(call)
        if wrapped is None:
            return
        node, edits = wrapped
        caller = self._trained_by(call)
        if caller is not None:
            self.report(node, TRAINING_MESSAGE.format(helper=GRAPH_HELPER, caller=caller),
                        fix=Fix(Applicability.DISPLAY_ONLY, f"Wrap the whole training step in `{GRAPH_HELPER}`, "
                                                            "with a capturable optimizer"))
            return
        if not gated:
            edits.append(self.gated_literal_fix(leaf, "default", "").edits[0])
        self.report(
            node,
            'mode="reduce-overhead" becomes "default" on ROCm, which gives up its CUDA graphs;'
            f" `{GRAPH_HELPER}(...)` captures and replays them by hand there (opt-in)",
            fix=Fix(Applicability.UNSAFE, f'Compile with "default" on ROCm and wrap it in `{GRAPH_HELPER}`',
                    tuple(sorted(edits, key=lambda e: (e.start, e.end))), ("gate", "graph_helper")),
        )

    def _trained_by(self, call: cst.Call):
        """The function of this file that calls the compiled callable by the name it is bound
        to (``step = torch.compile(...)``, ``self.step = ...``) and runs ``.backward()``: a
        training step, where the helper would fall back on every call. None: none is seen."""
        parent = self.parent(call)
        if isinstance(parent, cst.Call) and parent.func is call:  # torch.compile(mode=...)(f)
            call, parent = parent, self.parent(parent)
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1):
            return None
        name = dotted_name(parent.targets[0].target)
        if name is None:
            return None
        callers = self.context.shared("roc106-callers", _callers)
        return callers.training.get(name)

    def _gated_by_rocm_fix(self, leaf: cst.BaseExpression) -> bool:
        """``"default" if <ROCm test> else "reduce-overhead"``: ROC101's own output."""
        parent = self.parent(leaf)
        return (isinstance(parent, cst.IfExp) and parent.orelse is leaf
                and literal_string(parent.body) == "default" and mentions_rocm(parent.test, self.context.gate_name))

    @staticmethod
    def _is_helper(node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call):
            node = node.func
        return isinstance(node, cst.Name) and node.value == GRAPH_HELPER

    def _wrap_edits(self, call: cst.Call):
        """(the node reported, edits that wrap the compiled callable), or None: nothing to
        wrap, or already wrapped."""
        has_target = keyword(call, "model") is not None or any(
            a.keyword is None and a.star == "" for a in call.args)
        target: cst.CSTNode = call
        if not has_target:
            parent = self.parent(call)
            if isinstance(parent, cst.Decorator):
                return self._decorator_edits(parent, call)
            if not (isinstance(parent, cst.Call) and parent.func is call and parent.args):
                return None  # a decorator factory kept for later: nothing to wrap here
            target = parent
        arg = self.parent(target)
        if isinstance(arg, cst.Arg) and self._is_helper(self.parent(arg)) and self.parent(arg).args[0] is arg:
            return None
        start, end = self.context.span(target)
        return target, [self.context.edit(start, start, f"{GRAPH_HELPER}("), self.context.edit(end, end, ")")]

    def _decorator_edits(self, decorator: cst.Decorator, call: cst.Call):
        func = self.parent(decorator)
        if not isinstance(func, cst.FunctionDef):
            return None
        index = next(i for i, d in enumerate(func.decorators) if d is decorator)
        if index > 0 and self._is_helper(func.decorators[index - 1].decorator):
            return None
        start, _ = self.context.span(call)
        text = self.context.text
        at = text.rfind("@", 0, start)
        line_start = self.context.lines.line_span(self.context.lines.position(at).row)[0]
        indent = text[line_start:at]
        if at < 0 or indent.strip() or text[at + 1:start].strip():
            return None
        return call, [self.context.edit(at, at, f"@{GRAPH_HELPER}{self.context.newline()}{indent}")]


def _callers(context) -> _Callers:
    found = _Callers()
    context.module.visit(found)
    return found
