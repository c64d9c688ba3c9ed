"""ROC307 capture-stream-warmup: A CUDA-graph capture on a stream its warm-up did not run on, or a stream made or entered in a capture.

The rule's documentation is its class's (`rocmport rule ROC307` prints it).
"""

from __future__ import annotations

import ast
import re
from typing import List, Optional, Tuple

import libcst as cst
from libcst.metadata import QualifiedNameSource

from rocmport.analysis import regions as _regions
from rocmport.analysis import walk as _walk
from rocmport.analysis.events import (
    RegionEvent,
    StreamCreated,
    StreamEntered,
)
from rocmport.analysis.syntax import dotted_name, keyword
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import CaptureRule

_HIPBLASLT = ("from torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture"
              " fails or hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644,"
              " lightseekorg/tokenspeed#1059)")
# torch's GEMMs: on ROCm they run through hipBLASLt (or hipBLAS), whose per-stream handle is made
# by the first one a stream runs. Scaled-dot-product attention may fall back to its math
# kernel (bmm).
_GEMM_FUNCTIONS = frozenset({f"torch.{n}" for n in (
    "matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "addmv", "mv", "einsum", "tensordot", "inner",
    "chain_matmul", "_scaled_mm", "_scaled_grouped_mm", "_grouped_mm", "_int_mm", "linalg.matmul",
    "linalg.multi_dot", "nn.functional.linear", "nn.functional.bilinear",
    "nn.functional.scaled_dot_product_attention")}
    | {f"torch.ops.aten.{n}" for n in ("mm", "bmm", "addmm", "baddbmm", "matmul", "_scaled_mm", "linear")})
_GEMM_METHODS = frozenset({"matmul", "mm", "bmm", "addmm", "addmm_", "baddbmm", "baddbmm_", "addbmm", "mv",
                           "addmv", "__matmul__", "__rmatmul__"})
# Methods that run whatever a model or an autograd function does: its GEMMs may be among them.
_RUNS_A_MODEL = frozenset({"forward", "__call__", "apply", "generate", "decode", "prefill", "run", "execute"})
_NO_GPU_LIBRARY = frozenset({"print", "len", "range", "isinstance", "list", "tuple", "dict", "set", "min", "max",
                             "sum", "int", "float", "bool", "str", "zip", "enumerate", "getattr", "setattr",
                             "hasattr", "iter", "next", "sorted", "reversed", "any", "all", "abs", "round",
                             "super", "type", "id", "repr", "format", "divmod", "map", "filter"})
# Calls that do no GPU library work: not a warm-up.
_NOT_WARMUP = frozenset({"wait_stream", "record_stream", "synchronize", "copy_", "fill_", "zero_",
                         "capture_begin", "CUDAGraph", "empty_cache"})
_UNSAFE_TEXT = re.compile(r"'''|\"\"\"|\\\r?\n|\\\r|\x0c")


