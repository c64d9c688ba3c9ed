"""ROC711 arch-feature-on-every-amd-gpu: a feature of one AMD architecture chosen by a vendor test.

The rule's documentation is its class's (`rocmport rule ROC711` prints it).
"""

from __future__ import annotations

import ast
import re
from typing import Dict, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from rocmport.analysis import gates
from rocmport.analysis.names import qualified_names
from rocmport.analysis.needs import Call, Import, Name, String
from rocmport.analysis.platforms import (
    ARCH_LIMITED_PACKAGES,
    CUDA,
    ROCM,
    arch_word,
    attribute_tests,
    classify,
    module_tests,
)
from rocmport.analysis.syntax import dotted_name
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import VendorRule, arch_doc, facts_doc, identifiers, walk

# gfx942 (MI300) only: the fnuz fp8 formats, in torch and in Triton
FNUZ = frozenset({"torch.float8_e4m3fnuz", "torch.float8_e5m2fnuz",
                  "triton.language.float8e4b8", "triton.language.float8e5b16"})
# gfx950 (MI350) and RDNA4 only: the OCP e4m3 format ...
OCP_E4M3 = frozenset({"torch.float8_e4m3fn", "triton.language.float8e4nv"})
# ... and gfx950 only: FP4 and the MX block-scale format
MX = frozenset({"torch.float4_e2m1fn_x2", "torch.float8_e8m0fnu"})
WATCHED = FNUZ | OCP_E4M3 | MX
_LASTS = frozenset(name.rsplit(".", 1)[-1] for name in WATCHED)
_KIND = {name.rsplit(".", 1)[-1]: kind for names, kind in ((FNUZ, "fnuz"), (OCP_E4M3, "ocp"), (MX, "mx"))
         for name in names}
_WORD = re.compile(r"\b(" + "|".join(sorted(_KIND)) + r")\b")
PROBES = frozenset({"importlib.util.find_spec", "importlib.import_module"})
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})

ARCH_HINT = ("Test the architecture, not the vendor: e.g. "
             "`\"gfx94\" in torch.cuda.get_device_properties(0).gcnArchName` (MI300), `\"gfx95\"` (MI350)")


# what the probe of a package built for some architectures needs (``visit_Import``, ``visit_Call``)
_PROBE_NEEDS = Import(*ARCH_LIMITED_PACKAGES) | (Call(*PROBES) & String(*ARCH_LIMITED_PACKAGES))


