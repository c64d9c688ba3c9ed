"""ROC705 fp8-format-architecture: `torch.float8_e4m3fn` / `tl.float8e4nv` hard-coded: MI300 uses the fnuz format.

The rule's documentation is its class's (`rocmport rule ROC705` prints it).
"""

from __future__ import annotations

import re
from typing import Optional, Set

import libcst as cst

from rocmport.analysis import gates
from rocmport.analysis.needs import Name, strings
from rocmport.analysis.platforms import name_words
from rocmport.analysis.prescan import PREFILTER
from rocmport.analysis.syntax import dotted_name
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import (
    E4M3FN,
    Fp8Rule,
    arch_doc,
    facts_doc,
    header_of,
    identifiers,
    statement_of,
    walk,
)

TL_E4M3NV = frozenset({"triton.language.float8e4nv"})
_QUERY = re.compile(r"(?i)^_*(?:is|has|supports?|can|check)(?:_|$)|_supported$|_supports_")
_FNUZ_AWARE_WORD = re.compile(r"(?i)fnuz|float8e4b8|fp8e4b8|gcnarch")
# Words of the formats whose own definition fixes E4M3: the OCP MX formats (MXFP8 elements),
# NVFP4 and FP4 (E4M3 block scales), and the MX scale format (E8M0)
_MX_WORD = re.compile(r"^(?:mx|mxfp\d+|nvfp4|fp4|e2m1|e8m0|float4)$")
_FILE_FORMAT = re.compile(r"(?i)^f8_e4m3")
_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "tensor", "arange", "linspace",
                        "randint", "zeros_like", "ones_like", "empty_like", "randn_like", "full_like"})