class CaptureStreamWarmup(CaptureRule):
    CODE = "ROC307"
    NAME = "capture-stream-warmup"
    SUMMARY = "A CUDA-graph capture on a stream its warm-up did not run on, or a stream made or entered in a capture."
    WHAT = """
        - `with torch.cuda.graph(g):` without `stream=` (third positional argument): the
          capture runs on torch.cuda.graph's own capture stream, which the warm-up never used.
          `stream=` a stream made inline (`stream=torch.cuda.Stream()`) is reported too.
        - `g.capture_begin()` outside a `with torch.cuda.stream(s):` block, or inside one where
          nothing ran on `s` before it (in that block, or an earlier `with torch.cuda.stream(s):`
          of the same function).
        - `torch.cuda.make_graphed_callables(...)`: before pytorch#187745 it warms up on one
          stream and captures on another.
        - In captured code (and what it calls, as for ROC301): `torch.cuda.Stream()`, a stream
          made there; and `with torch.cuda.stream(s):` in the capture's own block when `s` was
          not entered before the capture in the same function. A stream entered in a function
          the capture calls is not reported: the warm-up calls of that function entered it too.

        The first shape is reported only where the capture may run a torch GEMM, whose
        hipBLASLt handle is what fails: a GEMM (`torch.matmul`, `@`, `F.linear`,
        `torch._scaled_mm`, SDPA), a model or module call (`model(x)`, `.forward(...)`,
        `.apply(...)`), or any call rocmport cannot see into (a parameter, an imported
        function). A capture of the library's own kernels only (`torch.ops.mylib.*`, a Triton
        launch, a collective, elementwise torch ops, functions of the file that do no more) makes
        no hipBLASLt handle and is not reported.

        Not reported: `stream=s` given (the warm-up is assumed to run on `s`) or possibly given
        (`**options`), mentions in strings and comments, and `tf.Graph()` or `networkx`
        look-alikes.
        """
    WHY = """
        From torch 2.12, ROCm's hipBLASLt handles are cached per (device, stream) and created
        lazily, on the first GEMM of a stream (pytorch#179053). Creating one allocates, which is
        not permitted while the stream captures: the capture fails with "operation not
        permitted when stream is capturing" (HIP error 900) or hangs. A warm-up on the current
        stream does not help when the capture runs on another stream: torch.cuda.graph without
        `stream=` uses its own. PyTorch pre-creates the handle of the capturing thread's stream
        in `capture_begin` (pytorch#179892), but not for other threads or auxiliary streams;
        `make_graphed_callables` was fixed to warm up and capture on one stream in
        pytorch#187745, and TransformerEngine#643 made the same change to its own copy. The
        pattern PyTorch's CUDA-graph notes recommend, a warm-up on a side stream that is then
        passed to `torch.cuda.graph(..., stream=)`, avoids all of it and is neutral on NVIDIA.

        The failure, after the capture stream's handle was pre-made: AMD's own fixes of
        June-August 2026 show warm-up on one stream and capture on another failing with HIP
        error 900 or hanging on torch 2.13 (pytorch#187745 for `make_graphed_callables`,
        ROCm/TransformerEngine#644, lightseekorg/tokenspeed#1059); their fix is to warm up on
        the very stream passed as `stream=`. pytorch#179053 is the change that made handles
        per stream; #179892 only pre-makes the capturing thread's own stream's handle.
        """
    EXAMPLE = """
        for _ in range(3):
            y = model(static_x)
        with torch.cuda.graph(g):
            y = model(static_x)
        """
    FIXED_EXAMPLE = """
        side_stream = torch.cuda.Stream()
        side_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side_stream):
            for _ in range(3):
                y = model(static_x)
        torch.cuda.current_stream().wait_stream(side_stream)
        with torch.cuda.graph(g, stream=side_stream):
            y = model(static_x)
        """
    FIX = """
        Safe for `with torch.cuda.graph(...)` without `stream=`, in two shapes:
        - the last compound statement before the capture in its block is
          `with torch.cuda.stream(s):` (a warm-up on `s`; `s` a name not rebound in between):
          `stream=s` is added to the graph call;
        - it is a `for` or `while` loop that runs something the capture runs (a callee spelled
          the same, or the same statement: a loop that only replays another graph is no
          warm-up), and the graph call is spelled
          `<torch.cuda>.graph(...)`: the loop moves into `with torch.cuda.stream(side_stream):`
          (re-indented by one level; loops with multi-line strings, backslash continuations,
          or a `return`, `yield` or `raise`, which would skip the closing wait, are left
          alone), after `side_stream = torch.cuda.Stream()` and
          `side_stream.wait_stream(torch.cuda.current_stream())`, followed by
          `torch.cuda.current_stream().wait_stream(side_stream)`, and `stream=side_stream` is
          added to the graph call (a free name is chosen when `side_stream` is taken).
        This is the documented PyTorch pattern: the streams wait for each other, so the warm-up
        computes the same values in the same order on NVIDIA and ROCm; `stream=` exists since
        torch 1.10 (none of the keywords added in 2.13 is generated). Checked on an H100
        (benchmarks/results/capture_fixture.json): the fixture's replays are bitwise equal
        before and after the fix.

        Everything else is display-only, with the remedy in the message.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        # no torch GEMM in the capture: no hipBLASLt handle is made there
        Case("""
            import torch

            def test_allgather(y_gather, y):
                for _ in range(20):
                    torch.ops.mylib.nccl_allgather(y_gather, y)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    torch.ops.mylib.nccl_allgather(y_gather, y)
            """),
        Case("""
            import torch

            def test_fp8_matmul(x, w, bias):
                def f(x, w, bias):
                    xq, x_scale = torch.ops.mylib.quantize_fp8_per_tensor(x)
                    zq = torch.ops.mylib.f8f8bf16(xq, w, x_scale)
                    if bias is not None:
                        zq += bias
                    return zq

                f(x, w, bias)  # warm-up
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    zq = f(x, w, bias)
            """),
        Case("""
            import torch

            def test_grouped(args, out):
                op = torch.ops.mylib.f8f8bf16_rowwise_grouped
                op(*args)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out.copy_(op(*args))
                    out.mul_(2)
            """),
        Case("""
            import torch
            def f(g, m, x):
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    m(x)
                with torch.cuda.graph(g, stream=s):
                    y = m(x)
            """),
        Case("""
            import torch
            def f(g, m, x):
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    m(x)
                    g.capture_begin()
                    y = m(x)
                    g.capture_end()
            """),
        Case("""
            import torch
            # with torch.cuda.graph(g): y = m(x)
            s = 'g.capture_begin()'
            """),
        # another accelerator's graph (torch.xpu's own graphs, Ascend's NPUGraph): never a
        # capture on ROCm
        Case("""
            import torch

            class XPUGraph(torch._C._XPUGraph):
                def capture_begin(self, pool=None):
                    super().capture_begin(pool=pool)

            class graph:
                def __enter__(self):
                    torch.xpu.synchronize()
                    self.xpu_graph.capture_begin(*self.pool)
            """),
        Case("""
            import torch
            import tensorflow as tf
            def f(m, x):
                with tf.Graph().as_default():
                    y = m(x)
            """),
        Case("""
            import torch
            def f(s, m, x):
                with torch.cuda.stream(s):
                    y = m(x)
                t = torch.cuda.Stream()
            """),
        Case("""
            import torch
            def f(g, m, x, **options):
                for _ in range(3):
                    m(x)
                with torch.cuda.graph(g, **options):
                    y = m(x)
            """),
        Case("""
            import torch
            class M(torch.nn.Module):
                def forward(self, x):
                    with torch.cuda.stream(self.aux):
                        return x @ x
            def f(g, s, m, x):
                with torch.cuda.stream(s):
                    m(x)
                with torch.cuda.graph(g, stream=s):
                    y = m(x)
            """),
    )
    INVALID = (
        # near misses of a GEMM-free capture: a GEMM beside the library's op, a module call, a
        # `.forward`, a function rocmport cannot see into
        Case(
            """
            import torch

            def test_fp8_linear(x, w, s):
                torch.ops.mylib.quantize_fp8_per_tensor(x)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    xq = torch.ops.mylib.quantize_fp8_per_tensor(x)
                    y = torch._scaled_mm(xq, w, scale_a=s, scale_b=s)
            """,
            line=6,
            column=10,
            message=(
                "the capture at line 6 runs on torch.cuda.graph's own stream, not the one the warm-up ran on; from "
                "torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture fails or "
                "hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644, "
                "lightseekorg/tokenspeed#1059): warm up on a side stream and pass it as `stream=`"
            ),
        ),
        Case(
            """
            import torch

            class Runner:
                def capture(self, x):
                    self.fc(x)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        y = self.fc(x)
            """,
            line=7,
            column=14,
            message=(
                "the capture at line 7 runs on torch.cuda.graph's own stream, not the one the warm-up ran on; from "
                "torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture fails or "
                "hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644, "
                "lightseekorg/tokenspeed#1059): warm up on a side stream and pass it as `stream=`"
            ),
        ),
        Case(
            """
            import torch
            import mylib as ml

            def capture(x, scale):
                ml.quantize_fp8(x, scale)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = ml.quantize_fp8(x, scale)
            """,
            line=7,
            column=10,
            message=(
                "the capture at line 7 runs on torch.cuda.graph's own stream, not the one the warm-up ran on; from "
                "torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture fails or "
                "hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644, "
                "lightseekorg/tokenspeed#1059): warm up on a side stream and pass it as `stream=`"
            ),
        ),
        Case(
            """
            import torch

            def capture(layer, x, w):
                layer.forward(x, w)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = layer.forward(x, w)
            """,
            line=6,
            column=10,
            message=(
                "the capture at line 6 runs on torch.cuda.graph's own stream, not the one the warm-up ran on; from "
                "torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture fails or "
                "hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644, "
                "lightseekorg/tokenspeed#1059): warm up on a side stream and pass it as `stream=`"
            ),
        ),
        Case(
            """
            import torch
            from mylib import fused_op

            def capture(x):
                fused_op(x)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = fused_op(x)
            """,
            line=7,
            column=10,
            message=(
                "the capture at line 7 runs on torch.cuda.graph's own stream, not the one the warm-up ran on; from "
                "torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture fails or "
                "hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644, "
                "lightseekorg/tokenspeed#1059): warm up on a side stream and pass it as `stream=`"
            ),
        ),
        Case(
            """
            import torch
            def f(g, m, x):
                for _ in range(3):
                    y = m(x)
                with torch.cuda.graph(g):
                    y = m(x)
            """,
            expected="""
            import torch
            def f(g, m, x):
                side_stream = torch.cuda.Stream()
                side_stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side_stream):
                    for _ in range(3):
                        y = m(x)
                torch.cuda.current_stream().wait_stream(side_stream)
                with torch.cuda.graph(g, stream=side_stream):
                    y = m(x)
            """,
            line=3,
            column=5,
            message=(
                "the capture at line 5 runs on torch.cuda.graph's own stream, not the one the warm-up ran on; from "
                "torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture fails or "
                "hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644, "
                "lightseekorg/tokenspeed#1059): warm up on a side stream and pass it as `stream=`"
            ),
        ),
        Case(
            """
            import torch
            def f(g, s, m, x):
                with torch.cuda.stream(s):
                    m(x)
                torch.cuda.current_stream().wait_stream(s)
                with torch.cuda.graph(g):
                    y = m(x)
            """,
            expected="""
            import torch
            def f(g, s, m, x):
                with torch.cuda.stream(s):
                    m(x)
                torch.cuda.current_stream().wait_stream(s)
                with torch.cuda.graph(g, stream=s):
                    y = m(x)
            """,
            line=6,
            column=10,
            message=(
                "the capture at line 6 runs on torch.cuda.graph's own stream, not the one the warm-up ran on; from "
                "torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture fails or "
                "hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644, "
                "lightseekorg/tokenspeed#1059): warm up on a side stream and pass it as `stream=`"
            ),
        ),
        Case(
            """
            import torch
            def f(g, m, x):
                g.capture_begin()
                y = m(x)
                g.capture_end()
            """,
            line=3,
            column=5,
            message=(
                "`g.capture_begin()` (line 3) captures on the current stream, on which no side-stream warm-up ran; "
                "from torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture "
                "fails or hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644, "
                "lightseekorg/tokenspeed#1059): warm up in `with torch.cuda.stream(s):` and capture in the same block"
            ),
        ),
        Case(
            """
            import torch
            def f(g, m, x):
                y = torch.cuda.make_graphed_callables(m, (x,))
            """,
            line=3,
            column=9,
            message=(
                "`make_graphed_callables` (line 3) warms up on one stream and captures on another in torch builds "
                "without pytorch#187745; from torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and "
                "making it during capture fails or hangs (pytorch#179053; failures: pytorch#187745, "
                "ROCm/TransformerEngine#644, lightseekorg/tokenspeed#1059): use a torch with that fix, or capture by "
                "hand: warm up on a side stream `s` and capture with `torch.cuda.graph(g, stream=s)`"
            ),
        ),
        # the loop before the capture replays another graph: no warm-up of what is captured,
        # so nothing is moved onto a side stream (reported, not fixed)
        Case(
            """
            import torch
            def f(g, h, m, x):
                for _ in range(100):
                    g.replay()
                with torch.cuda.graph(h):
                    y = m(x)
            """,
            line=5,
            column=10,
            message=(
                "the capture at line 5 runs on torch.cuda.graph's own stream, not the one the warm-up ran on; from "
                "torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture fails or "
                "hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644, "
                "lightseekorg/tokenspeed#1059): warm up on a side stream and pass it as `stream=`"
            ),
        ),
        Case(
            """
            import torch
            def f(g, m, x, s):
                with torch.cuda.graph(g, stream=s):
                    t = torch.cuda.Stream()
                    with torch.cuda.stream(t):
                        y = m(x)
            """,
            line=4,
            column=13,
            message=(
                "`torch.cuda.Stream()` makes a new stream inside the capture begun at line 3: no warm-up ran on it; "
                "from torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture "
                "fails or hangs (pytorch#179053; failures: pytorch#187745, ROCm/TransformerEngine#644, "
                "lightseekorg/tokenspeed#1059): make the stream before the capture and run the same work on it once"
            ),
        ),
    )

    def on_event(self, event: RegionEvent) -> None:
        """In captured code. A stream made there is new at every call, so no warm-up can have
        run on it. A stream entered in the capture's own block must have been entered (and
        used) before the capture; one entered in a function the capture calls is not
        reported: the warm-up calls of that function entered it too."""
        where, region = self.where(event), event.region
        if isinstance(event, StreamCreated):
            self.hazard(event.node, f"`{self.found.short(event.node)}` makes a new stream {where}: no warm-up ran"
                        f" on it; {_HIPBLASLT}: make the stream before the capture and run the same work on it once")
        elif (isinstance(event, StreamEntered) and not event.via and region.nodes
              and not self.found.entered_before(region.scope, region.start, event.stream)):
            self.hazard(event.node, f"stream `{event.stream}` is entered {where} but no warm-up ran on it before"
                        f" the capture; {_HIPBLASLT}: run the same work in `with torch.cuda.stream("
                        f"{event.stream}):` once before the capture")

    def check(self, found: _regions.RegionAnalysis) -> None:
        super().check(found)  # streams made or entered in captured code
        for scope, node in found.capture_withs:
            _check_graph_with(self, found, node)
        for scope, call in found.capture_begins:
            _check_capture_begin(self, found, scope, call)
        for _scope, call in found.graphed_calls:
            line = found.line(call)
            self.hazard(call, f"`make_graphed_callables` (line {line}) warms up on one stream and captures on"
                        f" another in torch builds without pytorch#187745; {_HIPBLASLT}: use a torch with that fix,"
                        " or capture by hand: warm up on a side stream `s` and capture with"
                        " `torch.cuda.graph(g, stream=s)`")


def _graph_call(found, node: cst.With) -> Optional[cst.Call]:
    for item in node.items:
        expr = item.item
        if isinstance(expr, cst.Call) and found.qnames(expr.func) & _regions.GRAPH_CM_NAMES:
            return expr
    return None


def _stream_arg(call: cst.Call) -> Optional[cst.Arg]:
    arg = keyword(call, "stream")
    if arg is not None:
        return arg
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[2] if len(positional) > 2 else None


def _is_stream_cm(found, expr: cst.BaseExpression) -> bool:
    return (isinstance(expr, cst.Call) and found.ctx.may_resolve(expr.func, _regions.STREAM_CM_NAMES)
            and bool(found.qnames(expr.func) & _regions.STREAM_CM_NAMES))


def _check_graph_with(rule, found, node: cst.With) -> None:
    call = _graph_call(found, node)
    if call is None:
        return
    line = found.line(call)
    if any(a.star == "**" for a in call.args):
        return  # `**options` may hold stream=
    arg = _stream_arg(call)
    if arg is not None:
        value = arg.value
        if isinstance(value, cst.Call) and found.qnames(value.func) & _regions.STREAM_NEW_NAMES:
            rule.hazard(value, f"the capture at line {line} runs on a stream made for it, on which no"
                        f" warm-up ran; {_HIPBLASLT}: make the stream first, warm up on it, then pass it as `stream=`")
        return
    if not _may_run_gemm(found, node):
        return  # only the library's own kernels, Triton, collectives, elementwise ops: no hipBLASLt
    # A fix that moves the warm-up reports from the warm-up to the capture: its span holds
    # every line the fix rewrites.
    fix, moved = _graph_fix(rule, found, node, call)
    rule.hazard(call, f"the capture at line {line} runs on torch.cuda.graph's own stream, not the one the"
                f" warm-up ran on; {_HIPBLASLT}: warm up on a side stream and pass it as `stream=`",
                fix or Fix(Applicability.DISPLAY_ONLY, "Warm up on a side stream `s`, then capture with"
                           " `torch.cuda.graph(g, stream=s)`"), start=moved)


def _may_run_gemm(found, node: cst.With) -> bool:
    """May the capture begun by ``node`` run a torch GEMM: a GEMM, a model call, a call of
    something rocmport cannot see into? Functions of the file that it calls are followed."""
    scope = next((s for s, w in found.capture_withs if w is node), None)
    body = node.body
    nodes = list(body.body) if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else [body]
    todo: List[Tuple[List[cst.CSTNode], object]] = [(nodes, scope)]
    seen = set()
    while todo:
        nodes, scope = todo.pop()
        for part in nodes:
            for n in _walk_nodes(part):
                if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.MatrixMultiply):
                    return True
        for call in found.calls_in(nodes):
            targets = found.resolve_callee(call.func, scope)
            if targets:
                for target in targets:
                    if id(target) not in seen:
                        seen.add(id(target))
                        tbody = target.node.body
                        block = isinstance(tbody, (cst.IndentedBlock, cst.SimpleStatementSuite))
                        todo.append((list(tbody.body) if block else [tbody], target))
                continue
            if _call_may_gemm(found, call, scope, seen, todo):
                return True
    return False


def _call_may_gemm(found, call: cst.Call, scope, seen, todo, depth: int = 0) -> bool:
    func = call.func
    names = found.qnames(func)
    if names & _GEMM_FUNCTIONS:
        return True
    if any(n.startswith("torch.ops.") and not n.startswith("torch.ops.aten.") for n in names):
        return False  # a library's own operator: its kernels, not torch's GEMM
    if any(n.startswith(("torch.", "triton.")) for n in names):
        return False  # torch's other functions (elementwise, reductions, collectives, streams)
    if any(q.source is QualifiedNameSource.IMPORT for q in found.ctx.qualified_names(func)):
        return True  # an imported library's function: cannot see into it
    if isinstance(func, cst.Subscript):
        return False  # a Triton launch: kernel[grid](...)
    if isinstance(func, cst.Attribute):
        attr = func.attr.value
        if attr in _GEMM_METHODS or attr in _RUNS_A_MODEL or _MODEL_WORD.search(attr):
            return True
        if isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            return True  # a submodule or an inherited method: cannot see into it
        return not _plain_receiver(func.value)  # x.copy_(y), buf.zero_(): a tensor's method
    if isinstance(func, cst.Name):
        if func.value in _NO_GPU_LIBRARY or names & {f"builtins.{func.value}"}:
            return False
        values = found.values(scope).get(func.value, []) if scope is not None and depth < 3 else []
        if not values:
            return True  # a parameter, an imported function: cannot see into it
        for value in values:
            if isinstance(value, cst.Lambda):
                todo.append(([value.body], scope))
                continue
            fake = cst.Call(func=value) if isinstance(value, (cst.Attribute, cst.Name)) else None
            if fake is None or _call_may_gemm(found, fake, scope, seen, todo, depth + 1):
                return True
        return False
    return True


def _plain_receiver(value: cst.BaseExpression) -> bool:
    """A receiver whose method is a tensor's or a container's: a name, an attribute, a
    subscript, a call's result -- anything but a module or model spelled as one (``self.model``,
    ``model``, ``net``, ``layer``), whose methods run its forward."""
    while isinstance(value, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(value, cst.Attribute) and _MODEL_WORD.search(value.attr.value):
            return False
        value = value.value if not isinstance(value, cst.Call) else value.func
    return not (isinstance(value, cst.Name) and _MODEL_WORD.search(value.value))


_MODEL_WORD = re.compile(r"(?i)(?:^|_)(?:model|module|net|network|layer|layers|linear|mlp|proj|encoder|decoder|"
                         r"transformer|block|attn|attention|head|lm_head|engine|runner|graph_runner)s?(?:_|$|\d)")


def _walk_nodes(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            continue
        yield current
        stack.extend(current.children)


def _graph_fix(rule, found, node: cst.With, call: cst.Call) -> Tuple[Optional[Fix], Optional[cst.CSTNode]]:
    """The fix, and the warm-up loop it moves (None when it moves none)."""
    ctx = rule.context
    if not call.args:
        return None, None
    between: List[cst.CSTNode] = []
    warmup, stmt = None, node
    while warmup is None:
        block = rule.parent(stmt)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None, None
        body = list(block.body)
        index = next(i for i, s in enumerate(body) if s is stmt)
        for before in reversed(body[:index]):
            if isinstance(before, cst.SimpleStatementLine):
                between.append(before)
                continue
            warmup = before
            break
        if warmup is None:  # the capture opens a `try:` body: look before the `try`
            owner = rule.parent(block)
            if not isinstance(owner, cst.Try) or owner.body is not block:
                return None, None
            stmt = owner
    insert_at = ctx.span(call.args[-1].value)[1]
    # 1. A warm-up in `with torch.cuda.stream(s):`: capture on s.
    if isinstance(warmup, cst.With):
        if len(warmup.items) != 1 or not _is_stream_cm(found, warmup.items[0].item):
            return None, None
        cm = warmup.items[0].item
        if not cm.args or not isinstance(cm.args[0].value, cst.Name) or cm.args[0].keyword is not None:
            return None, None
        name = cm.args[0].value.value
        if any(_binds(stmt, name) for stmt in between):
            return None, None
        return Fix(Applicability.SAFE, f"Capture on the warm-up stream: `stream={name}`",
                   (ctx.edit(insert_at, insert_at, f", stream={name}"),)), None
    # 2. A warm-up loop: run it on a new side stream, and capture there.
    if not isinstance(warmup, (cst.For, cst.While)) or warmup.orelse is not None:
        return None, None
    if not isinstance(call.func, cst.Attribute) or found.qnames(call.func.value) != {"torch.cuda"}:
        return None, None
    if _mentions_stream(found, warmup) or _leaves_early(warmup):
        return None, None
    if not _work(found, warmup.body) & _work(found, node.body):
        return None, None  # the loop runs nothing the capture runs (a replay of another graph): no warm-up
    cuda = found.code(call.func.value)
    start, end = ctx.span(warmup)
    text, lines = ctx.text, ctx.lines
    line_start = lines.line_span(lines.position(start).row)[0]
    indent = text[line_start:start]
    if indent.strip(" \t") or _UNSAFE_TEXT.search(text[line_start:end]):
        return None, None
    row_end = lines.position(end).row
    if end > lines.line_span(row_end)[0]:
        if row_end >= len(lines.starts):
            return None, None  # the loop ends the file without a newline: no capture follows
        end = lines.starts[row_end]  # through the last line's terminator
    unit = warmup.body.indent if isinstance(warmup.body, cst.IndentedBlock) and warmup.body.indent else None
    unit = unit or found.module.default_indent
    nl = ctx.newline()
    name = _free_name(text, "side_stream")
    # One level deeper *inside* the loop's own indentation: a line at `indent` + rest becomes
    # `indent` + unit + rest. Put in front of `indent` ("    " + "\t    for") it mixes tabs and
    # spaces in an order Python refuses (TabError). Other lines (comments, continuations inside
    # brackets) only need to move right.
    moved = "".join(
        (indent + unit + line[len(indent):] if line.startswith(indent) else unit + line) if line.strip() else line
        for line in text[line_start:end].splitlines(keepends=True))
    head = (f"{indent}{name} = {cuda}.Stream(){nl}{indent}{name}.wait_stream({cuda}.current_stream()){nl}"
            f"{indent}with {cuda}.stream({name}):{nl}")
    tail = f"{indent}{cuda}.current_stream().wait_stream({name}){nl}"
    if not _indents_cleanly(indent, nl, head + moved + tail):
        return None, None  # a shape whose indentation cannot be deepened safely: display-only
    return Fix(Applicability.SAFE, "Warm up on a side stream and capture on it (`stream=`)",
               (ctx.edit(line_start, end, head + moved + tail),
                ctx.edit(insert_at, insert_at, f", stream={name}"))), warmup


# Calls that run no work of a capture: a loop that makes only these is no warm-up of it
_NOT_WORK = frozenset({"range", "len", "print", "enumerate", "zip", "min", "max", "next", "iter"})


def _work(found, node: cst.CSTNode) -> set:
    """What a block runs: the callees it calls, as spelled (``m``, ``self.model``,
    ``g.replay``), and its simple statements' code (``y = x @ w``, whitespace aside)."""
    out = set()
    for n in _walk_nodes(node):
        if isinstance(n, cst.Call):
            name = dotted_name(n.func)
            if name is not None and name not in _NOT_WORK:
                out.add(name)
        elif isinstance(n, cst.BaseSmallStatement):
            out.add("statement: " + " ".join(found.code(n).split()))
    return out


