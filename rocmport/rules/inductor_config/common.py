"""Shared by the rules of the inductor_config family."""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import (
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from rocmport.analysis import needs as _needs
from rocmport.analysis.names import (
    COMPILE_NAMES,
    PARTIAL_NAMES,
    is_module_compile_call,
    qualified_names,
)
from rocmport.analysis.needs import Attribute, Keyword, Need, String, Under
from rocmport.analysis.prescan import PREFILTER
from rocmport.analysis.resolve import (
    assigned_values,
    call_items,
    dict_flow,
    dict_items,
    operand,
    paren,
    string_subscript,
)
from rocmport.analysis.syntax import gated_text, keyword, literal_string, mentions_rocm
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Rule

# The names ``visit_Call`` looks for: a call whose callee cannot be one of them is not
# resolved (``qualified_names``' gate spares most files the scope analysis).
_SETATTR = frozenset({"setattr", "builtins.setattr"})
_COMPILE_OR_PARTIAL = COMPILE_NAMES | PARTIAL_NAMES

CONFIG = "torch._inductor.config"
_CUDAGRAPHS = "triton.cudagraphs"


def falsy(value: cst.BaseExpression) -> bool:
    """A literal that turns a boolean setting off: False, None, 0, ""."""
    if isinstance(value, cst.Name):
        return value.value in ("False", "None")
    if isinstance(value, cst.Integer):
        return value.value.replace("_", "").lstrip("0") == ""
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
        return literal_string(value) == ""
    return False


def _quote(original: str) -> str:
    match = re.match(r"^[rRuU]*('''|\"\"\"|'|\")", original)
    return match.group(1) if match else '"'


def _config_bound(context):
    facts = context.facts
    if facts is None or facts.tree is None or not PREFILTER["enabled"]:
        return None
    pairs = []
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        kind = type(node)
        if kind is ast.Assign or node.value is not None:
            for target in node.targets if kind is ast.Assign else (node.target,):
                if type(target) is ast.Name:
                    pairs.append((target.id, node.value))
    bound: Set[str] = set()
    grew = True
    while grew:
        grew = False
        for name, value in pairs:
            if name in bound:
                continue
            root = value
            while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if facts.may_be_under(value, CONFIG) or (isinstance(root, ast.Name) and root.id in bound):
                bound.add(name)
                grew = True
    return frozenset(bound)


def _assigned(facts):
    """(names, attribute name -> targets) that plain assignments (``a = ...``, ``a.b = ...``,
    annotated too) assign, once per file."""
    found = facts.memo.get("inductor_config:assigned")
    if found is None:
        names: Set[str] = set()
        attributes: Dict[str, list] = {}
        for node in facts.nodes(ast.Assign, ast.AnnAssign):
            for target in node.targets if type(node) is ast.Assign else (node.target,):
                kind = type(target)
                if kind is ast.Name:
                    names.add(target.id)
                elif kind is ast.Attribute:
                    attributes.setdefault(target.attr, []).append(target)
        found = facts.memo["inductor_config:assigned"] = (names, attributes)
    return found


def setting(*keys: str) -> Need:
    """What a setting of one of ``keys`` needs (each rule's ``NEEDS``): an options dict (the
    ``options=`` keyword, an "options" key or subscript) that spells one of the keys, as a
    string or a keyword (``dict(k=v)``), where ``dict_flow`` finds them; or a reference into
    torch._inductor.config and an assignment to an attribute named like a key's last part,
    a ``.patch(...)``, or ``setattr`` with a key's name as a string."""
    lasts = {key.rsplit(".", 1)[-1] for key in keys}
    suffixes = {".".join(key.split(".")[i:]) for key in keys for i in range(key.count(".") + 1)}
    return ((Keyword("options") | String("options", whole=True)) & (String(*keys, whole=True) | Keyword(*keys))
            | Under(CONFIG) & (Attribute(*lasts, assigned=True) | Attribute("patch") | String(*suffixes, whole=True)))


class InductorSetting(Rule):
    """Finds every place an inductor config value is set; subclasses pick the keys."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider, ScopeProvider)
    TRIGGERS = ("cudagraph", "max_autotune", "memory_planning")
    KEYS: Tuple[str, ...] = ()
    ROCM_TEXT = "False"
    WHAT_IT_DOES = ""

    @classmethod
    def may_match(cls, facts) -> bool:
        # A setting is found in an options dict (the ``options=`` keyword, an "options" key
        # or subscript), or written on torch._inductor.config or a local alias of it (which
        # is itself such a reference): an assignment to an attribute named like one of the
        # keys, ``.patch(...)``, or setattr() with the name as a string.
        # An options dict reports only keys of ``KEYS`` (``keys_in``).
        if ("options" in _needs.keywords(facts) or "options" in _needs.strings(facts)) and cls.keys_in(facts):
            return True
        if not facts.may_reference_under(CONFIG):
            return False
        names, attributes = _assigned(facts)

        def configish(node: ast.AST) -> bool:  # ``config_prefix`` may accept it
            if facts.may_be_under(node, CONFIG):
                return True
            while isinstance(node, ast.Attribute):
                node = node.value
            return isinstance(node, ast.Name) and node.id in names  # a local alias

        lasts = {key.rsplit(".", 1)[-1] for key in cls.KEYS}
        suffixes = {".".join(key.split(".")[i:]) for key in cls.KEYS for i in range(key.count(".") + 1)}
        if any(configish(target.value) for last in lasts for target in attributes.get(last, ())):
            return True
        patches = facts.calls.get("patch", ())
        if any(isinstance(call.func, ast.Attribute) and configish(call.func.value) for call in patches):
            return True
        return any(len(call.args) == 3 and configish(call.args[0]) and isinstance(call.args[1], ast.Constant)
                   and call.args[1].value in suffixes for call in facts.calls.get("setattr", ()))

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """A value is checked where a statement spells its key: a config attribute written
        (its last part), ``setattr`` with the key's name, a dict key or keyword that
        ``dict_flow`` yields (the key as a string or a keyword); and the flows start at a
        ``.patch(...)``, an ``options=`` or an ``"options"`` key. The rest it reads is the
        statement's own, its ancestors, module-level statements and what the scope analysis
        binds there (an alias of the config, a dict filled in the same function)."""
        return frozenset({key.rsplit(".", 1)[-1] for key in cls.KEYS} | {"patch", "options"})

    def __init__(self, context):
        super().__init__(context)
        self._seen: Set[int] = set()

    # -- which object is torch._inductor.config (or a sub-config of it) ---------------------
    def config_prefix(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """"" for ``torch._inductor.config``, "triton" for its ``triton`` sub-config, ...;
        None when ``expr`` is not (a part of) inductor's config."""
        for name in qualified_names(self, expr):
            if name == CONFIG:
                return ""
            if name.startswith(CONFIG + "."):
                return name[len(CONFIG) + 1:]
        if depth > 3:
            return None
        if isinstance(expr, cst.Name):
            bound = self.config_bound()
            if bound is not None and expr.value not in bound:
                return None
            for value in assigned_values(self, expr):  # cfg = torch._inductor.config
                prefix = self.config_prefix(value, depth + 1)
                if prefix is not None:
                    return prefix
        elif isinstance(expr, cst.Attribute):
            prefix = self.config_prefix(expr.value, depth + 1)
            if prefix is not None:
                return f"{prefix}.{expr.attr.value}" if prefix else expr.attr.value
        return None

    @classmethod
    def keys_in(cls, facts) -> bool:
        """Does the file spell one of ``KEYS`` where ``dict_flow`` finds keys: a string literal
        (a dict key, a subscript) or a keyword (``dict(k=v)``, ``.update(k=v)``)?"""
        return any(key in _needs.strings(facts) or key in _needs.keywords(facts) for key in cls.KEYS)

    def config_bound(self):
        """The names a plain assignment may bind to (a part of) inductor's config: the only
        names ``config_prefix`` follows into their values, which spares most files the scope
        analysis ``assigned_values`` needs. From CPython's tree: a name assigned a value whose
        dotted root may resolve under the config, or a name already found (to a fixpoint).
        None (every name) without the file's facts."""
        return self.context.shared("inductor_config:bound", _config_bound)

    def config_key(self, target: cst.BaseExpression) -> Optional[str]:
        if not isinstance(target, cst.Attribute):
            return None
        prefix = self.config_prefix(target.value)
        if prefix is None:
            return None
        return f"{prefix}.{target.attr.value}" if prefix else target.attr.value

    # -- visitors ---------------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            t = target.target
            key = self.config_key(t)
            if key is not None:
                self.check(key, node.value, f"{key} = ...")
                continue
            sub = string_subscript(t)
            if sub is not None and sub[1] == "options":  # kwargs["options"] = {...}
                self.check_options(node.value, direct_compile=False)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            key = self.config_key(node.target)
            if key is not None:
                self.check(key, node.value, f"{key} = ...")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        names = qualified_names(self, func, _SETATTR)
        if (names & _SETATTR or (isinstance(func, cst.Name) and func.value == "setattr")) \
                and len(node.args) == 3 and all(a.keyword is None and a.star == "" for a in node.args):
            prefix = self.config_prefix(node.args[0].value)
            name = literal_string(node.args[1].value)
            if prefix is not None and name is not None:
                key = f"{prefix}.{name}" if prefix else name
                self.check(key, node.args[2].value, f'setattr(config, "{name}", ...)')
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "patch" and self.config_prefix(func.value) == "":
            self.check_patch(node)
            return
        if self.is_compile_call(node):
            arg = keyword(node, "options")
            if arg is not None:
                self.check_options(arg.value, direct_compile=True)
            for a in node.args:  # torch.compile(**{"options": {...}})
                if a.star == "**" and isinstance(a.value, cst.Dict):
                    for key, value in dict_items(a.value):
                        if key == "options":
                            self.check_options(value, direct_compile=True)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        # {"options": {...}}: compile keyword arguments kept for later (accelerate's
        # TorchDynamoPlugin, a kwargs dict handed to torch.compile(**kwargs)).
        if literal_string(node.key) != "options":
            return
        grand = self.parent(self.parent(node))
        if isinstance(grand, cst.Arg) and grand.star == "**":
            call = self.parent(grand)
            if isinstance(call, cst.Call) and self.is_compile_call(call):
                return  # handled with the call
        self.check_options(node.value, direct_compile=False)

    # -- the spellings ----------------------------------------------------------------------
    def is_compile_call(self, call: cst.Call) -> bool:
        names = qualified_names(self, call.func, _COMPILE_OR_PARTIAL)
        if names & COMPILE_NAMES or is_module_compile_call(self, call):
            return True
        if names & PARTIAL_NAMES and call.args and call.args[0].keyword is None and call.args[0].star == "":
            return bool(qualified_names(self, call.args[0].value, COMPILE_NAMES) & COMPILE_NAMES)
        return False

    def check_patch(self, call: cst.Call) -> None:
        args = call.args
        if (len(args) >= 2 and args[0].keyword is None and args[0].star == "" and args[1].keyword is None
                and args[1].star == ""):
            name = literal_string(args[0].value)  # config.patch("max_autotune", True)
            if name is not None:
                self.check(name, args[1].value, f'config.patch("{name}", ...)')
            return
        for key, value in call_items(call):
            self.check(key, value, f'config.patch({key}=...)')

    def check_options(self, value: cst.BaseExpression, direct_compile: bool) -> None:
        facts = self.context.facts
        if facts is not None and PREFILTER["enabled"] and not self.keys_in(facts):
            return
        for key, item in dict_flow(self, value):
            if key == _CUDAGRAPHS and (direct_compile or not isinstance(value, cst.Dict)):
                continue  # ROC103 reports "triton.cudagraphs" in torch.compile(options=...)
            self.check(key, item, f'options={{"{key}": ...}}')

    # -- the decision and the fix -----------------------------------------------------------
    def hazardous(self, key: str, value: cst.BaseExpression) -> bool:
        return not falsy(value)

    def check(self, key: str, value: cst.BaseExpression, where: str) -> None:
        if key not in self.KEYS or id(value) in self._seen:
            return
        self._seen.add(id(value))
        if not self.hazardous(key, value):
            return
        if mentions_rocm(value, self.context.gate_name) or self.in_rocm_branch(value):
            return  # already gated: `False if is_rocm else True`, `not is_rocm`, `if not is_rocm:`
        original = operand(self, value)
        rocm = self.ROCM_TEXT
        if rocm.startswith('"'):
            q = _quote(original) if isinstance(value, cst.SimpleString) else '"'
            rocm = f"{q}{rocm[1:-1]}{q}"
        text = paren(self, value, gated_text(rocm, self.context.gate_name, original))
        self.report(
            value,
            f"{key} {self.WHAT_IT_DOES}",
            fix=Fix(Applicability.SAFE, f"Set {key} to {rocm} on ROCm", (self.context.replace(value, text),),
                    ("gate",)),
        )


_SPELLINGS = """
        Every spelling of `torch._inductor.config`: the dotted path on `torch`,
        `import torch._inductor.config as ic`, `from torch._inductor import config`,
        function-local imports, a local alias (`cfg = torch._inductor.config`), the nested
        `config.triton.<name>`, `setattr(config, "<name>", value)` with a literal name,
        `config.patch({...})`, `config.patch(name=value)`, `config.patch("name", value)` and
        `config.patch(**{...})` as a context manager or a decorator, and the `options=` dict of
        `torch.compile` (a literal, a dict variable filled in the same file, or a
        `{"options": {...}}` kwargs dict). Reads, assignments of a false value and values that
        are already gated (`not is_rocm`, `False if is_rocm else True`, code under `if not is_rocm:`) are not
        findings. The rule works from names: a name that the installed torch lacks is still
        recognised.
        """


def what(head: str) -> str:
    """The rule's own first sentence, then the spellings every ROC2xx rule knows."""
    return "\n        " + head + "\n" + _SPELLINGS.lstrip("\n")
