"""What calling a function of the project does, and which functions compile what they are given.

A shared analysis (facts, never findings) on CPython's tree, for the project index (``index``:
one module's answers, computed once and recorded in the cache key of the files that ask) and
for a file's own functions. Two facts:

- :func:`compilers`: the module's functions (and classes) that compile what they are given:
  ``"call"`` -- called with a function or a module (or used as a decorator), they compile it
  (``return torch.compile(fn, ...)``, ``m.forward = torch.compile(m.forward)``, a class whose
  ``__init__`` compiles its first argument, ``functools.partial(torch.compile, ...)``);
  ``"class"`` -- used as a class decorator, they make the class compile its own ``forward``
  (``self.forward = torch.compile(self.forward)`` in a wrapper they install); ``"factory"`` --
  called, they return such a decorator (``@compile_model(dynamic=False)``).
- :func:`effects`: per top-level function, the first call its body makes (directly, through
  the module's other functions, or through another module's functions: ``external``) that
  Dynamo cannot trace (``untraceable``: ctypes, subprocess, NVML, amdsmi, the torch functions
  that return a non-tensor, Triton's driver) and the first device query that initialises the
  GPU runtime (``query``: torch's, or a method of the object DeepSpeed's ``get_accelerator()``
  returns that makes one, ``ACCELERATOR_QUERIES``). A function under ``torch.compiler.disable`` has no untraceable call
  (it runs eagerly), nor has one whose body tests ``torch.cuda.is_initialized()`` a query (it
  asks only a runtime already up).

Which calls these are, on torch 2.13 (and 2.11 on an H100: ``docs/rules.md``, ROC405 and
ROC712): ``torch.cuda.get_device_properties`` is constant-folded by Dynamo (its
``gcnArchName``, ``major`` too), as are ``get_device_capability``, ``current_device``,
``mem_get_info`` and ``is_available``; ``device_count``, ``get_device_name`` and
``get_arch_list`` return a non-tensor from a ``torch.*`` call, which breaks the graph
(``Unsupported`` under ``fullgraph=True``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from .bindings import dotted, module_imports, resolve_name, top_level, walk
from .cuda_only import imported_names
from .platforms import ROCM, Env, Test, classify as _classify_test, module_tests

COMPILE = frozenset({"torch.compile", "torch.compiler.compile"})
PARTIAL = frozenset({"functools.partial"})
DISABLE = frozenset({"torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo",
                     "torch._dynamo.eval_frame.disable"})
# Decorators that make a function opaque to Dynamo (it calls it without tracing its body).
OPAQUE = DISABLE | frozenset({"torch.library.custom_op", "torch._dynamo.allow_in_graph",
                              "torch.compiler.allow_in_graph", "torch._library.custom_ops.custom_op"})
CACHES = frozenset({"functools.lru_cache", "functools.cache"})
# Calls that Dynamo cannot trace: prefix of the qualified name -> kind
UNTRACEABLE_MODULES = {"ctypes": "ctypes", "subprocess": "subprocess", "pynvml": "nvml", "py3nvml": "nvml",
                       "nvidia_smi": "nvml", "amdsmi": "amdsmi"}
UNTRACEABLE_NAMES = {
    "os.system": "subprocess", "os.popen": "subprocess",
    "torch.cuda.device_count": "non-tensor", "torch.cuda.get_device_name": "non-tensor",
    "torch.cuda.get_arch_list": "non-tensor",
    "triton.runtime.driver.active.get_current_target": "triton-driver",
}
# Device queries that initialise the GPU runtime (torch 2.13 ``torch/cuda/__init__.py``: each
# calls ``_lazy_init()``, or ``cudaGetDeviceCount`` / ``hipGetDeviceCount``); ``device_count``
# initialises HIP on ROCm where the ``amdsmi`` package is missing (``_device_count_amdsmi``
# falls back to ``hipGetDeviceCount``), never CUDA (NVML answers there).
LAZY_INIT = frozenset({
    "torch.cuda.get_device_properties", "torch.cuda.get_device_capability", "torch.cuda.get_device_name",
    "torch.cuda.current_device", "torch.cuda.mem_get_info", "torch.cuda.memory.mem_get_info",
    "torch.cuda.set_device", "torch.cuda.init", "triton.runtime.driver.active.get_current_target",
})
DEVICE_COUNT = "torch.cuda.device_count"
IS_AVAILABLE = "torch.cuda.is_available"
# ``is_available()`` (``cudaGetDeviceCount`` / ``hipGetDeviceCount`` too) is left to the rule
# that reads one function: at import it is everywhere and the same on both vendors.
QUERIES = LAZY_INIT | {DEVICE_COUNT}
INITIALIZED = frozenset({"torch.cuda.is_initialized"})
# DeepSpeed's accelerator abstraction (``deepspeed.accelerator``, the repository's top-level
# ``accelerator`` package, and projects' own copies of it): ``get_accelerator()`` returns the
# platform's accelerator object, ``CUDA_Accelerator`` on ROCm (torch.cuda is HIP there). Its
# methods that reach ``_lazy_init()`` on torch 2.13 (``accelerator/cuda_accelerator.py`` at
# deepspeedai/DeepSpeed 10f76c2 and after #8078): method -> the torch query it makes. Not
# here: ``device_count`` (to choose the object the factory itself counts the devices and calls
# ``torch.cuda.is_available()``, unless ``DS_ACCELERATOR`` names it: the driver is up before
# the method runs), ``is_available`` and ``is_bf16_supported`` (``is_available()`` alone on
# ROCm: torch answers bf16 from ``torch.version.hip``), ``device_name`` and
# ``communication_backend_name`` (strings), ``memory_allocated`` and the other allocator
# statistics (``memory_stats`` returns ``{}`` before the runtime is up).
ACCELERATOR_QUERIES = {
    "current_device": "torch.cuda.current_device",
    "current_device_name": "torch.cuda.current_device",  # "cuda:{}".format(current_device())
    "set_device": "torch.cuda.set_device",
    "total_memory": "torch.cuda.get_device_properties",  # get_device_properties(i).total_memory
    "available_memory": "torch.cuda.get_device_properties",  # NVML, else total_memory(): ROCm has no NVML
    "is_triton_supported": "torch.cuda.get_device_capability",  # after is_available()
    "is_fp16_supported": "torch.cuda.get_device_capability",  # after is_available()
    "supported_dtypes": "torch.cuda.get_device_capability",  # through is_fp16_supported()
}
ACCELERATOR_FACTORY = "get_accelerator"


def accelerator_factory(name: Optional[str]) -> bool:
    """Is ``name`` (a qualified name) an accelerator factory: ``get_accelerator`` of a module
    named ``accelerator`` or of one under it (``deepspeed.accelerator``,
    ``accelerator.real_accelerator``, a project's ``myproject.accelerator``)?"""
    if not name:
        return False
    parts = name.split(".")
    return parts[-1] == ACCELERATOR_FACTORY and "accelerator" in parts[:-1]


def accelerator_method(func: ast.AST, qualified: Callable[[ast.AST], Iterable[str]],
                       bound: Iterable[str] = ()) -> Optional[str]:
    """The device query ``func`` (a call's callee) makes as a method of an accelerator object:
    ``get_accelerator().total_memory`` (the factory's result) or ``acc.total_memory`` (``acc``
    one of the ``bound`` names, assigned the factory's result at module level). ``qualified``
    gives the qualified names a node may have. The method's name, or None."""
    if not isinstance(func, ast.Attribute) or func.attr not in ACCELERATOR_QUERIES:
        return None
    value = func.value
    if isinstance(value, ast.Call) and any(accelerator_factory(n) for n in qualified(value.func)):
        return func.attr
    if isinstance(value, ast.Name) and value.id in bound:
        return func.attr
    return None
# ``if not torch.compiler.is_compiling():``: the code that Dynamo takes and the code it does
# not (the eager side is never traced)
_COMPILING = ("is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling", "is_exporting")
# Bytes a module must hold to make a call ``effects`` records (or a call of another
# module's function: the words of that module then).
WORDS = (b"ctypes", b"subprocess", b"os.system", b"popen", b"nvml", b"nvidia_smi", b"amdsmi", b"device_count",
         b"get_device_name", b"get_arch_list", b"get_current_target", b"get_device_propert",
         b"get_device_capability", b"current_device", b"mem_get_info", b"set_device", b"cuda.init",
         ACCELERATOR_FACTORY.encode())
_MAX_DEPTH = 6
# The name under which a module's own top-level code is asked about (``effects(IMPORT)``):
# what importing it does, its imports of the project's modules included.
IMPORT = "<import>"
# modules whose ``compile`` is not torch's
_NOT_TORCH = frozenset({"re", "regex", "fnmatch", "glob", "triton", "jax", "numba", "tf", "tensorflow", "ast"})


@dataclass(frozen=True)
class Site:
    """A call made by a function: ``what`` the callee's qualified name, ``kind`` its kind
    (``UNTRACEABLE_*``, or "query"), at ``line`` of module ``module``."""

    what: str
    kind: str
    module: str
    line: int


@dataclass(frozen=True)
class Effects:
    """What calling a function does on ROCm (through the calls it makes): its first call that
    Dynamo cannot trace (``untraceable``), its first device query (``query``:
    ``QUERIES`` or ``is_available``) and its first query that calls ``_lazy_init()``
    (``init``: ``LAZY_INIT``), and whether it is cached (``functools.lru_cache`` / ``cache``:
    Dynamo traces the wrapped function anyway)."""

    untraceable: Optional[Site] = None
    query: Optional[Site] = None
    init: Optional[Site] = None
    cached: bool = False

    def __bool__(self) -> bool:
        return self.untraceable is not None or self.query is not None


NONE = Effects()
External = Callable[[str, int], Effects]  # (absolute dotted name, depth) -> another module's function's effects


def classify(name: str) -> Optional[str]:
    """The kind of untraceable call ``name`` (a qualified name) is, or None."""
    kind = UNTRACEABLE_NAMES.get(name)
    if kind is not None:
        return kind
    return UNTRACEABLE_MODULES.get(name.split(".", 1)[0]) if "." in name else None


def _guard(test: ast.AST) -> bool:
    """Does ``test`` call a ``torch.compiler.is_compiling()``-style function?"""
    for node in walk(test):
        if isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            if name.rsplit(".", 1)[-1] in _COMPILING:
                return True
    return False


def _calls(body: List[ast.stmt], env: Optional[Env] = None) -> Iterator[ast.Call]:
    """The calls a function body runs, in source order: not those of nested definitions or
    lambdas (defined, not run), nor either side of an ``is_compiling()`` test; with ``env``,
    only those that can run on ROCm (not under ``if torch.version.cuda:``, after ``if
    is_rocm(): return``, right of ``is_cuda() and``: ``platforms.classify`` reads each test)."""
    found: List[ast.Call] = []
    _block_calls(body, env, found)
    found.sort(key=lambda c: (c.lineno, c.col_offset))
    return iter(found)


def _test(expr: ast.AST, env: Optional[Env]) -> Test:
    return _classify_test(expr, env) if env is not None else Test()


def _exits(body: List[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _block_calls(body: List[ast.stmt], env: Optional[Env], found: List[ast.Call]) -> None:
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.If):
            _expr_calls(stmt.test, env, found)
            if _guard(stmt.test):
                continue
            test = _test(stmt.test, env)
            if ROCM in test.true:
                _block_calls(stmt.body, env, found)
            if ROCM in test.false:
                _block_calls(stmt.orelse, env, found)
            elif _exits(stmt.body) and not stmt.orelse:
                return  # ``if not is_rocm: return``: the rest never runs on ROCm
            continue
        for name, value in ast.iter_fields(stmt):
            if isinstance(value, list):
                statements = [v for v in value if isinstance(v, ast.stmt)]
                if statements:
                    _block_calls(statements, env, found)
                for item in value:
                    if isinstance(item, ast.excepthandler):
                        _block_calls(item.body, env, found)
                    elif isinstance(item, (ast.expr, ast.withitem, ast.keyword, ast.comprehension)):
                        _expr_calls(item, env, found)
            elif isinstance(value, ast.AST) and not isinstance(value, ast.stmt):
                _expr_calls(value, env, found)


def _expr_calls(node: ast.AST, env: Optional[Env], found: List[ast.Call]) -> None:
    if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    if isinstance(node, ast.BoolOp):
        runs = Test()  # where the operand being read runs: every earlier one true (and) or false (or)
        for value in node.values:
            if ROCM not in runs.true:
                return
            _expr_calls(value, env, found)
            test = _test(value, env)
            runs = runs & test if isinstance(node.op, ast.And) else runs & test.negated()
        return
    if isinstance(node, ast.IfExp):
        _expr_calls(node.test, env, found)
        if _guard(node.test):
            return
        test = _test(node.test, env)
        if ROCM in test.true:
            _expr_calls(node.body, env, found)
        if ROCM in test.false:
            _expr_calls(node.orelse, env, found)
        return
    if isinstance(node, ast.Call):
        found.append(node)
    for child in ast.iter_child_nodes(node):
        _expr_calls(child, env, found)


class ModuleFacts:
    """One module's facts from its tree: imports, top-level functions and classes, the names
    it binds to ctypes libraries, and (on demand) its compilers and each function's effects."""

    def __init__(self, name: str, tree: ast.AST, absolute, external: Optional[External] = None,
                 external_compiler: Optional[Callable[[str], Optional[str]]] = None,
                 platform_lookup: Optional[Callable[[str], Optional[Test]]] = None):
        body = getattr(tree, "body", [])
        self.body = body
        self.absolute = absolute
        self.platform_lookup = platform_lookup
        self._env: Optional[Env] = None
        self.name = name
        self.imports = module_imports(body, absolute)
        self.functions: Dict[str, ast.AST] = {}
        self.classes: Dict[str, ast.ClassDef] = {}
        self.libraries: Set[str] = set()  # module-level names bound to a ctypes library
        self.partials: Dict[str, ast.Call] = {}
        self.accelerators: Set[str] = set()  # module-level names bound to ``get_accelerator()``
        for stmt in top_level(body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                value = stmt.value
                if isinstance(value, ast.Call):
                    callee = self.resolve(value.func) or ""
                    if callee.split(".", 1)[0] == "ctypes":
                        self.libraries.add(stmt.targets[0].id)
                    elif callee in PARTIAL:
                        self.partials[stmt.targets[0].id] = value
                    elif accelerator_factory(callee):
                        self.accelerators.add(stmt.targets[0].id)
                elif (self.resolve(value) or "").startswith("ctypes.cdll."):
                    self.libraries.add(stmt.targets[0].id)
        self.external = external
        self.external_compiler = external_compiler
        self._effects: Dict[str, Effects] = {}
        self._active: Set[str] = set()
        self._compiler_kinds: Dict[str, Optional[str]] = {}

    def env(self) -> Env:
        """What the module's names mean as platform tests (``platforms.Env``)."""
        if self._env is None:
            self._env = Env(dict(self.imports), {}, self.platform_lookup)
            module_tests(self.body, self._env)
        return self._env

    def resolve(self, node: ast.AST) -> Optional[str]:
        """The absolute dotted name a callee spells (imports, the module's own functions and
        classes)."""
        return resolve_name(self.imports, set(self.functions) | set(self.classes), self.name, node)

    def qualified(self, node: ast.AST) -> Tuple[str, ...]:
        """``resolve`` as the (at most one) qualified name ``node`` has here."""
        name = self.resolve(node)
        return (name,) if name is not None else ()

    # -- effects ------------------------------------------------------------------------
    def effects(self, name: str, depth: int = 0) -> Effects:
        """The effects of the module's top-level function ``name`` (NONE when unknown)."""
        found = self._effects.get(name)
        if found is not None:
            return found
        node = self.functions.get(name) or _init_of(self.classes.get(name)) if name != IMPORT else None
        if (node is None and name != IMPORT) or name in self._active or depth > _MAX_DEPTH:
            return NONE
        self._active.add(name)
        try:
            found = self._compute(node, depth) if node is not None else self._import(depth)
        finally:
            self._active.discard(name)
        self._effects[name] = found
        return found

    def all_effects(self) -> Dict[str, Effects]:
        return {name: self.effects(name) for name in self.functions}

    def _decorated(self, node, names: FrozenSet[str]) -> bool:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if (self.resolve(target) or "") in names:
                return True
        return False

    def _import(self, depth: int) -> Effects:
        """What importing the module does on ROCm (``effects(IMPORT)``): its top-level calls,
        and before them the imports of the project's modules it makes at its top (each
        module's own import, through ``external``)."""
        if self.external is not None and self.absolute is not None:
            for stmt in self.body:
                for module in imported_names(stmt, self.absolute):
                    inner = self.external(f"{module}.{IMPORT}", depth + 1)
                    if inner.query is not None:
                        return inner
        return self._from_calls(_calls(self.body, self.env()), depth, False)

    def _compute(self, node, depth: int) -> Effects:
        if self._decorated(node, OPAQUE):
            return NONE
        return self._from_calls(_calls(node.body, self.env()), depth, self._decorated(node, CACHES))

    def _from_calls(self, calls: Iterable[ast.Call], depth: int, cached: bool) -> Effects:
        found: Dict[str, Optional[Site]] = {"untraceable": None, "query": None, "init": None}
        asks_initialized = False
        for call in calls:
            method = accelerator_method(call.func, self.qualified, self.accelerators)
            if method is not None:
                value = call.func.value  # type: ignore[attr-defined]
                spelled = f"{dotted(value.func)}()" if isinstance(value, ast.Call) else dotted(value)
                site = Site(f"{spelled}.{method}", "query", self.name, call.lineno)
                found["query"] = found["query"] or site
                found["init"] = found["init"] or site
                continue
            name = self.resolve(call.func)
            if name in INITIALIZED:
                asks_initialized = True
                continue
            if name is not None:
                kind = classify(name)
                if kind is not None and found["untraceable"] is None:
                    found["untraceable"] = Site(name, kind, self.name, call.lineno)
                if name in QUERIES or name == IS_AVAILABLE:
                    if found["query"] is None:
                        found["query"] = Site(name, "query", self.name, call.lineno)
                    if name in LAZY_INIT and found["init"] is None:
                        found["init"] = Site(name, "query", self.name, call.lineno)
                if kind is not None or name in QUERIES or name == IS_AVAILABLE:
                    continue
            spelled = dotted(call.func)
            if spelled is not None and spelled.split(".", 1)[0] in self.libraries and "." in spelled:
                if found["untraceable"] is None:
                    found["untraceable"] = Site(spelled, "ctypes", self.name, call.lineno)
                continue
            if name is None:
                continue
            if isinstance(call.func, ast.Name) and (call.func.id in self.functions or call.func.id in self.classes) \
                    and call.func.id not in self.imports:
                inner = self.effects(call.func.id, depth + 1)
            elif name.startswith(self.name + ".") or name.split(".", 1)[0] in ("torch", "os", "sys", "functools"):
                continue
            elif self.external is not None:
                inner = self.external(name, depth + 1)
            else:
                continue
            for key in found:
                if found[key] is None and getattr(inner, key) is not None:
                    found[key] = getattr(inner, key)
            if all(value is not None for value in found.values()):
                break
        if asks_initialized:
            found["query"] = found["init"] = None
        return Effects(found["untraceable"], found["query"], found["init"], cached)

    # -- compilers ------------------------------------------------------------------------
    def compilers(self) -> Dict[str, str]:
        """name -> "call" | "class" | "factory" for the module's functions, classes and
        partials that compile what they are given (see the module's docstring)."""
        found = {}
        for name in [*self.partials, *self.functions, *self.classes]:
            kind = self.compiler(name)
            if kind is not None:
                found[name] = kind
        return found

    def compiler(self, name: str) -> Optional[str]:
        """How the module's ``name`` compiles what it is given, computed on first ask (and
        for the module's other definitions it delegates to): only a definition that calls
        something named ``*compile*`` (torch.compile, a partial of it, the project's
        ``maybe_compile``) can compile, so the others are not read."""
        if name in self._compiler_kinds:
            return self._compiler_kinds[name]
        self._compiler_kinds[name] = None  # a cycle of delegations reads None
        kind: Optional[str] = None
        call = self.partials.get(name)
        if call is not None:
            if call.args and (self.resolve(call.args[0]) or "") in COMPILE:
                kind = "call"
        elif name in self.functions:
            node = self.functions[name]
            if self._calls_a_compiler(node):
                kind = self._function_compiles(node)
        elif name in self.classes:
            node = self.classes[name]
            if self._calls_a_compiler(node) and self._class_compiles(node):
                kind = "call"
        self._compiler_kinds[name] = kind
        return kind

    def _calls_a_compiler(self, node: ast.AST) -> bool:
        """Does ``node`` call something that may compile: a name that holds ``compile`` (not
        ``re.compile``, nor the built-in ``compile``), or a partial of the module?"""
        for sub in walk(node):
            if isinstance(sub, ast.Call):
                func = sub.func.func if isinstance(sub.func, ast.Call) else sub.func
                if isinstance(func, ast.Attribute):
                    if "compile" in func.attr.lower() and not (
                            isinstance(func.value, ast.Name) and func.value.id in _NOT_TORCH):
                        return True
                elif isinstance(func, ast.Name):
                    if func.id in self.partials or ("compile" in func.id.lower() and (
                            func.id != "compile" or func.id in self.imports)):
                        return True
        return False

    def _compiles_call(self, call: ast.Call) -> Tuple[bool, Optional[ast.AST]]:
        """(is ``call`` a compile, the expression it compiles): ``torch.compile(x)``,
        ``torch.compile(**kw)(x)``, a partial of torch.compile, another compiler."""
        func = call.func
        callee = func.func if isinstance(func, ast.Call) else func
        last = callee.attr if isinstance(callee, ast.Attribute) else callee.id if isinstance(callee, ast.Name) else ""
        if "compile" not in last.lower() and last not in self.partials:
            return False, None  # only a ``*compile*`` callee compiles (see ``compilers``)
        if isinstance(func, ast.Call) and not func.args:
            inner = self.resolve(func.func) or ""
            if inner in COMPILE or self._compiler_kind(func.func, inner) == "factory":
                return True, call.args[0] if call.args else None
        name = self.resolve(func)
        if name is None:
            return False, None
        if name in COMPILE or self._compiler_kind(func, name) == "call":
            first = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
            return True, first
        return False, None

    def _compiler_kind(self, func: ast.AST, name: str) -> Optional[str]:
        if isinstance(func, ast.Name) and func.id not in self.imports:
            return self.compiler(func.id)
        if self.external_compiler is not None and name.split(".", 1)[0] not in ("torch", "functools"):
            return self.external_compiler(name)
        return None

    def _function_compiles(self, node) -> Optional[str]:
        """"call" when the function compiles its first parameter (or that parameter's
        ``forward``) in its own body; "factory" when it returns a nested function (or a
        lambda, or ``functools.partial(torch.compile, ...)``) that does; "class" when a
        nested function it does not return compiles its own first parameter's ``forward``
        (``self.forward``, in a wrapper installed on the decorated class)."""
        first = _first_param(node)
        nested: Dict[str, Optional[str]] = {}
        for sub in _own(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and self._calls_a_compiler(sub):
                nested.setdefault(sub.name, self._function_compiles(sub))
        if first is not None:
            for call in _calls(node.body):
                compiles, target = self._compiles_call(call)
                if compiles and target is not None and _names(target, first):
                    return "call"
        for sub in _own(node):
            if isinstance(sub, ast.Return) and sub.value is not None:
                value = sub.value
                if isinstance(value, ast.Name) and nested.get(value.id) in ("call", "class"):
                    return "factory"
                if isinstance(value, ast.Lambda) and isinstance(value.body, ast.Call):
                    compiles, target = self._compiles_call(value.body)
                    params = value.args.posonlyargs + value.args.args
                    if compiles and target is not None and params and _names(target, params[0].arg):
                        return "factory"
                if isinstance(value, ast.Call) and (self.resolve(value.func) or "") in PARTIAL and value.args \
                        and (self.resolve(value.args[0]) or "") in COMPILE:
                    return "factory"
        if first is not None and any(kind == "call" for kind in nested.values()):
            return "class"
        return None

    def _class_compiles(self, node: ast.ClassDef) -> bool:
        """A class whose ``__init__`` compiles its first argument (a wrapper module)."""
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                params = item.args.posonlyargs + item.args.args
                if len(params) < 2:
                    return False
                wanted = params[1].arg
                for sub in walk(item):
                    if isinstance(sub, ast.Call):
                        compiles, target = self._compiles_call(sub)
                        if compiles and target is not None and _names(target, wanted):
                            return True
        return False


def _init_of(cls: Optional[ast.ClassDef]):
    """A class's own ``__init__`` (what calling the class runs), or None."""
    if cls is not None:
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__init__":
                return item
    return None


def _own(node) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of nested definitions."""
    todo: List[ast.AST] = list(node.body)
    while todo:
        sub = todo.pop()
        yield sub
        if not isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(sub))


def _first_param(node) -> Optional[str]:
    params = node.args.posonlyargs + node.args.args
    return params[0].arg if params else None


def _names(target: ast.AST, param: str) -> bool:
    """``p``, ``p.forward`` or ``p.__call__``."""
    if isinstance(target, ast.Attribute) and target.attr in ("forward", "__call__"):
        target = target.value
    return isinstance(target, ast.Name) and target.id == param