def _indents_cleanly(indent: str, nl: str, block: str) -> bool:
    """Does the rewritten block parse at its place? Its lines never dedent below `indent`, so
    CPython's tokenizer compares them only with each other and with `indent`: parsed under an
    `if` at column 0, it raises TabError (tabs and spaces that compare differently at tab size
    1 and 8) or IndentationError exactly where the whole file would."""
    try:
        ast.parse(f"if 1:{nl}{block}" if indent else block)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _binds(stmt: cst.CSTNode, name: str) -> bool:
    """Does a simple statement line (re)bind ``name``?"""
    hit = False

    class _Visitor(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal hit
            hit = hit or node.value == name

    for small in getattr(stmt, "body", ()):
        if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            for target in targets:
                _walk.visit(target, _Visitor())
        elif isinstance(small, (cst.Del, cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom)):
            _walk.visit(small, _Visitor())
    return hit


def _mentions_stream(found, node: cst.CSTNode) -> bool:
    for call in found.calls_in([node]):
        if found.qnames(call.func) & (_regions.STREAM_CM_NAMES | _regions.STREAM_NEW_NAMES | _regions.GRAPH_CM_NAMES):
            return True
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("wait_stream", "capture_begin"):
            return True
    return False


def _leaves_early(loop: cst.CSTNode) -> bool:
    """A `return`, `yield` or `raise` in the loop would skip the closing `wait_stream`: the
    caller could then read the warm-up's results on its stream before they are ready."""
    stack = [loop]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Return, cst.Yield, cst.Raise, cst.Await)):
            return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(node.children)
    return False


