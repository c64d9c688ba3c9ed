"""ROC6xx: inductor environment variables that turn on CUDA graphs or max-autotune.

Inductor reads its environment variables once, when ``torch._inductor.config`` is first
imported (``torch._dynamo`` and ``torch.compile`` import it). Python code sets them through
``os.environ`` (item assignment, ``setdefault``, ``update``), ``os.putenv``, aliases of
``os`` and ``environ``, and env dicts handed to child processes (``subprocess.run(...,
env={**os.environ, ...})``, ``env = os.environ.copy(); env[...] = ...``). The fix gates the
value on ``is_rocm``. The same names in shell scripts, Dockerfiles, YAML and ``.env`` files
are found by :mod:`rocmport.codemods.env_files` (display-only).
"""

from __future__ import annotations

import re
from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider, ScopeProvider

from rocmport.findings import Applicability, Fix

from . import _walk
from ._resolve import assigned_values, operand, paren, string_subscript
from ._torch import COMPILE_NAMES, qualified_names
from .base import Case, Rule, dotted_name, keyword, literal_string, mentions_rocm

# ROC601 / ROC602: boolean variables; torch compares them with "1" (os.environ.get(X) == "1").
AUTOTUNE_VARS = ("TORCHINDUCTOR_MAX_AUTOTUNE", "TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE",
                 "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM")
CUDAGRAPH_VARS = ("TORCHINDUCTOR_CUDAGRAPHS",)
BACKEND_VARS = ("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS",)
# Read by torch/_inductor/config.py when it is first imported (torch-facts.md).
READ_AT_IMPORT = frozenset(AUTOTUNE_VARS + CUDAGRAPH_VARS + BACKEND_VARS + (
    "TORCHINDUCTOR_COORDINATE_DESCENT_TUNING", "TORCHINDUCTOR_MEMORY_PLANNING",
    "TORCHINDUCTOR_BENCHMARK_KERNEL", "TORCHINDUCTOR_MULTI_KERNEL", "TORCHINDUCTOR_SHAPE_PADDING",
    "TORCHINDUCTOR_FREEZING", "TORCH_COMPILE_DEBUG",
))
# Modules whose import imports torch._inductor.config (checked on torch 2.13).
_INDUCTOR_IMPORTERS = re.compile(r"^torch\.(?:_inductor|_dynamo)(?:\.|$)")

_UNKNOWN = object()


def classify(var: str, value) -> Optional[str]:
    """The ROC6xx code for setting ``var`` to ``value`` (a string, or None when the value is
    only known at run time), or None when it is harmless. Shared with ``env_files``."""
    if var in AUTOTUNE_VARS or var in CUDAGRAPH_VARS:
        code = "ROC601" if var in AUTOTUNE_VARS else "ROC602"
        if value is None:
            return code
        return code if value == "1" else None  # torch: os.environ.get(X) == "1"
    if var in BACKEND_VARS:
        if value is None:
            return "ROC604"
        upper = value.upper()
        return "ROC604" if ("TRITON" in upper or "CPP" in upper) else None
    return None


ROCM_VALUES = {"ROC601": "0", "ROC602": "0", "ROC604": "ATEN"}
MESSAGES = {
    "ROC601": "{var} turns on max-autotune, which is slow and fragile on ROCm",
    "ROC602": "{var} turns on inductor's CUDA graphs, which hang or slow down on ROCm",
    "ROC604": "{var} includes TRITON or CPP GEMM templates, which are slow or fail on ROCm; use \"ATEN\" there",
}
# A value only known at run time (a shell expansion, a YAML reference), for every file kind
UNKNOWN_VALUE_MESSAGES = {
    "ROC601": 'if it is "1", it turns on max-autotune, which is slow and fragile on ROCm',
    "ROC602": 'if it is "1", it turns on inductor\'s CUDA graphs, which hang or slow down on ROCm',
    "ROC604": 'if it includes TRITON or CPP, the GEMM templates are slow or fail on ROCm; use "ATEN" there',
}


def _py_value(node: cst.BaseExpression):
    """The string a Python value puts into the environment, or None when unknown."""
    text = literal_string(node)
    if text is not None:
        return text
    if isinstance(node, cst.Integer):
        return node.value
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return "1" if node.value == "True" else "0"  # a bug (TypeError), but its intent
    return None


class _EnvWrite:
    __slots__ = ("var", "key_node", "value", "where", "live", "anchor")

    def __init__(self, var, key_node, value, where, live, anchor):
        self.var = var
        self.key_node = key_node  # the string literal naming the variable (or keyword)
        self.value = value  # the value expression
        self.where = where  # "os.environ", "os.putenv", "a child process' env"
        self.live = live  # True: this process' os.environ
        self.anchor = anchor  # the statement-level node, for ordering