class Fp8FormatIsArchitectureDependent(Fp8Rule):
    CODE = "ROC705"
    NAME = "fp8-format-architecture"
    SUMMARY = "`torch.float8_e4m3fn` / `tl.float8e4nv` hard-coded: MI300 uses the fnuz format."
    NEEDS = Name(*E4M3FN, *TL_E4M3NV)  # a reference to the format, read with its statement and the tests around it
    LOCAL = True
    BY_FILE_NAME = False
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        `torch.float8_e4m3fn` or Triton's `tl.float8e4nv` chosen as a dtype (assigned, passed,
        returned, converted to) in code that runs on AMD GPUs, once per module: the first
        choice is reported with the count of the places that follow it (a default passed down
        a builder chain, the same dtype in sibling functions). Not reported, because the code
        around it proves the choice is not MI300's problem:

        - the module or statement names the fnuz format or an AMD architecture (`(e4m3fn,
          e4m3fnuz)`, `... if "gfx942" in arch else ...`, a conversion elsewhere such as
          `if is_fp8_fnuz(): normalize_e4m3fn_to_e4m3fnuz(w)`): the e4m3fn is the format it
          reads or converts from (a vendor test alone choosing fnuz is ROC711's);
        - code for NVIDIA GPUs only: a module that imports a package with no ROCm build, a
          function or class named for an NVIDIA-only feature (`..._sm90`, `Hopper...`,
          `NVIDIAModelOpt...`), another accelerator's backend tree;
        - a format whose own definition fixes E4M3: OCP MX formats (MXFP8 elements), NVFP4 and
          FP4 block scales, named by the function, class or module around it (`to_mxfp8`,
          `_kernel_nvfp4_quantize`);
        - fp8 only as storage: a `storage_dtype` (layerwise casting upcasts before the math), a
          file format's table (`"F8_E4M3": torch.float8_e4m3fn`), a tensor made and converted
          on the CPU (`torch.randn(4, 8).to(torch.float8_e4m3fn)`, `.cpu()` after it);
        - questions, not choices: comparisons (`x.dtype == torch.float8_e4m3fn`), inventories
          (tuples, lists, sets, dict keys, subscripts), queries (`supports_dtype(dev,
          torch.float8_e4m3fn)`), the default of a method that only raises NotImplementedError;
        - code under a ROCm test, strings and comments. A file's name decides nothing.
        """
    WHY = """
        fp8 on AMD depends on the architecture: MI300 (gfx942) computes in
        `float8_e4m3fnuz` (max 240, `tl.float8e4b8` in Triton), so e4m3fn tensors fail in
        hipBLASLt's scaled GEMMs or give wrong scales there, while MI350 and RDNA4 use
        e4m3fn like NVIDIA (10 threads, e.g. sglang#39628, DiffSynth-Studio#1528; "MI300 only
        has hardware support for FNUZ FP8 types", ROCm/AMDMIGraphX#3547; tritonbench had to
        switch MI300 to fnuz, meta-pytorch/tritonbench#553).

""" + facts_doc("fp8") + """

""" + arch_doc() + """
        """
    EXAMPLE = """
        x_fp8 = x.to(torch.float8_e4m3fn)
        """
    FIX = """
        Display-only: the right format depends on the GPU, not on ROCm alone. Choose it once,
        from the architecture, e.g.
        `torch.float8_e4m3fnuz if "gfx942" in torch.cuda.get_device_properties(0).gcnArchName
        else torch.float8_e4m3fn`, and derive maxima from it with `torch.finfo(dtype).max`.
        """
    VALID = (
        Case("""
            import torch
            FP8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)
            """),
        Case("""
            import torch
            if x.dtype == torch.float8_e4m3fn:
                pass
            """),
        Case("""
            import torch
            dtype = torch.float8_e4m3fnuz if is_rocm else torch.float8_e4m3fn
            """),
        Case("""
            import torch
            arch = torch.cuda.get_device_properties(0).gcnArchName
            dtype = torch.float8_e4m3fnuz if 'gfx942' in arch else torch.float8_e4m3fn
            """),
        Case("""
            import torch
            # use torch.float8_e4m3fn
            name = 'torch.float8_e4m3fn'
            """),
        Case("""
            import torch
            dtype = torch.float8_e5m2
            """),
        # code for NVIDIA GPUs only: a module that cannot load on ROCm, a function named for Hopper
        Case("""
            import cutlass.cute as cute
            import torch
            FP8 = torch.float8_e4m3fn
            """),
        Case("""
            import torch
            def fp8_gemm_sm90(x):
                return x.to(torch.float8_e4m3fn)
            """),
        # formats whose definition fixes E4M3: MXFP8 elements, NVFP4 block scales
        Case("""
            import torch
            def to_mxfp8(x, scale):
                return (x / scale).to(torch.float8_e4m3fn)
            def nvfp4_quantize(x, global_scale):
                return (x.abs().amax(-1) / 6.0 * global_scale).to(torch.float8_e4m3fn)
            """),
        # storage only: layerwise casting, a file format's table, tensors made on the CPU
        Case("""
            import torch
            model.enable_layerwise_casting(storage_dtype=torch.float8_e4m3fn, compute_dtype=torch.bfloat16)
            DTYPES = {"F8_E4M3": torch.float8_e4m3fn, "BF16": torch.bfloat16}
            w = torch.randn(4, 8, dtype=torch.float32).to(torch.float8_e4m3fn)
            packed = model.weight.detach().to(torch.float8_e4m3fn).cpu()
            """),
        # converted to fnuz elsewhere in the module, a gfx950 path
        Case("""
            import torch
            def load(w):
                w = w.to(torch.float8_e4m3fn)
                if current_platform.is_fp8_fnuz():
                    w = normalize_e4m3fn_to_e4m3fnuz(w)
                return w
            """),
        Case("""
            import torch
            def fp8_dtype(arch):
                if "gfx95" in arch:
                    return torch.float8_e4m3fn
                return None
            """),
        # questions and signatures, not choices
        Case("""
            import torch
            SUPPORTED = (torch.int8, torch.float8_e4m3fn, torch.float8_e5m2)
            native = supports_dtype(device, torch.float8_e4m3fn)
            class LinearBuilder:
                def build(self, fp8_dtype=torch.float8_e4m3fn):
                    raise NotImplementedError
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            y = x.to(torch.float8_e4m3fn)
            """,
            line=2,
            column=10,
            message=(
                "MI300 (gfx942) uses the fnuz fp8 format (torch.float8_e4m3fnuz, max 240), not this one; MI350 and "
                "RDNA4 use it: the format depends on the GPU architecture"
            ),
        ),
        Case(
            """
            import triton.language as tl

            def k(x):
                return x.to(tl.float8e4nv)
            """,
            line=4,
            column=17,
            message=(
                "MI300 (gfx942) uses the fnuz fp8 format (tl.float8e4b8, max 240), not this one; MI350 and RDNA4 use "
                "it: the format depends on the GPU architecture"
            ),
        ),
        Case(
            """
            from torch import float8_e4m3fn as F8
            FP8_DTYPE = F8
            """,
            line=2,
            column=13,
            message=(
                "MI300 (gfx942) uses the fnuz fp8 format (torch.float8_e4m3fnuz, max 240), not this one; MI350 and "
                "RDNA4 use it: the format depends on the GPU architecture"
            ),
        ),
        # one decision: the layer's default and the defaults of the builders it passes it to
        Case(
            """
            import torch
            class BlockedF8Linear:
                def __init__(self, fp8_dtype=torch.float8_e4m3fn):
                    self.fp8_dtype = fp8_dtype
            class MergedBlockedF8Linear(BlockedF8Linear):
                def __init__(self, fp8_dtype=torch.float8_e4m3fn):
                    super().__init__(fp8_dtype)
            """,
            line=3,
            column=34,
            message=(
                "MI300 (gfx942) uses the fnuz fp8 format (torch.float8_e4m3fnuz, max 240), not this one; MI350 and "
                "RDNA4 use it: the format depends on the GPU architecture (1 more place in this file follows from "
                "this decision: line 6)"
            ),
        ),
    )

    @classmethod
    def may_match(cls, facts) -> bool:
        """``_check`` reports a reference that is not compared (an operand of a comparison,
        or an element of a tuple, list or set that is one, is skipped). On CPython's tree:
        an attribute named like a format that may resolve to one, or a name that may, when
        neither is such an operand. A name that may resolve to one but is also bound some
        other way, or an import from a module spelled with the format, decides nothing."""
        wanted = E4M3FN | TL_E4M3NV
        if not facts.may_reference(wanted):
            return False
        if facts.tree is None:
            return True
        if _knows_fnuz(facts):
            return False  # every reference is left alone (``_module_knows_fnuz``)
        import ast

        compared: Set[int] = set()

        def mark(node) -> None:
            compared.add(id(node))
            if type(node) in (ast.Tuple, ast.List, ast.Set):
                for element in node.elts:
                    mark(element)

        for node in facts.nodes(ast.Compare):
            for operand in (node.left, *node.comparators):
                mark(operand)
        lasts = {name.rsplit(".", 1)[-1] for name in wanted}
        for last in lasts:
            for node in facts.attributes.get(last, ()):
                if id(node) not in compared and facts.may_be(node, wanted):
                    return True
        if any(lasts & set((node.module or "").split(".")) for node in facts.nodes(ast.ImportFrom)):
            return True
        names = {name for name in facts.names if not facts.roots(name).isdisjoint(wanted)}
        if not names:
            return False
        if names & facts.other_bindings:
            return True
        roots = {id(node.value) for node in facts.nodes(ast.Attribute)}  # skipped by ``visit_Name``
        return any(node.id in names and id(node) not in compared and id(node) not in roots
                   for node in facts.nodes(ast.Name))

    def __init__(self, context):
        super().__init__(context)
        self._lines: Set[int] = set()
        facts = context.facts
        wanted = E4M3FN | TL_E4M3NV
        # a bare name is the format only where an import binds it to it (None: ask each)
        self._names = None if facts is None or not PREFILTER["enabled"] else {
            name for name, bound in facts.bindings.items() if not bound.isdisjoint(wanted)}

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in ("float8_e4m3fn", "float8e4nv"):
            self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        if self._names is not None and node.value not in self._names:
            return
        parent = self.parent(node)
        if isinstance(parent, (cst.Attribute, cst.ImportAlias, cst.AsName)) or isinstance(parent, cst.Arg) and \
                parent.keyword is node:
            return
        if isinstance(parent, cst.AssignTarget):
            return
        self._check(node)

    def _check(self, node: cst.CSTNode) -> None:
        if not self.is_name(node, E4M3FN | TL_E4M3NV):
            return
        if not self._a_choice(node):
            return
        statement = statement_of(self, node)
        key = id(statement) if statement is not None else id(node)
        if key in self._lines:  # reported once per statement (asked first: a large table has many)
            return
        self._lines.add(key)
        if self.gated(node) or self.fnuz_aware(node, statement) or self._module_knows_fnuz():
            return
        if gates.of(self.context).nvidia_only(node) or self._format_of_its_own(node, statement):
            return
        if self._storage(node, statement) or self._abstract_default(node):
            return
        triton = "float8e4nv" in (dotted_name(node) or "") or self.is_name(node, TL_E4M3NV)
        fnuz = "tl.float8e4b8" if triton else "torch.float8_e4m3fnuz"
        self.report(node, f"MI300 (gfx942) uses the fnuz fp8 format ({fnuz}, max 240), not this one; MI350 and "
                          "RDNA4 use it: the format depends on the GPU architecture",
                    fix=Fix(Applicability.DISPLAY_ONLY, "Choose the fp8 dtype from gcnArchName (fnuz on gfx942) and "
                                                        "derive its maximum with torch.finfo(dtype).max"),
                    decision="format")

    def _a_choice(self, node: cst.CSTNode) -> bool:
        """A choice of the format: not a question about a tensor (``x.dtype == ...``), an
        inventory (an element of a tuple, list or set, a dict key, a subscript), or a query
        (``supports_dtype(device, torch.float8_e4m3fn)``)."""
        child, parent = node, self.parent(node)
        while isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.Set)):
            if isinstance(parent, (cst.Tuple, cst.List, cst.Set)):
                return False  # `(torch.int8, torch.float8_e4m3fn)`, `dtype in (...)`
            child, parent = parent, self.parent(parent)
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return False
        if isinstance(parent, cst.DictElement) and parent.key is child:
            return False
        if isinstance(parent, cst.Index):
            return False  # `MAP[torch.float8_e4m3fn] = ...`
        if isinstance(parent, cst.Arg):
            call = self.parent(parent)
            name = (dotted_name(call.func) or "") if isinstance(call, cst.Call) else ""
            if _QUERY.search(name.rsplit(".", 1)[-1]):
                return False
        return True

    def _module_knows_fnuz(self) -> bool:
        """The module names the fnuz format or an AMD architecture somewhere (a conversion
        ``if is_fp8_fnuz(): normalize_e4m3fn_to_e4m3fnuz(w)``, an arch test): its e4m3fn is the
        format it reads or converts from, chosen knowingly. Read on CPython's tree, so code a
        lint leaves unparsed counts."""
        facts = self.context.facts
        return facts is not None and facts.tree is not None and _knows_fnuz(facts)

    def _format_of_its_own(self, node: cst.CSTNode, statement) -> bool:
        """A format whose own definition fixes E4M3: the OCP MX formats (MXFP8 elements), NVFP4
        and other FP4 block scales, named by the function or class around it or the statement."""
        top_level = True
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                if _format_word(ancestor.name.value):
                    return True
                if top_level and isinstance(ancestor, cst.FunctionDef) and any(
                        _format_word(name) for name in identifiers(ancestor.body, strings=False)):
                    return True  # `o_s = torch.empty(..., dtype=e4m3fn)` for `scaled_fp4_quant(...)`, MXFP_BLOCK_SIZE
                top_level = False
        if top_level and self._module_of_formats():
            return True  # `E4M3_MAX = ...` beside the NVFP4 / MXFP8 code it serves
        header = header_of(statement)
        return header is not None and any(_format_word(name) for name in identifiers(header, strings=False))

    def _module_of_formats(self) -> bool:
        """Are most of the module's functions and classes named for an FP4 / MX format (an NVFP4
        quantizer's module, its tests)?"""
        facts = self.context.facts
        if facts is None or facts.tree is None:
            return False
        found = facts.memo.get("roc705_format_module")
        if found is None:
            import ast

            names = [n.name for n in getattr(facts.tree, "body", ())
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
            found = facts.memo["roc705_format_module"] = bool(names) and \
                2 * sum(1 for name in names if _format_word(name)) >= len(names)
        return bool(found)

    def _storage(self, node: cst.CSTNode, statement) -> bool:
        """fp8 only as a storage format: a ``storage_dtype`` (layerwise casting keeps weights in
        fp8 and upcasts them before every layer), a file format's table (``"F8_E4M3"``), or a
        tensor made on the CPU (no ``device=``) and converted there."""
        parent = self.parent(node)
        if isinstance(parent, cst.Arg) and "storage" in (self._parameter_of(parent) or ""):
            return True
        if isinstance(parent, cst.Param) and "storage" in parent.name.value:
            return True
        if isinstance(parent, cst.Assign) and any("storage" in (dotted_name(t.target) or "") for t in parent.targets):
            return True
        header = header_of(statement)
        if header is not None and any(isinstance(n, cst.SimpleString) and _FILE_FORMAT.match(
                str(n.evaluated_value)) for n in walk(header)):
            return True
        if isinstance(parent, cst.Arg):
            call = self.parent(parent)
            if isinstance(call, cst.Call) and self._on_cpu(call, parent):
                return True
        return False

    def _parameter_of(self, arg: cst.Arg) -> Optional[str]:
        """The parameter an argument binds: its keyword, or, for a positional argument of a
        function this file defines (``get_memory_usage(torch.float8_e4m3fn, torch.float32)``),
        the parameter at its position."""
        if arg.keyword is not None:
            return arg.keyword.value
        call = self.parent(arg)
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Name) or arg.star:
            return None
        position = [a for a in call.args if a.keyword is None].index(arg)
        facts = self.context.facts
        if facts is None or facts.tree is None:
            return None
        import ast

        defs = [n for n in facts.nodes(ast.FunctionDef, ast.AsyncFunctionDef) if n.name == call.func.value]
        params = {tuple(p.arg for p in d.args.posonlyargs + d.args.args) for d in defs}
        if len(params) != 1:
            return None
        names = next(iter(params))
        return names[position] if position < len(names) else None

    def _on_cpu(self, call: cst.Call, arg: cst.Arg) -> bool:
        """``torch.zeros(2, dtype=torch.float8_e4m3fn)`` or ``<CPU tensor>.to(torch.float8_e4m3fn)``
        where nothing moves it to a GPU in the expression (``.cpu()`` after it is CPU too)."""
        outer = self.parent(call)
        while isinstance(outer, (cst.Attribute, cst.Call)):
            if isinstance(outer, cst.Attribute) and outer.attr.value in ("cuda", "to") and \
                    isinstance(self.parent(outer), cst.Call):
                return False
            if isinstance(outer, cst.Attribute) and outer.attr.value == "cpu":
                return True
            outer = self.parent(outer)
        if _factory(call) and arg.keyword is not None and arg.keyword.value == "dtype":
            return not _has_device(call)
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "to":
            return self._cpu_tensor(func.value, 0)
        return False

    def _cpu_tensor(self, expr: cst.CSTNode, depth: int) -> bool:
        if depth > 4:
            return False
        if isinstance(expr, cst.Call):
            if _factory(expr):
                return not _has_device(expr)
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("detach", "clone", "contiguous", "float",
                                                                      "view", "reshape", "cpu"):
                return func.attr.value == "cpu" or self._cpu_tensor(func.value, depth + 1)
            return False
        if isinstance(expr, cst.Name):
            values = self.values(expr)
            return len(values) == 1 and self._cpu_tensor(values[0], depth + 1)
        return False

    def _abstract_default(self, node: cst.CSTNode) -> bool:
        """A parameter default of a method that only raises NotImplementedError (or is ``...``):
        the signature of a builder, not a choice that runs."""
        parent = self.parent(node)
        if not isinstance(parent, cst.Param):
            return False
        function = next((a for a in self.ancestors(parent) if isinstance(a, cst.FunctionDef)), None)
        if function is None or not isinstance(function.body, cst.IndentedBlock):
            return False
        body = [s for s in function.body.body if not (isinstance(s, cst.SimpleStatementLine) and all(
            isinstance(x, cst.Expr) and isinstance(x.value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis))
            for x in s.body))]  # a docstring, `...`
        if not body:
            return True  # a docstring or `...`
        return len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and \
            all(isinstance(x, (cst.Raise, cst.Pass)) for x in body[0].body)


def _factory(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name in _FACTORIES and (not isinstance(func, cst.Attribute) or dotted_name(func.value) == "torch")


def _has_device(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value == "device" for a in call.args)


def _format_word(name: str) -> bool:
    return any(_MX_WORD.match(word) for word in name_words(name))


def _knows_fnuz(facts) -> bool:
    """Does the module (CPython's tree) name the fnuz format or an AMD architecture anywhere:
    a name, an attribute, a definition, or a string that begins with ``gfx9``?"""
    known = facts.memo.get("roc705_knows_fnuz")
    if known is None:
        import ast

        words = set(facts.names) | set(facts.attributes)
        words.update(n.name for n in facts.nodes(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        known = facts.memo["roc705_knows_fnuz"] = any(_FNUZ_AWARE_WORD.search(w) for w in words) or any(
            s.startswith("gfx9") for s in strings(facts, lower=True))
    return bool(known)