def _free_name(text: str, base: str) -> str:
    name, n = base, 1
    while re.search(rf"\b{name}\b", text):
        n += 1
        name = f"{base}_{n}"
    return name


def _check_capture_begin(rule, found, scope, call: cst.Call) -> None:
    line = found.line(call)
    stream_with = None
    for ancestor in rule.ancestors(call):
        if isinstance(ancestor, cst.With) and any(_is_stream_cm(found, i.item) for i in ancestor.items):
            stream_with = ancestor
            break
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            break
    if stream_with is None:
        rule.hazard(call, f"`{found.short(call.func)}()` (line {line}) captures on the current stream,"
                    f" on which no side-stream warm-up ran; {_HIPBLASLT}: warm up in `with torch.cuda.stream(s):`"
                    " and capture in the same block")
        return
    cm = next(i.item for i in stream_with.items if _is_stream_cm(found, i.item))
    stream = found.code(cm.args[0].value) if cm.args else ""
    begin = found.offset(call)
    block = stream_with.body
    for other in found.calls_in(block.body if isinstance(block, cst.IndentedBlock) else (block,)):
        if found.offset(other) >= begin:
            continue
        name = other.func.attr.value if isinstance(other.func, cst.Attribute) else found.code(other.func)
        if name.rsplit(".", 1)[-1] not in _NOT_WARMUP:
            return  # something ran on the stream before the capture
    if stream and found.entered_before(scope, found.offset(stream_with), stream):
        return
    rule.hazard(call, f"`{found.short(call.func)}()` (line {line}) captures on stream `{stream}`, on"
                f" which nothing ran before; {_HIPBLASLT}: run the work once on `{stream}` before the capture")
