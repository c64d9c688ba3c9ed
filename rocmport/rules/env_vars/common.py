"""Shared by the rules of the env_vars family."""

from __future__ import annotations

import re
from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider, ScopeProvider

from rocmport.analysis.names import qualified_names
from rocmport.analysis.needs import Call, Key, Need, String, Under
from rocmport.analysis.resolve import assigned_values, operand, paren, string_subscript
from rocmport.analysis.syntax import keyword, literal_string, mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Rule

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


def py_value(node: cst.BaseExpression):
    """The string a Python value puts into the environment, or None when unknown."""
    text = literal_string(node)
    if text is not None:
        return text
    if isinstance(node, cst.Integer):
        return node.value
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return "1" if node.value == "True" else "0"  # a bug (TypeError), but its intent
    return None


# An arch list of arch-specific NVIDIA targets only ("9.0a", "10.0a;12.0a", "sm_90a"): a build of
# Hopper or Blackwell kernels (wgmma, tcgen05), which have no AMD counterpart to target.
_ARCH_SPECIFIC = re.compile(r"(?i)^(?:sm_?)?\d+\.?\d*a(?:\+ptx)?$")
# A file that builds for ROCm somewhere: its words.
ROCM_BUILD_WORD = re.compile(r"(?i)\brocm|\bhip(?:cc|ify|_|\b)|\bamd\b|\bgfx\d|\bmi[23]\d\d|radeon")


def nvidia_arch_only(value: Optional[str]) -> bool:
    """Does an arch list name only arch-specific NVIDIA targets (``9.0a``, ``10.0a``)?"""
    if not value:
        return False
    parts = [p for p in re.split(r"[;,\s]+", value.strip()) if p]
    return bool(parts) and all(_ARCH_SPECIFIC.match(p) for p in parts)


class EnvWrite:
    __slots__ = ("var", "key_node", "value", "where", "live", "anchor")

    def __init__(self, var, key_node, value, where, live, anchor):
        self.var = var
        self.key_node = key_node  # the string literal naming the variable (or keyword)
        self.value = value  # the value expression
        self.where = where  # "os.environ", "os.putenv", "a child process' env"
        self.live = live  # True: this process' os.environ
        self.anchor = anchor  # the statement-level node, for ordering


def env_write(*variables: str) -> Need:
    """What a write of one of the variables needs (each rule's ``NEEDS``): the variable named
    as a subscript key, a dict key, a keyword (``update``, ``dict``) or the first argument of
    ``setdefault``, ``__setitem__`` or ``os.putenv``; and a write to os.environ (or a copy of
    it), os.putenv, or the env= of a subprocess, os.exec*, os.spawn* or asyncio call, which
    all resolve under os, subprocess or asyncio."""
    return (Key(*variables) | Call("os.putenv") & String(*variables, whole=True)) & Under("os", "subprocess", "asyncio")


class EnvRule(Rule):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider, ScopeProvider)

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
    def writes_in_assign(self, node: cst.Assign) -> Iterator[EnvWrite]:
        for target in node.targets:
            sub = string_subscript(target.target)
            if sub is None:
                continue
            kind = self.env_kind(sub[0])
            if kind is not None:
                key_node = target.target.slice[0].slice.value
                yield EnvWrite(sub[1], key_node, node.value,
                                "os.environ" if kind == "live" else "a child process' environment",
                                kind == "live", node)

    def writes_in_call(self, node: cst.Call) -> Iterator[EnvWrite]:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("setdefault", "update", "__setitem__"):
            kind = self.env_kind(func.value)
            if kind is None:
                return
            where = "os.environ" if kind == "live" else "a child process' environment"
            if func.attr.value == "update":
                for arg in node.args:
                    if arg.keyword is not None:
                        yield EnvWrite(arg.keyword.value, arg.keyword, arg.value, where, kind == "live", node)
                    elif isinstance(arg.value, cst.Dict):
                        yield from self._dict_writes(arg.value, where, kind == "live", node)
            elif len(node.args) >= 2 and node.args[0].keyword is None and node.args[0].star == "":
                var = literal_string(node.args[0].value)
                if var is not None:
                    yield EnvWrite(var, node.args[0].value, node.args[1].value, where, kind == "live", node)
            return
        if "os.putenv" in qualified_names(self, func) and len(node.args) == 2:
            var = literal_string(node.args[0].value)
            if var is not None:
                yield EnvWrite(var, node.args[0].value, node.args[1].value, "os.putenv", False, node)
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

    def writes_in_dict(self, node: cst.Dict) -> Iterator[EnvWrite]:
        """{**os.environ, "X": "1"} anywhere: an environment being built."""
        if self._has_environ_spread(node):
            yield from self._dict_writes(node, "a child process' environment", False, node)

    def writes_in_dict_call(self, node: cst.Call) -> Iterator[EnvWrite]:
        """dict(os.environ, X="1") anywhere."""
        func = node.func
        if isinstance(func, cst.Name) and func.value == "dict" and node.args and node.args[0].keyword is None \
                and node.args[0].star == "" and self.env_kind(node.args[0].value):
            for arg in node.args[1:]:
                if arg.keyword is not None:
                    yield EnvWrite(arg.keyword.value, arg.keyword, arg.value, "a child process' environment",
                                    False, node)

    def _has_environ_spread(self, node: cst.Dict) -> bool:
        return any(isinstance(e, cst.StarredDictElement) and self.env_kind(e.value) for e in node.elements)

    def _dict_writes(self, d: cst.Dict, where: str, live: bool, anchor) -> Iterator[EnvWrite]:
        for element in d.elements:
            if isinstance(element, cst.DictElement):
                var = literal_string(element.key)
                if var is not None:
                    yield EnvWrite(var, element.key, element.value, where, live, anchor)

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

    def consider(self, write: EnvWrite) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class GatedValue(EnvRule):
    """ROC601 / ROC602 / ROC604: a hazardous value; the fix gates it."""

    def consider(self, write: EnvWrite) -> None:
        if id(write.value) in self._seen:
            return
        value = py_value(write.value)
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


def what(head: str) -> str:
    return "\n        " + head + "\n" + _PY_SPELLINGS.lstrip("\n")



VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
ARCH_LIST_VAR = "TORCH_CUDA_ARCH_LIST"
ROCM_ARCH_VAR = "PYTORCH_ROCM_ARCH"
PAIR_VARS = frozenset(VISIBILITY_VARS + (ARCH_LIST_VAR, ROCM_ARCH_VAR))


class PairRule(EnvRule):
    """Collects this file's writes of ``VARS``; ``pairs`` decides what is reported."""

    VARS: Tuple[str, ...] = ()  # and ``NEEDS = env_write(*VARS)``

    def visit_Module(self, node: cst.Module) -> None:
        self._writes: List[EnvWrite] = []

    def consider(self, write: EnvWrite) -> None:
        if write.var in self.VARS and id(write.key_node) not in self._seen:
            self._seen.add(id(write.key_node))
            self._writes.append(write)

    def row(self, write: EnvWrite) -> int:
        return self.context.position(write.key_node).start.line

    def _where(self, write: EnvWrite) -> Tuple[int, int]:
        start = self.context.position(write.key_node).start
        return start.line, start.column