class ArchFeatureOnEveryAmdGpu(VendorRule):
    CODE = "ROC711"
    NAME = "arch-feature-on-every-amd-gpu"
    SUMMARY = "A feature of one AMD architecture (fnuz fp8, FP4 / MX, AITER) chosen for every AMD GPU by a vendor test."
    NEEDS = Name(*WATCHED) | _PROBE_NEEDS
    LOCAL = True
    BY_FILE_NAME = False
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        Code that a vendor test alone (`torch.version.hip`, `is_hip()`, `SYSTEM == "rocm"`,
        `not torch.version.cuda`, the `else` of `if torch.version.cuda:`) sends down a path that
        only one AMD architecture has:

        - the fnuz fp8 formats (`torch.float8_e4m3fnuz`, `float8_e5m2fnuz`, Triton's
          `tl.float8e4b8` / `float8e5b16`), chosen or asserted: gfx942 (MI300) only. "ROCm" used
          as "fnuz" is the common shape (`if torch.version.hip: dtype = torch.float8_e4m3fnuz`);
        - the OCP `float8_e4m3fn` (gfx950 and RDNA4), FP4 (`torch.float4_e2m1fn_x2`) and the MX
          scale format (`torch.float8_e8m0fnu`, gfx950 only), chosen on a ROCm-only branch;
        - an availability probe of a package built for some AMD architectures only (AITER:
          `try: import aiter`, `importlib.util.find_spec("aiter")`), whose success turns the
          package on for every AMD GPU.

        Reported at the vendor test that stands in for an architecture test (once per test),
        or at the probe. Not reported: the same code under an architecture test anywhere around
        it (`"gfx94" in props.gcnArchName`, `arch.startswith("gfx95")`, a capability comparison
        under a HIP test, a helper named for an architecture or for fnuz such as `on_gfx950()`,
        `_on_mi3xx()`, `supports_float8_fnuz()`, `current_platform.is_fp8_fnuz()`, or a
        project helper that answers by one, followed through the project's modules), in a
        function named for one (`def _fp8_dtype_mi300():`), dtype comparisons that only
        inspect a tensor (`if x.dtype == torch.float8_e4m3fnuz:`), lists that name several
        formats, strings and comments. A module-level probe is left alone when the module tests
        the architecture somewhere.
        """
    WHY = """
        A vendor test is true on every AMD GPU, but fp8 and FP4 differ between them: MI300
        (gfx942) has fnuz fp8 only, MI350 (gfx950) and RDNA4 have OCP `float8_e4m3fn` only,
        and only MI350 has FP4 / MX GEMMs. hipBLASLt takes fnuz types on gfx942 only
        (ROCm/legacy-rocm-build#6019: fnuz GEMMs are NotImplemented on RDNA4), IREE rejects
        fnuz on gfx950 (nod-ai/amd-shark-ai#1604), and Triton emulates e4m3fn on gfx942
        (triton-lang/triton#7186). FBGEMM chose fnuz for "ROCm" and had to split it by
        architecture when MI350 arrived ("Only MI300 supports e4m3fnuz - MI350 supports
        e4m3fn", pytorch/FBGEMM#4280; the dtype asserts failed on MI350, #4282 and #4889).
        AITER imports on Radeon GPUs but its kernels do not run there: xDiT "fails to run on
        Radeon GPU" until it tests the architecture (xdit-project/xDiT#651, #660).

""" + facts_doc("arch") + """

""" + arch_doc() + """
        """
    EXAMPLE = """
        if torch.version.hip is not None:
            fp8_dtype = torch.float8_e4m3fnuz
        else:
            fp8_dtype = torch.float8_e4m3fn
        """
    FIX = """
        Display-only: which architecture a branch is for is the author's decision. Test the
        architecture where the vendor is tested, once, e.g.

            @functools.lru_cache
            def uses_fnuz() -> bool:
                return torch.version.hip is not None and \\
                    "gfx94" in torch.cuda.get_device_properties(0).gcnArchName

            fp8_dtype = torch.float8_e4m3fnuz if uses_fnuz() else torch.float8_e4m3fn

        and derive maxima with `torch.finfo(fp8_dtype).max`. For AITER, return False from the
        probe unless `gcnArchName` names gfx942 or gfx950.
        """
    VALID = (
        Case("""
            import torch
            def uses_fnuz():
                return torch.version.hip is not None and "gfx94" in torch.cuda.get_device_properties(0).gcnArchName
            FP8 = torch.float8_e4m3fnuz if uses_fnuz() else torch.float8_e4m3fn
            """),
        Case("""
            import torch
            if torch.version.hip:
                if torch.cuda.get_device_capability() < (9, 5):
                    assert x.dtype in (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)
            """),
        Case("""
            import torch
            if supports_float8_fnuz():
                dtype = torch.float8_e4m3fnuz
            """),
        Case("""
            import torch
            from .platform import current_platform
            if current_platform.is_fp8_fnuz():
                weight = weight.to(torch.float8_e4m3fnuz)
            """),
        Case("""
            import torch
            def _mi300_fp8_dtype():
                if torch.version.hip:
                    return torch.float8_e4m3fnuz
                return torch.float8_e4m3fn
            """),
        Case("""
            import torch
            if torch.version.hip and x.dtype == torch.float8_e4m3fnuz:
                x = x.float()
            FP8_TYPES = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)
            # if torch.version.hip: dtype = torch.float8_e4m3fnuz
            note = "torch.float8_e4m3fnuz on ROCm"
            """),
        Case("""
            import torch
            if torch.cuda.is_available():
                dtype = torch.float8_e4m3fnuz
            """),
        Case("""
            import torch
            dtype = torch.float8_e4m3fn if torch.version.cuda else torch.bfloat16
            """),
        Case("""
            import torch
            def check_aiter(self):
                if not self._on_mi3xx():
                    return False
                try:
                    import aiter
                    return True
                except ImportError:
                    return False
            """),
        Case("""
            def setup(info):
                if info.get("has_aiter", False):
                    try:
                        from aiter.ops.groupnorm import GroupNorm
                    except ImportError:
                        GroupNorm = None
            """),
        Case("""
            try:
                from aiter.mla import mla_decode_fwd
            except ImportError:
                print("aiter is AMD's kernel library: install it to compare with it")
            """),
        Case("""
            def use_aiter_attention(q, k, v):
                import aiter
                return aiter.flash_attn_func(q, k, v)
            """),
        Case("""
            import torch
            ARCH = torch.cuda.get_device_properties(0).gcnArchName
            try:
                import aiter
                HAS_AITER = "gfx94" in ARCH or "gfx95" in ARCH
            except ImportError:
                HAS_AITER = False
            """),
    )
    INVALID = (
        Case(
            """
            import torch
            import triton.language as tl

            def get_fp8_constants():
                if torch.version.hip is not None:
                    return torch.float8_e4m3fnuz, tl.float8e4b8
                return torch.float8_e4m3fn, tl.float8e4nv
            """,
            line=5,
            column=8,
            message=(
                "`torch.version.hip is not None` is true on every AMD GPU, but torch.float8_e4m3fnuz is MI300's "
                "(gfx942) fp8 format only: MI350 (gfx950) and RDNA4 use float8_e4m3fn, as NVIDIA does"
            ),
        ),
        Case(
            """
            import torch
            if torch.version.cuda is not None:
                FP8 = torch.float8_e4m3fn
            else:
                FP8 = torch.float8_e4m3fnuz
            """,
            line=2,
            column=4,
            message=(
                "`torch.version.cuda is not None` is false on every AMD GPU, so this code runs on all of them, but "
                "torch.float8_e4m3fnuz is MI300's (gfx942) fp8 format only: MI350 (gfx950) and RDNA4 use "
                "float8_e4m3fn, as NVIDIA does"
            ),
        ),
        Case(
            """
            import torch
            def check(a):
                if torch.version.cuda:
                    assert a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
                else:
                    assert a.dtype in (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)
            """,
            line=3,
            column=8,
            message=(
                "`torch.version.cuda` is false on every AMD GPU, so this code runs on all of them, but "
                "torch.float8_e4m3fnuz is MI300's (gfx942) fp8 format only: MI350 (gfx950) and RDNA4 use "
                "float8_e4m3fn, as NVIDIA does"
            ),
        ),
        Case(
            """
            from .utils import is_hip
            import torch
            FP8 = torch.float8_e4m3fnuz if is_hip() else torch.float8_e4m3fn
            """,
            line=3,
            column=32,
            message=(
                "`is_hip()` is true on every AMD GPU, but torch.float8_e4m3fnuz is MI300's (gfx942) fp8 format only: "
                "MI350 (gfx950) and RDNA4 use float8_e4m3fn, as NVIDIA does"
            ),
        ),
        Case(
            """
            import torch
            SYSTEM = "rocm" if torch.version.hip else "cuda"
            if SYSTEM == "rocm":
                scale_dtype = torch.float8_e8m0fnu
            """,
            line=3,
            column=4,
            message=(
                "`SYSTEM == \"rocm\"` is true on every AMD GPU, but torch.float8_e8m0fnu is an FP4 / MX format that "
                "only MI350 (gfx950) runs: MI300 (gfx942) and older AMD GPUs have no FP4 or MX hardware"
            ),
        ),
        Case(
            """
            import torch
            def quant_dtype():
                if not torch.version.hip:
                    return torch.float8_e4m3fn
                return torch.float8_e4m3fnuz
            """,
            line=3,
            column=8,
            message=(
                "`not torch.version.hip` is false on every AMD GPU, so this code runs on all of them, but "
                "torch.float8_e4m3fnuz is MI300's (gfx942) fp8 format only: MI350 (gfx950) and RDNA4 use "
                "float8_e4m3fn, as NVIDIA does"
            ),
        ),
        Case(
            """
            def check_aiter():
                try:
                    import aiter
                    return True
                except ImportError:
                    return False
            """,
            line=3,
            column=9,
            message=(
                "`aiter` is imported here to find out whether it can be used: the import succeeds on every AMD GPU, "
                "but AITER, AMD's kernel library, built for CDNA3 / CDNA4 (MI300 gfx942, MI350 gfx950) only"
            ),
        ),
        Case(
            """
            import importlib.util
            HAS_AITER = importlib.util.find_spec("aiter") is not None
            """,
            line=2,
            column=13,
            message=(
                "`aiter` is imported here to find out whether it can be used: the import succeeds on every AMD GPU, "
                "but AITER, AMD's kernel library, built for CDNA3 / CDNA4 (MI300 gfx942, MI350 gfx950) only"
            ),
        ),
    )

    def __init__(self, context):
        super().__init__(context)
        self._done: Set[int] = set()  # the tests already reported (one finding per decision)
        self._module_arch: Optional[bool] = None
        self._kinds: Dict[int, Set[str]] = {}  # statement -> the kinds of format it names

    @classmethod
    def may_match(cls, facts) -> bool:
        """A format is reported only at a vendor test around it (``_vendor_decision``): a
        condition with a side that holds ROCm and not CUDA. On CPython's tree, with the
        module's predicates as ``gates.FilePlatforms`` reads them: some condition, operand of
        ``and`` / ``or`` or operand of ``not`` has such a side (a test made of parts has one
        only if a part has: each side of ``and`` / ``or`` is an intersection or union of its
        parts'), or is an imported name it cannot read (a gate another module defines). A
        probe of a package needs only what its visits read."""
        if not cls.NEEDS.holds(facts):
            return False
        if facts.tree is None or _PROBE_NEEDS.holds(facts):
            return True
        return _has_vendor_test(facts)

    # -- fp8 / FP4 formats ----------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _LASTS:
            self._check_format(node)

    def visit_Name(self, node: cst.Name) -> None:
        facts = self.context.facts
        if facts is not None and node.value not in facts.bindings:
            return  # a bare name is a format only where an import binds it
        parent = self.parent(node)
        if isinstance(parent, (cst.Attribute, cst.ImportAlias, cst.AsName, cst.AssignTarget)) or \
                isinstance(parent, cst.Arg) and parent.keyword is node:
            return
        self._check_format(node)

    def _check_format(self, node: cst.CSTNode) -> None:
        names = self.qualified(node)
        if not names:
            return
        if not self._a_choice(node):
            return
        found = self._vendor_decision(node)
        if found is None:
            return
        test, after = found
        if id(test) in self._done:
            return
        self._done.add(id(test))
        shown = dotted_name(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
        condition = shown or " ".join(self.context.source(test).split())
        name = sorted(names)[0]
        short = name.replace("triton.language.", "tl.")
        if name in FNUZ:
            what = (f"{short} is MI300's (gfx942) fp8 format only: MI350 (gfx950) and RDNA4 use float8_e4m3fn, "
                    "as NVIDIA does")
        elif name in MX:
            what = (f"{short} is an FP4 / MX format that only MI350 (gfx950) runs: MI300 (gfx942) and older AMD "
                    "GPUs have no FP4 or MX hardware")
        else:
            what = (f"{short} is the fp8 format of MI350 (gfx950) and RDNA4 only: MI300 (gfx942) uses "
                    "float8_e4m3fnuz")
        if after:  # the else of `if torch.version.cuda:`, the code after `if not is_hip(): return`
            message = f"`{condition}` is false on every AMD GPU, so this code runs on all of them, but {what}"
        else:
            message = f"`{condition}` is true on every AMD GPU, but {what}"
        self.report_at(test, node if after else None, message)

    def qualified(self, node: cst.CSTNode) -> Set[str]:
        return qualified_names(self, node, WATCHED) & WATCHED

    def _a_choice(self, node: cst.CSTNode) -> bool:
        """Is the reference a choice of the format (assigned, passed, returned, converted to,
        asserted), rather than a question about a tensor or an inventory?"""
        child, parent = node, self.parent(node)
        collection = False
        while parent is not None:
            if isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.Set)):
                collection = True
            elif isinstance(parent, (cst.DictElement, cst.Dict)) and getattr(parent, "key", None) is child:
                return False
            elif isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
                return self._in_assert(parent)
            elif isinstance(parent, cst.Raise):
                return False
            elif isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                break
            child, parent = parent, self.parent(parent)
        if collection and len(self._formats_in(self._statement(node))) > 1:
            return False  # `(torch.float8_e4m3fn, torch.float8_e4m3fnuz)`: an inventory
        return True

    def _in_assert(self, node: cst.CSTNode) -> bool:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.Assert):
                return True
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return False
        return False

    def _statement(self, node: cst.CSTNode) -> cst.CSTNode:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return ancestor
        return node

    def _formats_in(self, statement: cst.CSTNode) -> Set[str]:
        """The kinds of format a statement names (fnuz, OCP, MX), by spelling: its names,
        attributes and strings, read once per statement (a table of a thousand entries holds
        many references; its source text is not made for each)."""
        if isinstance(statement, cst.BaseCompoundStatement):
            return set()
        found = self._kinds.get(id(statement))
        if found is None:
            found = self._kinds[id(statement)] = {_KIND[word] for name in identifiers(statement)
                                                  for word in _WORD.findall(name)}
        return found

    # -- the decision ---------------------------------------------------------------------
    def _vendor_decision(self, node: cst.CSTNode) -> Optional[Tuple[cst.CSTNode, bool]]:
        """(the vendor test that sends ``node`` to ROCm only, whether ``node`` is on its false
        side), or None: where the code also runs on NVIDIA, not on ROCm, or under an
        architecture test anywhere around it."""
        where = self.platforms(node)
        if CUDA in where or ROCM not in where:
            return None
        g = gates.of(self.context)
        decision: Optional[Tuple[cst.CSTNode, bool]] = None
        for test, side in self._conditions(node):
            if test is None:
                return None  # a definition named for an architecture
            found = g.test(test)
            if found.arch:
                return None
            sides = found.true if side else found.false
            if decision is None and CUDA not in sides and ROCM in sides:
                decision = (test, not side)
        return decision

    def _conditions(self, node: cst.CSTNode):
        """(test, the side ``node`` is on) for every condition around ``node``, innermost
        first: branches, conditional expressions, ``and`` / ``or``, and earlier ``assert`` and
        ``if <test>: return`` in the blocks around it; (None, None) for a function or class
        named for an architecture."""
        child, current = node, self.parent(node)
        while current is not None:
            if isinstance(current, (cst.If, cst.While, cst.IfExp)):
                if child is current.body:
                    yield current.test, True
                elif child is getattr(current, "orelse", None):
                    yield current.test, False
            elif isinstance(current, cst.BooleanOperation) and child is current.right:
                yield current.left, isinstance(current.operator, cst.And)
            elif isinstance(current, (cst.IndentedBlock, cst.Module)):
                for stmt in reversed(_before(current.body, child)):
                    if isinstance(stmt, cst.If) and stmt.orelse is None and _leaves(stmt.body):
                        yield stmt.test, False
                    elif isinstance(stmt, cst.SimpleStatementLine):
                        for small in stmt.body:
                            if isinstance(small, cst.Assert):
                                yield small.test, True
            elif isinstance(current, (cst.FunctionDef, cst.ClassDef)) and arch_word(current.name.value):
                yield None, None
            child, current = current, self.parent(current)

    def report_at(self, test: cst.CSTNode, end: Optional[cst.CSTNode], message: str) -> None:
        """Report at ``test``; where the chosen code follows it (the ``else`` side, code after
        an early exit), the finding's range runs on to it."""
        end_node = None
        if end is not None:
            positions = self.context.metadata(PositionProvider)
            if positions[end].end.line > positions[test].end.line:
                end_node = end
        self.report(test, message, fix=Fix(Applicability.DISPLAY_ONLY, ARCH_HINT), end_node=end_node)

    # -- packages built for some architectures --------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            if name.split(".", 1)[0] in ARCH_LIMITED_PACKAGES:
                self._check_probe(node, name.split(".", 1)[0], in_try=True)
                return

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        root = (dotted_name(node.module) or "").split(".", 1)[0]
        if root in ARCH_LIMITED_PACKAGES:
            self._check_probe(node, root, in_try=True)

    def visit_Call(self, node: cst.Call) -> None:
        if not node.args or not isinstance(node.args[0].value, cst.SimpleString):
            return
        value = node.args[0].value.evaluated_value
        if not isinstance(value, str) or value.split(".", 1)[0] not in ARCH_LIMITED_PACKAGES:
            return
        if self.is_name(node.func, PROBES):
            self._check_probe(node, value.split(".", 1)[0], in_try=False)

    def _check_probe(self, node: cst.CSTNode, package: str, in_try: bool) -> None:
        if in_try and not self._in_import_probe(node):
            return  # an import where the package is used, not a test of whether it is there
        where = self.platforms(node)
        if ROCM not in where:
            return
        g = gates.of(self.context)
        for test, _side in self._conditions(node):
            if test is None or g.test(test).arch:
                return
            if package in self.context.source(test).lower():
                return  # under `if has_aiter:`: a follower of the probe that decided it
        if not any(isinstance(a, (cst.FunctionDef, cst.Lambda)) for a in self.ancestors(node)) and \
                self._module_tests_architectures():
            return  # a module-level flag: the module decides by architecture elsewhere
        what = ARCH_LIMITED_PACKAGES[package]
        self.display_only(node, f"`{package}` is imported here to find out whether it can be used: the import "
                                f"succeeds on every AMD GPU, but {what}",
                          f"Return False from the probe unless the architecture is one {package} supports "
                          "(gcnArchName contains gfx942 or gfx950)")

    def _in_import_probe(self, node: cst.CSTNode) -> bool:
        """Inside the body of a ``try`` that catches ImportError (or broader) and records the
        outcome: a handler that returns or sets a name (``return False``, ``HAS_AITER =
        False``). A handler that only prints leaves nothing to decide by."""
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.Try) and child is ancestor.body:
                for handler in ancestor.handlers:
                    kinds = [] if handler.type is None else \
                        handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
                    catches = handler.type is None or any(
                        (dotted_name(k.value if isinstance(k, cst.Element) else k) or "").rsplit(".", 1)[-1]
                        in _IMPORT_ERRORS for k in kinds)
                    if catches and any(isinstance(n, (cst.Return, cst.Assign, cst.AnnAssign))
                                       for n in walk(handler.body)):
                        return True
                return False
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
            child = ancestor
        return False

    def _module_tests_architectures(self) -> bool:
        """Does the module test the GPU architecture anywhere (on CPython's tree, so code a
        lint leaves unparsed counts)?"""
        if self._module_arch is None:
            self._module_arch = False
            facts = self.context.facts
            tree = getattr(facts, "tree", None) if facts is not None else None
            if tree is not None:
                env = gates.of(self.context).env
                for n in ast.walk(tree):
                    test = n.test if isinstance(n, (ast.If, ast.IfExp, ast.While, ast.Assert)) else \
                        n if isinstance(n, ast.Compare) else None
                    if test is not None and classify(test, env).arch:
                        self._module_arch = True
                        break
        return self._module_arch


def _before(body, child) -> list:
    out = []
    for stmt in body:
        if stmt is child:
            return out
        out.append(stmt)
    return []


def _leaves(block) -> bool:
    body = getattr(block, "body", ())
    if not body:
        return False
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for small in last.body)
    return isinstance(block, cst.SimpleStatementSuite) and any(
        isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for small in block.body)


def _has_vendor_test(facts) -> bool:
    """Has the module (CPython's tree) a condition that :meth:`ArchFeatureOnEveryAmdGpu.may_match`
    counts as a possible vendor test?"""
    tree = facts.tree
    env = gates.module_env(tree, facts.index, facts.path)  # as ``gates.FilePlatforms`` makes it
    module_tests(tree.body, env)
    attribute_tests(tree, env)
    tests = [node.test for node in facts.nodes(ast.If, ast.While, ast.IfExp, ast.Assert)]
    for node in facts.nodes(ast.BoolOp):
        tests.append(node)
        tests.extend(node.values)
    tests.extend(node.operand for node in facts.nodes(ast.UnaryOp) if type(node.op) is ast.Not)
    for test in tests:
        found = classify(test, env)
        for side in (found.true, found.false):
            if ROCM in side and CUDA not in side:
                return True
        if not found.known:
            name = test.func if type(test) is ast.Call else test
            if type(name) is ast.Name and name.id in env.imports:
                return True
    return False