class _EnvRule(Rule):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider, ScopeProvider)

    @classmethod
    def may_match(cls, facts) -> bool:
        # A write names the variable as a subscript key, a dict key, a first argument
        # (setdefault, putenv, __setitem__) or a keyword (update, dict); it writes to
        # os.environ (or a copy of it), os.putenv, or the env= of a subprocess, os.exec*,
        # os.spawn* or asyncio call: all resolve under os, subprocess or asyncio.
        keys = facts.stored_keys | facts.dict_keys | facts.keywords
        for method in ("setdefault", "__setitem__", "putenv"):
            keys |= facts.first_strings(method)
        if keys.isdisjoint(READ_AT_IMPORT):
            return False
        return any(facts.may_reference_under(module) for module in ("os", "subprocess", "asyncio"))

    def __init__(self, context):
        super().__init__(context)
        self._seen: Set[int] = set()

    # -- what is os.environ, or a copy of it ------------------------------------------------
    def env_kind(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """"live" for ``os.environ`` (any alias), "copy" for a mapping made from it
        (``os.environ.copy()``, ``dict(os.environ)``, ``{**os.environ}``), else None."""
        names = qualified_names(self, expr)
        if "os.environ" in names:
            return "live"
        if depth > 3:
            return None
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value == "copy" and self.env_kind(func.value, depth + 1):
                return "copy"
            fnames = qualified_names(self, func) | ({func.value} if isinstance(func, cst.Name) else set())
            if fnames & {"dict", "builtins.dict", "copy.copy", "copy.deepcopy"} and expr.args \
                    and expr.args[0].keyword is None and self.env_kind(expr.args[0].value, depth + 1):
                return "copy"
        if isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.StarredDictElement) and self.env_kind(element.value, depth + 1):
                    return "copy"
        if isinstance(expr, cst.Name):
            for value in assigned_values(self, expr):
                kind = self.env_kind(value, depth + 1)
                if kind is not None:
                    return kind
        return None

    def is_child_env_call(self, call: cst.Call) -> bool:
        for name in qualified_names(self, call.func):
            if (name.startswith("subprocess.") or name.startswith("asyncio.create_subprocess")
                    or name.startswith("os.exec") or name.startswith("os.spawn")
                    or name.startswith("os.posix_spawn")):
                return True
        return False

    # -- every write ------------------------------------------------------------------------
    def writes_in_assign(self, node: cst.Assign) -> Iterator[_EnvWrite]:
        for target in node.targets:
            sub = string_subscript(target.target)
            if sub is None:
                continue
            kind = self.env_kind(sub[0])
            if kind is not None:
                key_node = target.target.slice[0].slice.value
                yield _EnvWrite(sub[1], key_node, node.value,
                                "os.environ" if kind == "live" else "a child process' environment",
                                kind == "live", node)

    def writes_in_call(self, node: cst.Call) -> Iterator[_EnvWrite]:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("setdefault", "update", "__setitem__"):
            kind = self.env_kind(func.value)
            if kind is None:
                return
            where = "os.environ" if kind == "live" else "a child process' environment"
            if func.attr.value == "update":
                for arg in node.args:
                    if arg.keyword is not None:
                        yield _EnvWrite(arg.keyword.value, arg.keyword, arg.value, where, kind == "live", node)
                    elif isinstance(arg.value, cst.Dict):
                        yield from self._dict_writes(arg.value, where, kind == "live", node)
            elif len(node.args) >= 2 and node.args[0].keyword is None and node.args[0].star == "":
                var = literal_string(node.args[0].value)
                if var is not None:
                    yield _EnvWrite(var, node.args[0].value, node.args[1].value, where, kind == "live", node)
            return
        if "os.putenv" in qualified_names(self, func) and len(node.args) == 2:
            var = literal_string(node.args[0].value)
            if var is not None:
                yield _EnvWrite(var, node.args[0].value, node.args[1].value, "os.putenv", False, node)
            return
        if self.is_child_env_call(node):
            arg = keyword(node, "env")
            if arg is None:
                return
            value = arg.value
            if isinstance(value, cst.Name) and self.env_kind(value) is None:
                for bound in assigned_values(self, value):
                    if isinstance(bound, cst.Dict):
                        yield from self._dict_writes(bound, "a child process' environment", False, bound)
            elif isinstance(value, cst.Dict) and not self._has_environ_spread(value):
                yield from self._dict_writes(value, "a child process' environment", False, node)

    def writes_in_dict(self, node: cst.Dict) -> Iterator[_EnvWrite]:
        """{**os.environ, "X": "1"} anywhere: an environment being built."""
        if self._has_environ_spread(node):
            yield from self._dict_writes(node, "a child process' environment", False, node)

    def writes_in_dict_call(self, node: cst.Call) -> Iterator[_EnvWrite]:
        """dict(os.environ, X="1") anywhere."""
        func = node.func
        if isinstance(func, cst.Name) and func.value == "dict" and node.args and node.args[0].keyword is None \
                and node.args[0].star == "" and self.env_kind(node.args[0].value):
            for arg in node.args[1:]:
                if arg.keyword is not None:
                    yield _EnvWrite(arg.keyword.value, arg.keyword, arg.value, "a child process' environment",
                                    False, node)

    def _has_environ_spread(self, node: cst.Dict) -> bool:
        return any(isinstance(e, cst.StarredDictElement) and self.env_kind(e.value) for e in node.elements)

    def _dict_writes(self, d: cst.Dict, where: str, live: bool, anchor) -> Iterator[_EnvWrite]:
        for element in d.elements:
            if isinstance(element, cst.DictElement):
                var = literal_string(element.key)
                if var is not None:
                    yield _EnvWrite(var, element.key, element.value, where, live, anchor)

    def visit_Assign(self, node: cst.Assign) -> None:
        for write in self.writes_in_assign(node):
            self.consider(write)

    def visit_Call(self, node: cst.Call) -> None:
        for write in self.writes_in_call(node):
            self.consider(write)
        for write in self.writes_in_dict_call(node):
            self.consider(write)

    def visit_Dict(self, node: cst.Dict) -> None:
        for write in self.writes_in_dict(node):
            self.consider(write)

    def consider(self, write: _EnvWrite) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class _GatedValue(_EnvRule):
    """ROC601 / ROC602 / ROC604: a hazardous value; the fix gates it."""

    def consider(self, write: _EnvWrite) -> None:
        if id(write.value) in self._seen:
            return
        value = _py_value(write.value)
        code = classify(write.var, value)
        if code != self.CODE:
            return
        self._seen.add(id(write.value))
        if mentions_rocm(write.value, self.context.gate_name) or self.in_rocm_branch(write.value):
            return
        rocm = ROCM_VALUES[code]
        original = operand(self, write.value)
        q = '"'
        if isinstance(write.value, cst.SimpleString):
            match = re.match(r"^[rRuU]*('''|\"\"\"|'|\")", original)
            q = match.group(1) if match else '"'
        text = paren(self, write.value, f"{q}{rocm}{q} if {self.context.gate_name} else {original}")
        self.report(
            write.value,
            MESSAGES[code].format(var=write.var) + f" (set in {write.where})",
            fix=Fix(Applicability.SAFE, f'Set {write.var} to "{rocm}" on ROCm',
                    (self.context.replace(write.value, text),), ("gate",)),
        )


_PY_SPELLINGS = """
        Python spellings: `os.environ["X"] = ...`, `os.environ.setdefault("X", ...)`,
        `os.environ.update({...})` / `update(X=...)`, `os.putenv("X", ...)`, aliases (`import
        os as _os`, `from os import environ`, `env = os.environ`), and environments built for
        child processes: `env={...}` handed to `subprocess` / `os.exec*e`, `{**os.environ,
        "X": ...}`, `dict(os.environ, X=...)`, `env = os.environ.copy(); env["X"] = ...`. The
        same variables in shell scripts, Dockerfiles, YAML `env:` maps and `.env` files are
        reported at their line, without a fix.
        """


def _what(head: str) -> str:
    return "\n        " + head + "\n" + _PY_SPELLINGS.lstrip("\n")


class MaxAutotuneEnv(_GatedValue):
    CODE = "ROC601"
    NAME = "env-max-autotune"
    TRIGGERS = ("TORCHINDUCTOR_MAX_AUTOTUNE",)
    SUMMARY = "TORCHINDUCTOR_MAX_AUTOTUNE (or _POINTWISE, _GEMM) set to a true value."
    WHAT = _what("`TORCHINDUCTOR_MAX_AUTOTUNE`, `TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE` or "
                 "`TORCHINDUCTOR_MAX_AUTOTUNE_GEMM` set to \"1\" (inductor compares with \"1\"; \"0\", \"\" and "
                 "other strings leave it off) or to a value only known at run time.")
    WHY = """
        The variable turns on inductor's max-autotune for the whole process and for every
        child process that inherits the environment. On ROCm many Triton templates fail to
        compile or time out and compilation takes far longer (see ROC203).
        """
    EXAMPLE = """
        os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"
        """
    FIXED_EXAMPLE = """
        os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0" if is_rocm else "1"
        """
    FIX = """
        Safe in Python: the value becomes `"0" if is_rocm else <value>`, unchanged on NVIDIA.
        In shell scripts, Dockerfiles, YAML and `.env` files: display-only (rocmport does not
        rewrite them); leave the variable unset for ROCm images and jobs.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import os\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0"\n'),
        Case('import os\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = ""\n'),
        Case('import os\nx = os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"]\n'),
        Case('import os\nif os.environ.get("TORCHINDUCTOR_MAX_AUTOTUNE") == "1":\n    pass\n'),
        Case('settings = {}\nsettings["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"\n'),
        Case('import os\n# os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"\n'),
        Case('import os\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0" if is_rocm else "1"\n'),
    )
    INVALID = (
        Case('import os\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"\n',
             'import os\n\nimport torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0" if is_rocm else "1"\n'),
        Case("from os import environ as env\nenv.setdefault('TORCHINDUCTOR_MAX_AUTOTUNE_GEMM', '1')\n",
             'from os import environ as env\n\nimport torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\nenv.setdefault(\'TORCHINDUCTOR_MAX_AUTOTUNE_GEMM\', \'0\' if is_rocm else \'1\')\n'),
        Case('import os\nimport subprocess\nsubprocess.run(["python", "t.py"], env={**os.environ, "TORCHINDUCTOR_MAX_AUTOTUNE": "1"})\n'),
    )


class CudagraphsEnv(_GatedValue):
    CODE = "ROC602"
    NAME = "env-cudagraphs"
    TRIGGERS = ("TORCHINDUCTOR_CUDAGRAPHS",)
    SUMMARY = "TORCHINDUCTOR_CUDAGRAPHS set to a true value."
    WHAT = _what("`TORCHINDUCTOR_CUDAGRAPHS` (it sets `triton.cudagraphs`) set to \"1\" or to a value "
                 "only known at run time.")
    WHY = """
        It turns on inductor's CUDA graphs for every compiled function in the process and in
        child processes; they hang or slow down on ROCm (see ROC201).
        """
    EXAMPLE = """
        subprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "1"})
        """
    FIXED_EXAMPLE = """
        subprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "0" if is_rocm else "1"})
        """
    FIX = """
        Safe in Python: `"0" if is_rocm else <value>`, unchanged on NVIDIA. Display-only in
        other files.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import os\nos.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"\n'),
        Case('import os\nprint("TORCHINDUCTOR_CUDAGRAPHS=1")\n'),
    )
    INVALID = (
        Case('import os\nimport subprocess\nsubprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "1"})\n',
             'import os\nimport subprocess\n\nimport torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\nsubprocess.run(cmd, env={**os.environ, "TORCHINDUCTOR_CUDAGRAPHS": "0" if is_rocm else "1"})\n'),
        Case('import os as _os\n_os.putenv("TORCHINDUCTOR_CUDAGRAPHS", "1")\n',
             'import os as _os\n\nimport torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\n_os.putenv("TORCHINDUCTOR_CUDAGRAPHS", "0" if is_rocm else "1")\n'),
        Case('import os\ndef launch(cmd):\n    env = os.environ.copy()\n    env["TORCHINDUCTOR_CUDAGRAPHS"] = flag\n    return env\n',
             'import os\n\nimport torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\ndef launch(cmd):\n    env = os.environ.copy()\n    env["TORCHINDUCTOR_CUDAGRAPHS"] = "0" if is_rocm else flag\n    return env\n'),
    )


class GemmBackendsEnv(_GatedValue):
    CODE = "ROC604"
    NAME = "env-gemm-backends"
    TRIGGERS = ("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS",)
    SUMMARY = "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS including TRITON or CPP."
    WHAT = _what("`TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS` set to a value that includes TRITON or CPP "
                 "(inductor upper-cases it) or to a value only known at run time.")
    WHY = """
        With max-autotune on, inductor benchmarks Triton and C++ GEMM templates; on ROCm they
        often fail or lose to hipBLASLt (see ROC204). "ATEN" keeps the vendor GEMMs.
        """
    EXAMPLE = """
        os.environ.update({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "TRITON,ATEN"})
        """
    FIXED_EXAMPLE = """
        os.environ.update({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "ATEN" if is_rocm else "TRITON,ATEN"})
        """
    FIX = """
        Safe in Python: `"ATEN" if is_rocm else <value>`, unchanged on NVIDIA. Display-only in
        other files.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case('import os\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS"] = "ATEN"\n'),
    )
    INVALID = (
        Case('import os\nos.environ.update({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "TRITON,ATEN"})\n',
             'import os\n\nimport torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\nos.environ.update({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "ATEN" if is_rocm else "TRITON,ATEN"})\n'),
        Case('import os\nos.environ.update(TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS="cpp")\n',
             'import os\n\nimport torch\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n\nos.environ.update(TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS="ATEN" if is_rocm else "cpp")\n'),
    )


class LateEnv(_EnvRule):
    CODE = "ROC603"
    NAME = "env-set-after-inductor-import"
    TRIGGERS = ("TORCHINDUCTOR_", "TORCH_COMPILE_DEBUG")
    SUMMARY = "An inductor environment variable set after torch._inductor was imported: no effect."
    WHAT = """
        An inductor environment variable that is read when `torch._inductor.config` is first
        imported (`TORCHINDUCTOR_MAX_AUTOTUNE*`, `_CUDAGRAPHS`, `_MAX_AUTOTUNE_GEMM_BACKENDS`,
        `_COORDINATE_DESCENT_TUNING`, `_MEMORY_PLANNING`, `_BENCHMARK_KERNEL`,
        `_MULTI_KERNEL`, `_SHAPE_PADDING`, `_FREEZING`, `TORCH_COMPILE_DEBUG`) set in this
        process' `os.environ` after the same module imported `torch._inductor`, or something
        that imports it (`torch._dynamo`), or ran `torch.compile`: at module level after such
        a statement, or in a function after such a statement of the function or of the module.
        Any value counts, a "0" meant as a ROCm mitigation included.
        """
    WHY = """
        Inductor reads these variables once, when its config module is first imported;
        setting them later does nothing in this process (only child processes see them). A
        mitigation such as `TORCHINDUCTOR_CUDAGRAPHS=0` set too late leaves CUDA graphs on.
        """
    EXAMPLE = """
        import torch._dynamo
        os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"
        """
    FIX = """
        Display-only: move the assignment above the first import of `torch._inductor` /
        `torch._dynamo` (or into the launch environment), or set
        `torch._inductor.config.<name>` instead (thread-local from torch 2.12).
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case('import os\nos.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"\nimport torch._dynamo\n'),
        Case('import os\nimport torch\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0"\n'),
        Case('import torch._dynamo\nimport subprocess\nsubprocess.run(c, env={"TORCHINDUCTOR_MAX_AUTOTUNE": "0"})\n'),
        Case('import os\nimport torch._inductor.config\nos.environ["TORCHINDUCTOR_CACHE_DIR"] = "/tmp/c"\n'),
    )
    INVALID = (
        Case('import os\nimport torch._inductor.config\nos.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"\n'),
        Case('import os\nfrom torch import _dynamo\ndef setup():\n    os.environ.setdefault("TORCHINDUCTOR_FREEZING", "1")\n'),
        Case('import os\nimport torch\nm = torch.compile(m)\nos.environ["TORCH_COMPILE_DEBUG"] = "1"\n'),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._events: List[Tuple[int, int, str, Optional[cst.CSTNode]]] = []  # (offset, row, what, function)

        rule = self

        class _Events(cst.CSTVisitor):
            def __init__(self):
                self.function: List[cst.CSTNode] = []

            def visit_FunctionDef(self, n):
                self.function.append(n)

            def leave_FunctionDef(self, n):
                self.function.pop()

            def visit_Lambda(self, n):
                return False

            def _add(self, n, what):
                start, _ = rule.context.span(n)
                owner = self.function[-1] if self.function else None
                rule._events.append((start, rule.context.lines.position(start).row, what, owner))

            def visit_Import(self, n):
                for alias in n.names:
                    name = dotted_name(alias.name) or ""
                    if _INDUCTOR_IMPORTERS.match(name):
                        self._add(n, f"`import {name}`")

            def visit_ImportFrom(self, n):
                if n.relative or n.module is None:
                    return
                module = dotted_name(n.module) or ""
                if _INDUCTOR_IMPORTERS.match(module):
                    self._add(n, f"`from {module} import ...`")
                elif module == "torch" and not isinstance(n.names, cst.ImportStar):
                    for alias in n.names:
                        if isinstance(alias.name, cst.Name) and alias.name.value in ("_dynamo", "_inductor"):
                            self._add(n, f"`from torch import {alias.name.value}`")

            def visit_Call(self, n):
                if qualified_names(rule, n.func, COMPILE_NAMES) & COMPILE_NAMES:
                    self._add(n, "a torch.compile call")

        _walk.visit(node, _Events())

    def consider(self, write: _EnvWrite) -> None:
        if not write.live or write.var not in READ_AT_IMPORT or id(write.key_node) in self._seen:
            return
        self._seen.add(id(write.key_node))
        start, _ = self.context.span(write.anchor)
        function = None
        for ancestor in self.ancestors(write.anchor):
            if isinstance(ancestor, cst.FunctionDef):
                function = ancestor
                break
        for offset, row, what, owner in sorted(self._events, key=lambda e: e[0]):
            if offset >= start:
                break
            if owner is None or owner is function:
                self.report(
                    write.key_node,
                    f"{write.var} is set after {what} (line {row}), which imports torch._inductor.config; inductor"
                    f" reads it only then,"
                    f" so this has no effect in this process;"
                    f" set it before line {row} or in the launch environment",
                    fix=Fix(Applicability.DISPLAY_ONLY, f"Move it above line {row}"),
                )
                return


# ------------------------------------------------------------------------------------------
# ROC605 / ROC606: variables that only make sense together (visibility, extension archs)
# ------------------------------------------------------------------------------------------

VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
ARCH_LIST_VAR = "TORCH_CUDA_ARCH_LIST"
ROCM_ARCH_VAR = "PYTORCH_ROCM_ARCH"
PAIR_VARS = frozenset(VISIBILITY_VARS + (ARCH_LIST_VAR, ROCM_ARCH_VAR))


def removes(text: str, var: str) -> bool:
    """True when the text removes ``var`` from an environment (``os.environ.pop("X")``,
    ``del os.environ["X"]``, ``os.unsetenv("X")``, shell ``unset X``, ``env -u X``)."""
    quoted = rf"[\"']{re.escape(var)}[\"']"
    return bool(re.search(rf"(?:\.pop\(\s*{quoted}|\bdel\s+[^\n]*\[\s*{quoted}\s*\]|unsetenv\(\s*{quoted}"
                          rf"|\bunset\s+(?:-v\s+)?{re.escape(var)}\b|\benv\s+(?:-\S+\s+)*-u\s*{re.escape(var)}\b)", text))


class _PairRule(_EnvRule):
    """Collects this file's writes of ``VARS``; ``pairs`` decides what is reported."""

    VARS: Tuple[str, ...] = ()

    @classmethod
    def may_match(cls, facts) -> bool:
        keys = facts.stored_keys | facts.dict_keys | facts.keywords
        for method in ("setdefault", "__setitem__", "putenv"):
            keys |= facts.first_strings(method)
        if keys.isdisjoint(cls.VARS):
            return False
        return any(facts.may_reference_under(module) for module in ("os", "subprocess", "asyncio"))

    def visit_Module(self, node: cst.Module) -> None:
        self._writes: List[_EnvWrite] = []

    def consider(self, write: _EnvWrite) -> None:
        if write.var in self.VARS and id(write.key_node) not in self._seen:
            self._seen.add(id(write.key_node))
            self._writes.append(write)

    def row(self, write: _EnvWrite) -> int:
        return self.context.position(write.key_node).start.line

    def _where(self, write: _EnvWrite) -> Tuple[int, int]:
        start = self.context.position(write.key_node).start
        return start.line, start.column


class VisibleDevicesBoth(_PairRule):
    CODE = "ROC605"
    NAME = "env-cuda-and-hip-visible-devices"
    TRIGGERS = ("HIP_VISIBLE_DEVICES",)
    VARS = VISIBILITY_VARS
    SUMMARY = "CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES both set: torch on ROCm silently uses one."
    WHAT = """
        A file that sets both `CUDA_VISIBLE_DEVICES` and `HIP_VISIBLE_DEVICES` (the same value
        included), reported at the later of the two. Python: the spellings of ROC601 (this
        process' `os.environ`, `os.putenv`, environments built for child processes), both in
        one function or both at module level; two writes in the two arms of one ROCm test
        (`if is_rocm: HIP... else: CUDA...`) and files that also remove one of them
        (`os.environ.pop`, `del`, `unset`) are not findings.
        Shell scripts, Dockerfiles, `.env` files: anywhere in the file; YAML: in the same map
        or list (one `env:` block, one `run:` script).
        """
    WHY = """
        On a ROCm build torch 2.13 decides which GPUs it counts in
        `torch/cuda/__init__.py:_parse_visible_devices`: `ROCR_VISIBLE_DEVICES` is applied
        first; with `HIP_VISIBLE_DEVICES` set, `CUDA_VISIBLE_DEVICES` is ignored without a
        word; with only `ROCR_VISIBLE_DEVICES` set, it is ignored too; and torch raises
        RuntimeError when `HIP_VISIBLE_DEVICES` lists more devices than `ROCR_VISIBLE_DEVICES`.
        Earlier releases raised when both were set (pytorch#139866, #140398). The HIP runtime
        reads both variables as well, so the GPUs torch counts and the GPUs the runtime opens
        can differ: the wrong GPUs, or none.
        """
    EXAMPLE = """
        import os
        os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
        os.environ["HIP_VISIBLE_DEVICES"] = "0,1"
        """
    FIX = """
        Display-only: set one variable, `HIP_VISIBLE_DEVICES` on ROCm and
        `CUDA_VISIBLE_DEVICES` on NVIDIA (`"HIP_VISIBLE_DEVICES" if is_rocm else
        "CUDA_VISIBLE_DEVICES"`), and leave `ROCR_VISIBLE_DEVICES` unset or a superset. Which
        one to drop depends on the deployment, so rocmport does not choose.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case('import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'),
        Case('import os\nif is_rocm:\n    os.environ["HIP_VISIBLE_DEVICES"] = "0"\n'
             'else:\n    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'),
        Case('import os\nvar = "HIP_VISIBLE_DEVICES" if is_rocm else "CUDA_VISIBLE_DEVICES"\nos.environ[var] = "0"\n'),
        Case('import os\nos.environ["HIP_VISIBLE_DEVICES"] = os.environ.pop("CUDA_VISIBLE_DEVICES", "0")\n'),
        Case('import os\nprint(os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("HIP_VISIBLE_DEVICES"))\n'),
        Case('import os\n# os.environ["HIP_VISIBLE_DEVICES"] = "0"\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
             'doc = "never set HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES together"\n'),
        Case('settings = {}\nsettings["CUDA_VISIBLE_DEVICES"] = "0"\nsettings["HIP_VISIBLE_DEVICES"] = "0"\n'),
        Case('import os\ndef use_xpu():\n    os.environ["CUDA_VISIBLE_DEVICES"] = ""\n'
             'def use_gpus(ids):\n    os.environ["HIP_VISIBLE_DEVICES"] = ids\n'),
    )
    INVALID = (
        Case(EXAMPLE.replace("\n        ", "\n").strip() + "\n"),
        Case('import os\nimport subprocess\nsubprocess.run(cmd, env={**os.environ, "CUDA_VISIBLE_DEVICES": ids,'
             ' "HIP_VISIBLE_DEVICES": ids})\n'),
        Case('import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nif is_rocm:\n    os.environ["HIP_VISIBLE_DEVICES"] = "0"\n'),
    )

    @staticmethod
    def message(later: str, earlier: str, row: int) -> str:
        return (f"{later} is set here and {earlier} at line {row}: on a ROCm build torch 2.13 counts GPUs from"
                " HIP_VISIBLE_DEVICES and ignores CUDA_VISIBLE_DEVICES without a word (earlier releases raised),"
                " ROCR_VISIBLE_DEVICES is applied before both, and the HIP runtime reads both: set only one"
                " (HIP_VISIBLE_DEVICES on ROCm)")

    HINT = "Set only one of them (HIP_VISIBLE_DEVICES on ROCm)"

    def leave_Module(self, original_node: cst.Module) -> None:
        text = self.context.text
        if any(removes(text, var) for var in VISIBILITY_VARS):
            return
        cuda = [w for w in self._writes if w.var == "CUDA_VISIBLE_DEVICES"]
        hip = [w for w in self._writes if w.var == "HIP_VISIBLE_DEVICES"]
        for first in cuda:
            for second in hip:
                if self._scope(first.anchor) is not self._scope(second.anchor) \
                        or self._exclusive(first.key_node, second.key_node):
                    continue
                earlier, later = sorted((first, second), key=lambda w: self._where(w))
                self.report(later.key_node, self.message(later.var, earlier.var, self.row(earlier)),
                            fix=Fix(Applicability.DISPLAY_ONLY, self.HINT))
                return

    def _scope(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The function the write runs in (None: module level): writes in different functions
        are different code paths (an XPU set-up and a ROCm one), not one environment."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                return ancestor
        return None

    def _exclusive(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """``a`` and ``b`` sit in the two arms of one ROCm test."""
        gate = self.context.gate_name
        b_ancestors = {id(n): n for n in self.ancestors(b)}
        child = a
        for ancestor in self.ancestors(a):
            if isinstance(ancestor, (cst.If, cst.IfExp)) and id(ancestor) in b_ancestors \
                    and mentions_rocm(ancestor.test, gate):
                arm_a = "body" if child is ancestor.body else "orelse"
                b_child = b
                for up in self.ancestors(b):
                    if up is ancestor:
                        break
                    b_child = up
                arm_b = "body" if b_child is ancestor.body else "orelse"
                return arm_a != arm_b and child is not ancestor.test and b_child is not ancestor.test
            child = ancestor
        return False


class ArchListWithoutRocmArch(_PairRule):
    CODE = "ROC606"
    NAME = "env-cuda-arch-list-without-rocm-arch"
    TRIGGERS = ("TORCH_CUDA_ARCH_LIST",)
    VARS = (ARCH_LIST_VAR,)
    SUMMARY = "TORCH_CUDA_ARCH_LIST set for an extension build, PYTORCH_ROCM_ARCH not."
    WHAT = """
        A file that sets `TORCH_CUDA_ARCH_LIST` to a non-empty value (the Python spellings of
        ROC601, shell scripts, Dockerfiles, YAML, `.env` files) and never mentions
        `PYTORCH_ROCM_ARCH`. Reported at the first setting. Not findings: settings in either
        arm of a ROCm test (`if HIP_BUILD: ... else: os.environ["TORCH_CUDA_ARCH_LIST"] =
        ...`), and files whose name says they are for NVIDIA only (`nv-build.yml`,
        `Dockerfile.cuda`, `build_nvidia.sh`).
        """
    WHY = """
        `torch.utils.cpp_extension` builds ROCm extensions for the targets in
        `PYTORCH_ROCM_ARCH` and ignores `TORCH_CUDA_ARCH_LIST`. Without it, torch 2.13 builds for
        the architectures of the GPUs visible at build time (`_get_rocm_arch_flags`): none in a
        `docker build` or on a CPU-only CI runner, and only the local GPU's elsewhere, so the
        extension fails to load on other AMD GPUs.
        """
    EXAMPLE = """
        import os
        os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0"
        """
    FIX = """
        Display-only: set `PYTORCH_ROCM_ARCH` next to it with the AMD targets you ship (for
        example `gfx90a;gfx942` for MI200 and MI300). rocmport does not know the targets.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case('import os\nos.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0"\nos.environ["PYTORCH_ROCM_ARCH"] = "gfx942"\n'),
        Case('import os\nos.environ.setdefault("PYTORCH_ROCM_ARCH", "gfx90a")\n'
             'os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0"\n'),
        Case('import os\narchs = os.environ.get("TORCH_CUDA_ARCH_LIST", "")\n'),
        Case('import os\nimport torch\nHIP_BUILD = bool(torch.version.hip)\nif not HIP_BUILD:\n'
             '    os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0"\n'),
        Case('import os\nos.environ["TORCH_CUDA_ARCH_LIST"] = ""\n'),
        Case('import os\n# os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0"\n'),
    )
    INVALID = (
        Case(EXAMPLE.replace("\n        ", "\n").strip() + "\n"),
        Case('import os\nimport subprocess\nsubprocess.check_call(["pip", "install", "."],'
             ' env=dict(os.environ, TORCH_CUDA_ARCH_LIST="8.6+PTX"))\n'),
    )

    HINT = "Set PYTORCH_ROCM_ARCH too (e.g. gfx90a;gfx942)"

    @staticmethod
    def message(var: str) -> str:
        return (f"{var} is set but PYTORCH_ROCM_ARCH is not: ROCm extension builds ignore {var} and, without"
                " PYTORCH_ROCM_ARCH, target only the GPUs visible at build time (none in a docker build); set"
                " PYTORCH_ROCM_ARCH too")

    def leave_Module(self, original_node: cst.Module) -> None:
        if ROCM_ARCH_VAR in self.context.text:
            return
        # a branch on ROCm (its NVIDIA arm included) already tells the platforms apart; an
        # empty value clears the list rather than choosing architectures
        writes = [w for w in self._writes if _py_value(w.value) != "" and not self.in_rocm_branch(w.key_node)]
        if not writes:
            return
        first = min(writes, key=lambda w: self._where(w))
        self.report(first.key_node, self.message(first.var), fix=Fix(Applicability.DISPLAY_ONLY, self.HINT))


RULES = [MaxAutotuneEnv, CudagraphsEnv, LateEnv, GemmBackendsEnv, VisibleDevicesBoth, ArchListWithoutRocmArch]
