"""The project index: what one module of the project tells the rules of another.

A shared analysis (facts, never findings). The runner builds one index over the files being
linted before the per-file work; a rule reaches it through ``RuleContext.index``. Building
it reads no file: it only maps paths to dotted module names (packages, namespace packages).
A module's summary is computed the first time a rule asks for it, once, from CPython's
``ast`` -- and only when the module's bytes mention something a summary can hold (see
``RELEVANT``): any other module's summary is empty but for its imports, which are read
without parsing the rest. That keeps the index provably conservative and cheap: a module
whose bytes hold none of those words cannot forward a mode, build options or test for ROCm.

What a summary records, per module:
- functions that forward a parameter (or ``**kwargs``) to ``torch.compile``'s ``mode`` or
  ``options`` (directly, through ``inductor.list_mode_options(p)``, or through another such
  function of the project), or whose parameter becomes ``"triton.cudagraphs"`` of an options
  dict they return or of an inductor config write (``FunctionSummary.flows``);
- ``functools.partial(torch.compile | wrapper, ...)`` bound to a module-level name;
- module constants (a literal assigned once at module level);
- re-exports (``from .a import f`` in a package) and every other first-party import;
- ROCm-build tests (``IS_HIP = torch.version.hip is not None``, or a function that returns
  such a test), recognised by ``_bindings.means_rocm_build``.

What an import binds and what a name spells are the resolver's answers (``_bindings``).

Triton launches across modules (ROC513), also on demand and recorded for the cache key:
``module_values`` (a module's launches and value provenance, ``triton_values.ModuleValues``,
from its bytes), ``triton_launches`` (every launch of one kernel in the modules whose bytes
subscript its name, ``launchers``, through re-exports) and ``pow2_checked`` (where the project
checks a block size for a power of two). A file that asked depends on which modules subscript
the name and on their bytes (``<triton-launches>:word``), on which modules spell a word and on
their bytes (``<mentions>:word``), and on the bytes of a helper module it read
(``<source>:module``).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from rocmport.source import read_regular

from .bindings import dotted as _dotted
from .bindings import import_bindings, means_rocm_build, module_imports, resolve_name, top_level, torch_names, walk
from .cuda_only import imported_names, may_hold, module_facts, nvidia_named
from .effects import IMPORT, NONE as _NO_EFFECTS
from .effects import WORDS as _EFFECT_WORDS
from .effects import Effects, ModuleFacts
from .platforms import EVERY, Env, Test, classify, module_env, module_tests
from .triton_values import LaunchFact, ModuleValues, pow2_checks

COMPILE = frozenset({"torch.compile", "torch.compiler.compile"})
PARTIAL = frozenset({"functools.partial"})
LIST_MODE_OPTIONS = frozenset({"torch._inductor.list_mode_options"})
# Words a module must hold for its summary to hold anything but imports (bytes).
# A flow needs a compile call (``compile(``, ``partial(torch.compile, ...)``, an alias bound
# with ``compile as``), or a call of another project function that takes a mode
# (``..._compile(m, mode=mode)``: both words), an options dict, a ROCm test, a mode constant.
RELEVANT = (b"compile(", b"compile,", b"compile)", b"compile as", b"cudagraphs", b"version.hip", b'"hip"', b"'hip'",
            b"reduce-overhead", b"max-autotune", b"list_mode_options")
_MAX_DEPTH = 8

MODE, OPTIONS, CUDAGRAPHS = "mode", "options", "cudagraphs"




@dataclass
class FunctionSummary:
    """How a project function's parameters reach torch.compile (``flows``: parameter ->
    "mode" | "options" | "cudagraphs"; ``kw_flows``: keyword passed through ``**kwargs`` ->
    the same)."""

    module: str
    name: str
    positional: Tuple[str, ...] = ()  # names that positional arguments bind, in order
    keywords: FrozenSet[str] = frozenset()  # every parameter that a keyword can bind
    defaults: Dict[str, object] = field(default_factory=dict)  # param -> literal default (str/bool/None)
    has_default: FrozenSet[str] = frozenset()
    flows: Dict[str, str] = field(default_factory=dict)
    kw_flows: Dict[str, str] = field(default_factory=dict)
    lineno: int = 0
    kind: str = "function"  # "function" or "partial"

    def target(self, keyword: Optional[str], position: Optional[int]) -> Optional[str]:
        """What an argument of a call reaches: by keyword, or by position."""
        if keyword is not None:
            if keyword in self.keywords:
                return self.flows.get(keyword)
            return self.kw_flows.get(keyword)
        if position is not None and position < len(self.positional):
            return self.flows.get(self.positional[position])
        return None

    def digest(self) -> str:
        return repr((self.kind, self.positional, sorted(self.keywords), sorted(self.defaults.items(), key=str),
                     sorted(self.has_default), sorted(self.flows.items()), sorted(self.kw_flows.items())))


@dataclass
class ModuleSummary:
    name: str
    path: str
    is_package: bool
    imports: Dict[str, str] = field(default_factory=dict)  # module-level name -> absolute dotted name
    constants: Dict[str, object] = field(default_factory=dict)
    functions: Dict[str, FunctionSummary] = field(default_factory=dict)  # with flows only
    methods: Dict[str, FunctionSummary] = field(default_factory=dict)  # "Class.name", this module's own use
    rocm_tests: List[Tuple[str, str]] = field(default_factory=list)  # (name, "constant"|"function")
    parsed: bool = False

    def digest(self) -> str:
        parts = [self.name, repr(sorted(self.imports.items())), repr(sorted(self.constants.items(), key=str)),
                 repr(sorted(self.rocm_tests))]
        parts += [f.digest() for _, f in sorted(self.functions.items())]
        return hashlib.blake2b("\0".join(parts).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


@dataclass(frozen=True)
class CudaFacts:
    """What importing one module runs that is CUDA-only (``cuda_only.module_facts``): ``own``,
    its statements that surely run at import and fail on ROCm, as (line, code, why); and,
    for a module whose name says it is NVIDIA's (``nvidia_named``), ``entries``, the project
    modules its statements that surely run at import import, as (line, module)."""

    own: Tuple[Tuple[int, str, str], ...] = ()
    entries: Tuple[Tuple[int, str], ...] = ()
    nvidia_named: bool = False

    def digest(self) -> str:
        return hashlib.blake2b(repr((self.own, self.entries, self.nvidia_named)).encode("utf-8", "surrogateescape"),
                               digest_size=12).hexdigest()


# (module, line, code, why): one step of the way from an imported module to CUDA-only code
Chain = Tuple[Tuple[str, int, str, str], ...]


class ProjectIndex:
    """Dotted names of the files being linted, and their summaries on demand."""

    def __init__(self, paths: Iterable[str], data: Optional[Dict[str, bytes]] = None):
        self._data: Dict[str, bytes] = {}
        self._name_of: Dict[str, str] = {}
        self._package: Dict[str, bool] = {}
        self._by_name: Dict[str, List[str]] = {}
        self._by_long_name: Dict[str, List[str]] = {}
        self._summaries: Dict[str, ModuleSummary] = {}
        self._functions_done: Set[Tuple[str, str]] = set()
        self._dir_is_package: Dict[str, bool] = {}
        self._record: Optional[Set[str]] = None  # modules whose summaries the current file consulted
        self._recording = ""  # the path of the file whose lint is recorded
        self._inventory: Dict[str, List[Tuple[str, str, str]]] = {}  # package -> its ROCm tests
        self._no_hip: Set[str] = set()  # files read by the caller that cannot define a ROCm test
        self._no_cuda: Set[str] = set()  # files read by the caller that may hold no CUDA-only statement
        self._platforms: Dict[str, Dict[str, Test]] = {}  # module -> its platform predicates
        self._platform_imports: Dict[str, Dict[str, str]] = {}
        self._platform_deps: Dict[str, Set[str]] = {}  # module -> the modules its predicates read
        self._inputs: Dict[str, str] = {}  # inventory entry -> digest of its input files
        self._cuda: Dict[str, CudaFacts] = {}
        self._chains: Dict[str, Optional[Chain]] = {}
        self._chain_deps: Dict[str, Set[str]] = {}  # module -> the modules its chain read
        self._words: Optional[FrozenSet[str]] = None
        self._call_digests: Dict[str, str] = {}  # "module|name" -> _calls_digest, once per run
        self._hashes: Dict[str, str] = {}  # path -> the hash of its bytes (``_bytes_hash``)
        self._word_inputs: Optional[List[Tuple[str, bytes, bool]]] = None
        self._words_input_digest: Optional[str] = None
        self._calls: Dict[str, Optional[ModuleFacts]] = {}  # module -> its compilers and effects
        self._calls_deps: Dict[str, Set[str]] = {}  # module -> the "module|name" its answers read
        self._calls_stack: List[str] = []  # the modules whose answers are being computed
        self._values: Dict[str, Optional["ModuleValues"]] = {}  # module -> its Triton launch facts (parsed once)
        self._mentions: Dict[str, List[str]] = {}  # word -> modules whose bytes spell it
        self._subscripted: Optional[Dict[str, List[str]]] = None  # name -> modules that subscript it
        self.memo: Dict[object, object] = {}  # what shared analyses (``decisions``) computed once per run
        self.keeps_dependencies = True  # a run with a cache records what each file's findings read
        files = [os.path.abspath(p) for p in paths if p.endswith((".py", ".pyi"))]
        self._files = set(files)
        for path, blob in (data or {}).items():
            self._data[os.path.abspath(path)] = blob
        dirs = {os.path.dirname(p) for p in files}
        root = os.path.commonpath(sorted(dirs)) if dirs else ""
        self.root = root  # the folder that holds every linted file
        for path in files:
            name = self._canonical(path)
            if name is None:
                continue
            self._name_of[path] = name
            self._package[path] = os.path.basename(path) in ("__init__.py", "__init__.pyi")
            self._by_name.setdefault(name, []).append(path)
            # namespace packages: the same module, named from each directory above its top
            top = os.path.dirname(path)
            for _ in range(name.count(".") + (1 if self._package[path] else 0)):
                top = os.path.dirname(top)
            long_name = name
            while root and top.startswith(root) and len(top) > len(root):
                part = os.path.basename(top)
                if not part.isidentifier():
                    break
                long_name = f"{part}.{long_name}"
                self._by_long_name.setdefault(long_name, []).append(path)
                top = os.path.dirname(top)

    # -- names -------------------------------------------------------------------------
    def _is_package_dir(self, directory: str) -> bool:
        known = self._dir_is_package.get(directory)
        if known is None:
            init = os.path.join(directory, "__init__.py")
            known = init in self._files or os.path.isfile(init)
            self._dir_is_package[directory] = known
        return known

    def _canonical(self, path: str) -> Optional[str]:
        directory, base = os.path.split(path)
        stem = base.rsplit(".", 1)[0]
        parts = [] if stem == "__init__" else [stem]
        while self._is_package_dir(directory):
            directory, part = os.path.split(directory)
            if not part:
                break
            parts.append(part)
        if not parts or not all(p.isidentifier() for p in parts):
            return None
        return ".".join(reversed(parts))

    def module_name(self, path: str) -> Optional[str]:
        """The dotted name of a linted file (its regular-package name), or None."""
        return self._name_of.get(os.path.abspath(path))

    def module_count(self) -> int:
        """How many linted files are modules (a project, or one file: pre-commit passes the changed ones)."""
        return len(self._name_of)

    def folders(self, path: str) -> List[str]:
        """The folders between the linted files' common folder and ``path`` (``examples``,
        ``trtllm_export`` for ``examples/trtllm_export/run.py``)."""
        relative = os.path.relpath(os.path.dirname(os.path.abspath(path)), self.root) if self.root else "."
        return [] if relative in (".", "") or relative.startswith("..") else relative.split(os.sep)

    def path_of(self, name: str) -> Optional[str]:
        """The one linted file that is module ``name`` (exact name first, then a namespace
        package's longer name); None when there is none or more than one."""
        for table in (self._by_name, self._by_long_name):
            found = table.get(name)
            if found:
                return found[0] if len(found) == 1 else None
        return None

    def defines_module(self, name: str) -> bool:
        """Is some linted file module ``name`` (one or several)?"""
        return bool(self._by_name.get(name) or self._by_long_name.get(name))

    def absolute(self, importer: str, module: Optional[str], level: int, path: Optional[str] = None) -> Optional[str]:
        """``from <.. module> import``: the absolute name, seen from module ``importer`` (the
        file at ``path``, where several files are that module)."""
        if not level:
            return module
        path = path or self.path_of(importer)
        package = importer if path is not None and self._package.get(path) else importer.rpartition(".")[0]
        for _ in range(level - 1):
            if not package:
                return None
            package = package.rpartition(".")[0]
        if not package:
            return module
        return f"{package}.{module}" if module else package

    # -- summaries -----------------------------------------------------------------------
    def _bytes(self, path: str) -> Optional[bytes]:
        blob = self._data.get(path)
        if blob is None:
            try:
                blob = read_regular(path)  # never a FIFO or a device (it would block)
            except OSError:
                return None
            self._data[path] = blob
        return blob

    def _bytes_hash(self, path: Optional[str]) -> str:
        """The hash of the bytes at ``path`` ("" for none): read once, hashed once."""
        if not path:
            return ""
        found = self._hashes.get(path)
        if found is None:
            found = self._hashes[path] = _hash(self._bytes(path))
        return found

    def summary(self, name: str, tree: Optional[ast.AST] = None, path: Optional[str] = None,
                rebinds: bool = True) -> Optional[ModuleSummary]:
        """Module ``name``'s summary, computed once (``tree``: the importer's current tree
        for its own module, not cached; ``rebinds``: whether its text may hold ``global`` or
        ``nonlocal``)."""
        if tree is not None:
            summary = ModuleSummary(name, path or "", bool(path and path.endswith("__init__.py")))
            _summarise(self, summary, tree, own=True, rebinds=rebinds)
            return summary
        if self._record is not None:
            self._record.add(name)
        found = self._summaries.get(name)
        if found is not None:
            return found
        path = self.path_of(name)
        if path is None:
            return None
        summary = ModuleSummary(name, path, self._package.get(path, False))
        self._summaries[name] = summary
        blob = self._bytes(path)
        if blob is None:
            return summary
        if (any(word in blob for word in RELEVANT) or (b"compile" in blob and b"mode" in blob)
                or (summary.is_package and b"import" in blob)):
            try:
                parsed = compile(blob, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return summary
            _summarise(self, summary, parsed, rebinds=b"global" in blob or b"nonlocal" in blob)
        return summary

    def lookup(self, module: str, attr: str, depth: int = 0):
        """What ``module.attr`` is: ("function", FunctionSummary), ("constant", value),
        ("module", name) or None; follows re-exports."""
        if depth > _MAX_DEPTH:
            return None
        summary = self.summary(module)
        if summary is not None:
            function = summary.functions.get(attr)
            if function is not None:
                return "function", function
            if attr in summary.constants:
                return "constant", summary.constants[attr]
            target = summary.imports.get(attr)
            if target is not None:
                return self.lookup_dotted(target, depth + 1)
        if self.path_of(f"{module}.{attr}") is not None:
            return "module", f"{module}.{attr}"
        return None

    def lookup_dotted(self, dotted: str, depth: int = 0):
        """What an absolute dotted name is: a module of the project, or a name inside one."""
        if self.path_of(dotted) is not None:
            return "module", dotted
        module, _, attr = dotted.rpartition(".")
        if not module:
            return None
        head = self.lookup_dotted(module, depth + 1) if depth <= _MAX_DEPTH else None
        if head is None or head[0] != "module":
            return None
        return self.lookup(head[1], attr, depth + 1)

    def function(self, dotted: str) -> Optional[FunctionSummary]:
        found = self.lookup_dotted(dotted)
        return found[1] if found is not None and found[0] == "function" else None

    def constant(self, dotted: str):
        found = self.lookup_dotted(dotted)
        return found if found is not None and found[0] == "constant" else None

    def file_bytes(self, path: str) -> Optional[bytes]:
        """The bytes of a file of the project (None: unreadable), read once."""
        return self._bytes(path)

    def depend_on_bytes(self, name: str) -> None:
        """The current file's answer depends on module ``name``'s bytes (not only on its
        summary): a change of them changes the file's cache key."""
        if self._record is not None:
            self._record.add(_SOURCE + name)

    def seen(self, path: str, blob: bytes) -> None:
        """The caller read ``path``: the index keeps the bytes it may need again (a file that
        mentions "hip" may define a ROCm test; one may hold a CUDA-only statement) and
        remembers that the others need no reading."""
        path = os.path.abspath(path)
        if b"hip" in blob:
            self._data.setdefault(path, blob)
        else:
            self._no_hip.add(path)
        if may_hold(blob):  # the names of CUDA-only modules are made from these (``cuda_words``)
            self._data.setdefault(path, blob)
        else:
            self._no_cuda.add(path)

    def rocm_tests(self, package: Optional[str] = None) -> List[Tuple[str, str, str, str]]:
        """(module dotted name, name, "constant" | "function", path) for every ROCm-build
        test the linted files (of top-level ``package``) define at module level. Only a file
        whose bytes hold the shape of one (``TEST_SHAPE``) is summarised; the others are read
        and dropped."""
        out = []
        for path, name, _ in self._test_candidates(package):
            summary = self.summary(name)
            if summary is not None and self.path_of(name) == path:
                out.extend((name, test, kind, path) for test, kind in summary.rocm_tests)
        return out

    def _test_candidates(self, package: Optional[str]) -> List[Tuple[str, str, bytes]]:
        """(path, module, bytes) of the linted files (of ``package``) shaped like a test."""
        out = []
        for path, name in sorted(self._name_of.items(), key=lambda item: item[1]):
            if package is not None and name != package and not name.startswith(package + "."):
                continue
            blob = self._data.get(path)
            if blob is None:
                if path in self._no_hip:
                    continue
                try:
                    blob = read_regular(path)
                except OSError:
                    continue
            if b"hip" not in blob or not TEST_SHAPE.search(blob):
                continue
            self._data[path] = blob
            out.append((path, name, blob))
        return out

    def _inventory_inputs(self, entry: str) -> str:
        """A digest of the files an inventory is made from (their names and bytes): while it
        holds, the recorded inventory holds, and nothing is parsed to tell."""
        found = self._inputs.get(entry)
        if found is None:
            parts = [f"{name}:{_hash(blob)}" for _, name, blob in self._test_candidates(entry[len(_INVENTORY):])]
            found = self._inputs[entry] = hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()
        return found

    def rocm_tests_in(self, package: str) -> List[Tuple[str, str, str]]:
        """(module, name, kind) of every ROCm-build test defined in top-level package
        ``package``, computed once; the current file's findings then depend on that list
        (a test added anywhere in the package changes its cache key)."""
        if self._record is not None:
            self._record.add(_INVENTORY + package)
        found = self._inventory.get(package)
        if found is None:
            found = self._inventory[package] = [(module, name, kind) for module, name, kind, _ in self.rocm_tests(package)]
        return found

    def modules_mentioning(self, word: str) -> List[Tuple[str, str, bytes]]:
        """(module, path, bytes) of every linted file whose bytes spell ``word`` as a whole
        identifier (``mentioning``), in module order, read once per run. The current file's
        findings then depend on that list: a file that starts or stops spelling the word, or
        changes, changes its cache key."""
        if self._record is not None:
            self._record.add(_MENTIONS + word)
        out = []
        for module in self.mentioning(word):
            path = self.path_of(module)
            blob = self._bytes(path) if path else None
            if path and blob is not None:
                out.append((module, path, blob))
        return out

    def tree(self, name: str, blob: bytes, path: str) -> Optional[ast.AST]:
        """CPython's tree of a module's bytes (None where it does not parse)."""
        try:
            return compile(blob, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    def _inventory_digest(self, entry: str) -> str:
        tests = self.rocm_tests_in(entry[len(_INVENTORY):])
        return hashlib.blake2b(repr(tests).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()

    # -- CUDA-only code run at import -------------------------------------------------------
    def cuda_facts(self, name: str) -> CudaFacts:
        """Module ``name``'s :class:`CudaFacts`, computed once. Only a module whose bytes hold
        the words of a CUDA-only statement (``cuda_only.may_hold``) is parsed for its own; only
        one whose name says NVIDIA, for its imports."""
        if self._record is not None:
            self._record.add(_CUDA + name)
        found = self._cuda.get(name)
        if found is None:
            found = self._cuda[name] = self._cuda_facts(name)
        return found

    def _cuda_facts(self, name: str) -> CudaFacts:
        path = self.path_of(name)
        blob = self._bytes(path) if path else None
        named = nvidia_named(name)
        if not blob or not (may_hold(blob) or (named and b"import" in blob)):
            return CudaFacts(nvidia_named=named)
        try:
            tree = compile(blob, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return CudaFacts(nvidia_named=named)
        own, imported = module_facts(tree.body, lambda module, level: self.absolute(name, module, level), name)
        entries: List[Tuple[int, str]] = []
        if named:
            for line, target in imported:
                if target != name and self.path_of(target) is not None and (line, target) not in entries:
                    entries.append((line, target))
        return CudaFacts(tuple(own), tuple(entries), named)

    def cuda_chain(self, name: str) -> Optional[Chain]:
        """How importing module ``name`` runs CUDA-only code, from ``name`` down to the
        statement that fails on ROCm: its own statement, or, for a module whose name says it
        is NVIDIA's (a CUDA backend package, a CUTLASS kernel module), an import of a module
        that does (the module is NVIDIA's by name and content). None when neither holds. The
        modules read are recorded (the file's cache key covers them)."""
        if name not in self._chains:
            deps: Set[str] = set()
            self._chains[name] = None  # first: an import cycle reads None, not forever
            self._chains[name] = self._chain(name, deps, set())
            self._chain_deps[name] = deps
        if self._record is not None:
            self._record.update(_CUDA + dep for dep in self._chain_deps.get(name, {name}))
        return self._chains[name]

    def cuda_words(self) -> FrozenSet[str]:
        """The names by which a module imports a project module whose import runs CUDA-only
        code (the last part of each such module's name): a module that spells none of them
        cannot import one. Computed once, from the modules that may hold a CUDA-only
        statement (``cuda_only.may_hold``) and those NVIDIA's by name; recorded (a file's
        cache key covers those modules' bytes, not every file's)."""
        if self._record is not None:
            blob = self._bytes(self._recording) if self._recording else None
            if blob is not None and b"import" not in blob:
                return frozenset()  # a file that imports nothing reaches no module: nothing to record
            self._record.add(_CUDA_WORDS + self._recording)
        if self._words is None:
            saved, self._record = self._record, None
            try:
                self._words = self._cuda_words()
            finally:
                self._record = saved
        return self._words

    def _word_candidates(self) -> List[Tuple[str, bytes, bool]]:
        """(module, bytes, NVIDIA's by name) of the linted modules that may hold a CUDA-only
        statement or are NVIDIA's by name; the others are read and dropped."""
        if self._word_inputs is None:
            found = []
            for path, name in sorted(self._name_of.items(), key=lambda item: item[1]):
                blob = self._data.get(path)
                named = nvidia_named(name)
                if blob is None:
                    if path in self._no_cuda and not named:
                        continue  # read by the caller already: it may hold no CUDA-only statement
                    try:
                        blob = read_regular(path)
                    except OSError:
                        continue
                if named or may_hold(blob):
                    self._data[path] = blob
                    found.append((name, blob, named))
            self._word_inputs = found
        return self._word_inputs

    def _cuda_words(self) -> FrozenSet[str]:
        words: Set[str] = set()
        candidates = self._word_candidates()
        for name, _, named in candidates:
            if self.path_of(name) is not None and self.cuda_facts(name).own:
                words.add(_import_word(name))
        named = [(name, blob) for name, blob, is_named in candidates if is_named]
        found: Set[str] = set()
        changed = True
        while changed:  # NVIDIA's by name and importing one: settled until nothing changes
            changed = False
            for name, blob in named:
                if name in found or self.path_of(name) is None:
                    continue
                if any(w.encode() in blob for w in words | {n.rpartition(".")[2] for n in found}) \
                        and self.cuda_chain(name) is not None:
                    found.add(name)
                    words.add(_import_word(name))
                    changed = True
        return frozenset(words)

    def _words_inputs(self) -> str:
        """A digest of the modules the words are made from (their names and bytes), once a run."""
        if self._words_input_digest is None:
            parts = [f"{name}:{_hash(blob)}" for name, blob, _ in self._word_candidates()]
            self._words_input_digest = hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()
        return self._words_input_digest

    def _words_digest(self, path: str) -> str:
        """The digest of the words that the file at ``path`` spells (all of them where there
        is no such file): a change to words it does not spell changes nothing of its lint."""
        saved, self._record = self._record, None
        try:
            words = self.cuda_words()
        finally:
            self._record = saved
        blob = self._bytes(path) if path else None
        if blob is not None:
            words = frozenset(w for w in words if w.encode() in blob)
        return hashlib.blake2b("\n".join(sorted(words)).encode(), digest_size=12).hexdigest()

    def _chain(self, name: str, deps: Set[str], active: Set[str]) -> Optional[Chain]:
        deps.add(name)
        saved, self._record = self._record, None  # deps are recorded by the caller
        try:
            facts = self.cuda_facts(name)
        finally:
            self._record = saved
        if facts.own:
            line, code, why = facts.own[0]
            return ((name, line, code, why),)
        if not facts.nvidia_named or name in active:
            return None
        active.add(name)
        for line, target in facts.entries:
            if target in self._chains and target not in active:
                deps.update(self._chain_deps.get(target, {target}))
                below = self._chains[target]
            else:
                below = self._chain(target, deps, active)
            if below is not None:
                return ((name, line, f"import {target}", ""),) + below
        return None

    # -- platform predicates -------------------------------------------------------------
    def platform_tests(self, name: str) -> Dict[str, Test]:
        """The platform predicates module ``name`` defines at module level (a flag assigned a
        test, a function that returns one: ``platforms.module_tests``), computed once. Only a
        module whose bytes hold a platform word (``PLATFORM_WORDS``) is parsed; the others
        define none."""
        found = self._platforms.get(name)
        if found is None:
            found = self._platforms[name] = {}  # first: an import cycle reads it empty, not forever
            self._platform_imports[name] = {}
            deps = self._platform_deps[name] = set()
            path = self.path_of(name)
            blob = self._bytes(path) if path else None
            if blob and PLATFORM_WORDS.search(blob):
                try:
                    tree = compile(blob, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
                if tree is not None:
                    imports = self._platform_imports[name] = module_imports(
                        tree.body, lambda module, level: self.absolute(name, module, level))

                    def lookup(dotted: str) -> Optional[Test]:
                        test, used = self._platform_lookup(dotted, 0)
                        deps.update(used)
                        return test

                    module_tests(tree.body, Env(imports, found, lookup))
        if self._record is not None:
            self._record.add(_PLATFORMS + name)
            for dep in self._platform_deps.get(name, ()):
                self._record.add(_PLATFORMS + dep)
        return found

    def platform_test(self, dotted: str) -> Optional[Test]:
        """The test an absolute dotted name of the project is (``pkg.utils.is_hip``), following
        re-exports; None where it is not a platform predicate of the project."""
        test, used = self._platform_lookup(dotted, 0)
        if self._record is not None:
            self._record.update(_PLATFORMS + name for name in used)
        return test

    def _platform_lookup(self, dotted: str, depth: int) -> Tuple[Optional[Test], Set[str]]:
        module, _, attr = dotted.rpartition(".")
        if not module or depth > _MAX_DEPTH or self.path_of(module) is None:
            return None, set()
        tests = self.platform_tests(module)
        used = {module} | self._platform_deps.get(module, set())
        if attr in tests:
            return tests[attr], used
        target = self._platform_imports.get(module, {}).get(attr)
        if target is None or target == dotted:
            return None, used
        test, more = self._platform_lookup(target, depth + 1)
        return test, used | more

    def _cuda_digest(self, name: str) -> str:
        saved, self._record = self._record, None
        try:
            return self.cuda_facts(name).digest()
        finally:
            self._record = saved

    def _platform_digest(self, name: str) -> str:
        tests = self.platform_tests(name)
        text = repr(sorted((key, sorted(t.true), sorted(t.false), t.arch, t.decided) for key, t in tests.items()))
        return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()

    # -- compilers and what calling a function does (``effects``) -------------------------
    def _module_calls(self, name: str, attr: str) -> Optional[ModuleFacts]:
        """Module ``name``'s call facts, parsed once: only a module whose bytes hold a word
        of ``effects.WORDS``, ``compile`` or an import of ``attr`` (a re-export) can answer."""
        if name in self._calls:
            found = self._calls[name]
            if found is not None or self._parsed_for_reexport(name, attr) is None:
                return found
        path = self.path_of(name)
        blob = self._bytes(path) if path else None
        self._calls[name] = None
        if not blob:
            return None
        if not (b"compile" in blob or any(word in blob for word in _EFFECT_WORDS)
                or self._parsed_for_reexport(name, attr, blob)):
            return None
        try:
            tree = compile(blob, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        found = self._calls[name] = ModuleFacts(name, tree, lambda module, level: self.absolute(name, module, level),
                                                self.effects, self.compiler, self.platform_test)
        return found

    def _parsed_for_reexport(self, name: str, attr: str, blob: Optional[bytes] = None) -> Optional[bool]:
        """Does module ``name`` import ``attr`` (by its bytes): a re-export to follow?"""
        if blob is None:
            path = self.path_of(name)
            blob = self._bytes(path) if path else None
            if not blob:
                return None
        return bool(re.search(rb"\bimport\b[^\n]*\b" + re.escape(attr.encode()) + rb"\b", blob)) or None

    def _calls_lookup(self, dotted: str, depth: int):
        """(module facts, name) for an absolute dotted name of the project, following
        re-exports; None when it is no function or class the index can read. Each module on
        the way is a dependency of the answer (``_CALLS`` + "module|name" keys: of the file
        being linted, and of the answer being computed, ``_calls_stack``)."""
        seen: Set[str] = set()
        while depth <= _MAX_DEPTH and dotted not in seen:
            seen.add(dotted)
            module, _, attr = dotted.rpartition(".")
            if not module or self.path_of(module) is None:
                return None
            self._calls_depend(module, attr)
            facts = self._module_calls(module, attr)
            if facts is None:
                return None
            if attr in facts.functions or attr in facts.classes or attr in facts.partials or attr == IMPORT:
                return facts, attr
            target = facts.imports.get(attr)
            if target is None:
                return None
            dotted, depth = target, depth + 1
        return None

    def _calls_depend(self, module: str, attr: str) -> None:
        key = f"{module}|{attr}"
        if self._record is not None:
            self._record.add(_CALLS + key)
        for asking in self._calls_stack:  # a module's answers are computed together: the
            if asking != module:  # module, not the one name, depends on what they read
                self._calls_deps.setdefault(asking, set()).add(key)

    def _calls_answer(self, dotted: str, depth: int, what: str):
        found = self._calls_lookup(dotted, depth)
        if found is None:
            return None if what == "compiler" else _NO_EFFECTS
        facts, attr = found
        self._calls_stack.append(facts.name)
        try:
            return facts.compiler(attr) if what == "compiler" else facts.effects(attr, depth)
        finally:
            self._calls_stack.pop()

    def compiler(self, dotted: str, depth: int = 0) -> Optional[str]:
        """How the project's function (or class) ``dotted`` compiles what it is given:
        "call", "class", "factory" (``effects.ModuleFacts.compilers``), or None."""
        return self._calls_answer(dotted, depth, "compiler")

    def effects(self, dotted: str, depth: int = 0) -> Effects:
        """What calling the project's function ``dotted`` does (``effects.Effects``)."""
        return self._calls_answer(dotted, depth, "effects")

    def _calls_digest(self, key: str) -> str:
        """The answers for "module|name": what it compiles, what calling it does."""
        found = self._call_digests.get(key)  # the answers are computed once: so is their digest
        if found is not None:
            return found
        module, _, attr = key.partition("|")
        dotted = f"{module}.{attr}"
        record, self._record = self._record, None  # computing a digest records nothing
        try:
            text = repr((self.compiler(dotted), self.effects(dotted)))
        finally:
            self._record = record
        found = self._call_digests[key] = hashlib.blake2b(text.encode("utf-8", "surrogateescape"),
                                                          digest_size=12).hexdigest()
        return found

    def _calls_closure(self, keys: Set[str]) -> Set[str]:
        """``keys`` and every "module|name" that the answers of their modules read,
        transitively."""
        out: Set[str] = set()
        todo = list(keys)
        while todo:
            key = todo.pop()
            if key in out:
                continue
            out.add(key)
            todo.extend(self._calls_deps.get(key.partition("|")[0], ()))
        return out

    # -- Triton launches across modules (ROC513) --------------------------------------------
    def module_values(self, name: str, record: bool = True) -> Optional["ModuleValues"]:
        """Module ``name``'s Triton launch and value facts (``triton_values.ModuleValues``),
        from CPython's tree, computed once; the current file's findings then depend on the
        module's bytes."""
        if record and self._record is not None:
            self._record.add(_SOURCE + name)
        if name in self._values:
            return self._values[name]
        found = None
        path = self.path_of(name)
        blob = self._bytes(path) if path else None
        if blob:
            try:
                tree = compile(blob, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
            if tree is not None:
                found = ModuleValues(tree, name, lambda module, level: self.absolute(name, module, level),
                                     _ValuesProject(self))
        self._values[name] = found
        return found

    def triton_launches(self, kernel: str, exclude: Optional[str] = None) -> List[Tuple[str, "LaunchFact"]]:
        """(module, launch) for every launch of kernel ``kernel`` (``pkg.mod.kernel``) in the
        linted modules other than ``exclude``: modules whose bytes subscript the kernel's name
        (``kernel[grid]``, ``wrap_triton(kernel)[grid]``: ``launchers``) are read, and their
        launches kept where the callee resolves to the kernel (directly, or through a package
        that re-exports it). The file's findings then depend on which modules subscript the
        name, and on their bytes."""
        word = kernel.rpartition(".")[2]
        if self._record is not None:
            self._record.add(_LAUNCHES + word)
        out = []
        for module in self.launchers(word):
            if module == exclude:
                continue
            values = self.module_values(module, record=False)  # its bytes: recorded above
            if values is None:
                continue
            for launch in values.launches():
                if launch.kernel == kernel or self.defining_name(launch.kernel) == kernel:
                    out.append((module, launch))
        return out

    def pow2_checked(self, word: str) -> List[Tuple[str, int]]:
        """(module, line) of the checks in the linted modules that a name spelling ``word``
        (``kernel_block_size`` for "block_size") is a power of two (``triton_values.pow2_checks``):
        a project that validates its KV-cache block size so. The file's findings then depend on
        the modules that spell the word."""
        if self._record is not None:
            self._record.add(_MENTIONS + word)
        out = []
        for module in self.mentioning(word):
            path = self.path_of(module)
            blob = self._bytes(path) if path else None
            if not blob or not _POW2_BYTES.search(blob):
                continue
            values = self.module_values(module, record=False)  # its bytes: recorded above
            if values is not None:
                out.extend((module, line) for line in pow2_checks(values.tree, word))
        return out

    def values_project(self) -> "_ValuesProject":
        """What ``triton_values.ModuleValues`` of the linted file asks of the other modules."""
        return _ValuesProject(self)

    def launchers(self, word: str) -> List[str]:
        """The linted modules whose bytes subscript ``word`` (``word[``, ``word)[``): where a
        kernel of that name can be launched. Every linted file is read once, for all names."""
        if self._subscripted is None:
            found: Dict[str, List[str]] = {}
            for path, name in sorted(self._name_of.items(), key=lambda item: item[1]):
                blob = self._data.get(path)
                if blob is None:
                    try:
                        blob = read_regular(path)
                    except OSError:
                        continue
                if b"[" not in blob:
                    continue
                for spelled in set(_SUBSCRIPTED.findall(blob)):
                    found.setdefault(spelled.decode("ascii"), []).append(name)
            self._subscripted = found
        return self._subscripted.get(word, [])

    def mentioning(self, word: str) -> List[str]:
        """The linted modules whose bytes spell ``word`` as a whole identifier (read once)."""
        found = self._mentions.get(word)
        if found is None:
            pattern = re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(word.encode()) + rb"(?![A-Za-z0-9_])")
            found = []
            for path, name in sorted(self._name_of.items(), key=lambda item: item[1]):
                blob = self._data.get(path)
                if blob is None:
                    try:
                        blob = read_regular(path)
                    except OSError:
                        continue
                if pattern.search(blob):
                    self._data.setdefault(path, blob)
                    found.append(name)
            self._mentions[word] = found
        return found

    def imported_on(self, name: str, depth: int = 0, path: Optional[str] = None) -> FrozenSet[str]:
        """The platforms (``platforms.CUDA``, ``ROCM``, ...) on which the project's own modules
        import module ``name``: for each import of it, the platform tests of the branches around
        the import (``if SYSTEM == "rocm": from .rocm import ...``), within the platforms its
        importer is itself imported on. Every platform where no linted module imports it (an
        entry point, a library's public module: anyone may import it), or where an importer
        cannot be read. ``path``: which file ``name`` is, where the project holds several
        (a vendored copy of a package): the importers are those of its own tree. The current
        file's findings depend on the modules that spell its name."""
        leaf = name.rpartition(".")[2]
        path = os.path.abspath(path) if path else self.path_of(name)
        if depth > 3 or not leaf or path is None:
            return EVERY
        key = ("imported_on", name, path)
        found = self.memo.get(key)
        if found is not None:  # (platforms, what computing them read): read again by this file
            if self._record is not None:
                self._record.update(found[1])  # type: ignore[index]
            return found[0]  # type: ignore[index]
        self.memo[key] = (EVERY, ())  # a cycle of imports reads every platform
        record, self._record = self._record, set()
        try:
            found = self._imported_on(name, leaf, depth, path)
        finally:
            read, self._record = self._record, record
        if self._record is not None:
            self._record.update(read)
        self.memo[key] = (found, frozenset(read))
        return found

    def _imported_on(self, name: str, leaf: str, depth: int, path: str) -> FrozenSet[str]:
        platforms: FrozenSet[str] = frozenset()
        imported = False
        root = _package_root(path, name)
        if self._record is not None:
            self._record.add(_MENTIONS + leaf)
        for module in dict.fromkeys(self.mentioning(leaf)):
            if module == name or module.startswith(name + "."):
                continue  # a package's own modules run only once it is imported
            for importer in self._by_name.get(module, ()):  # each copy, of this tree only
                blob = self._bytes(importer) if _package_root(importer, module) == root else None
                if blob is None:
                    continue
                tree = self.tree(module, blob, importer)
                if tree is None:
                    return EVERY
                sites = _import_sites(tree, name,
                                      lambda m, level, own=module, at=importer: self.absolute(own, m, level, at))
                if not sites:
                    continue
                imported = True
                env = module_env(tree, self, importer)
                module_tests(tree.body, env)
                outer = self.imported_on(module, depth + 1, importer)
                for tests in sites:
                    where = outer
                    for test, taken in tests:
                        found_test = classify(test, env)
                        where &= found_test.true if taken else found_test.false
                    platforms |= where
                if platforms == EVERY:
                    return EVERY
        return platforms if imported else EVERY

    def defining_name(self, dotted: str, depth: int = 0) -> str:
        """A name that a package re-exports, as the module that defines it spells it."""
        module, _, attr = dotted.rpartition(".")
        if not module or depth > _MAX_DEPTH or self.path_of(module) is None:
            return dotted
        summary = self.summary(module)
        target = summary.imports.get(attr) if summary is not None else None
        if target is None or target == dotted:
            return dotted
        return self.defining_name(target, depth + 1)

    def _launch_inputs(self, word: str, mentions: bool = False) -> str:
        parts = []
        for module in (self.mentioning(word) if mentions else self.launchers(word)):
            paths = self._by_name.get(module, ()) if mentions else [self.path_of(module)]
            parts.extend(f"{module}:{self._bytes_hash(path)}" for path in paths)  # every copy of a name
        return hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()

    # -- cache keys: the summaries a file's findings depend on ----------------------------
    def start_recording(self, path: Optional[str] = None) -> None:
        """Record every module whose summary is asked for from now on (one file's lint: the
        file at ``path``, whose text decides which of :meth:`cuda_words` matter to it)."""
        self._record = set()
        self._recording = os.path.abspath(path) if path else ""

    def stop_recording(self) -> Dict[str, Tuple[str, str]]:
        """{module: (hash of its bytes, digest of its summary)} for the modules consulted
        since ``start_recording``: what the file's findings depend on besides its own text."""
        names, self._record = self._record or set(), None
        calls = {name[len(_CALLS):] for name in names if name.startswith(_CALLS)}
        if calls:
            names |= {_CALLS + key for key in self._calls_closure(calls)}
        out = {}
        for name in sorted(names):
            if name.startswith(_CALLS):
                key = name[len(_CALLS):]
                path = self.path_of(key.partition("|")[0])
                out[name] = (self._bytes_hash(path), self._calls_digest(key))
                continue
            if name.startswith(_INVENTORY):
                out[name] = (self._inventory_inputs(name), self._inventory_digest(name))
                continue
            if name.startswith(_PLATFORMS):
                module = name[len(_PLATFORMS):]
                path = self.path_of(module)
                out[name] = (self._bytes_hash(path), self._platform_digest(module))
                continue
            if name.startswith(_CUDA_WORDS):
                out[name] = (self._words_inputs(), self._words_digest(name[len(_CUDA_WORDS):]))
                continue
            if name.startswith(_CUDA):
                module = name[len(_CUDA):]
                path = self.path_of(module)
                out[name] = (self._bytes_hash(path), self._cuda_digest(module))
                continue
            if name.startswith(_LAUNCHES) or name.startswith(_MENTIONS):
                inputs = self._launch_inputs(name.partition(">:")[2], name.startswith(_MENTIONS))
                out[name] = (inputs, inputs)
                continue
            if name.startswith(_SOURCE):
                path = self.path_of(name[len(_SOURCE):])
                blob_hash = self._bytes_hash(path)
                out[name] = (blob_hash, blob_hash)
                continue
            summary = self.summary(name)
            path = self.path_of(name)
            blob = self._bytes(path) if path else None
            out[name] = (_hash(blob), summary.digest() if summary is not None else "")
        return out

    def dependency_digest(self, record: Dict[str, Sequence[str]]) -> str:
        """The digest of the current summaries of the modules in ``record`` (as
        ``stop_recording`` made it): a summary is recomputed only for a module whose bytes
        changed since, so a changed wrapper changes its callers' digests, and a comment
        changes nothing. "" for a file that consulted no module."""
        if not record:
            return ""
        parts = []
        for name in sorted(record):
            recorded_hash, recorded_digest = record[name]
            if name.startswith(_INVENTORY):
                same = self._inventory_inputs(name) == recorded_hash
                parts.append(f"{name}:{recorded_digest if same else self._inventory_digest(name)}")
                continue
            if name.startswith(_PLATFORMS):
                module = name[len(_PLATFORMS):]
                path = self.path_of(module)
                same = self._bytes_hash(path) == recorded_hash
                parts.append(f"{name}:{recorded_digest if same else self._platform_digest(module)}")
                continue
            if name.startswith(_CUDA_WORDS):
                same = self._words_inputs() == recorded_hash
                parts.append(f"{name}:{recorded_digest if same else self._words_digest(name[len(_CUDA_WORDS):])}")
                continue
            if name.startswith(_CUDA):
                module = name[len(_CUDA):]
                path = self.path_of(module)
                same = self._bytes_hash(path) == recorded_hash
                parts.append(f"{name}:{recorded_digest if same else self._cuda_digest(module)}")
                continue
            if name.startswith(_CALLS):
                key = name[len(_CALLS):]
                path = self.path_of(key.partition("|")[0])
                if self._bytes_hash(path) == recorded_hash:
                    parts.append(f"{name}:{recorded_digest}")
                else:
                    parts.append(f"{name}:{self._calls_digest(key)}")
                continue
            if name.startswith(_LAUNCHES) or name.startswith(_MENTIONS):
                parts.append(f"{name}:{self._launch_inputs(name.partition('>:')[2], name.startswith(_MENTIONS))}")
                continue
            if name.startswith(_SOURCE):
                path = self.path_of(name[len(_SOURCE):])
                parts.append(f"{name}:{self._bytes_hash(path)}")
                continue
            path = self.path_of(name)
            blob = self._bytes(path) if path else None
            if _hash(blob) == recorded_hash:
                digest = recorded_digest
            else:
                summary = self.summary(name)
                digest = summary.digest() if summary is not None else ""
            parts.append(f"{name}:{digest}")
        return hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


_INVENTORY = "<rocm-tests>:"  # a recorded dependency on the ROCm tests of a package
_PLATFORMS = "<platform-tests>:"  # a recorded dependency on a module's platform predicates
_CUDA = "<cuda-only>:"  # a recorded dependency on a module's CUDA-only facts
_CUDA_WORDS = "<cuda-words>:"  # a recorded dependency on the names of the modules that run CUDA-only code (+ the
# linted file's path: the names it spells are what matter)
_CALLS = "<calls>:"  # a recorded dependency on what a function of a module compiles and does ("module|name")
_LAUNCHES = "<triton-launches>:"  # a recorded dependency on which modules subscript a kernel's name
_MENTIONS = "<mentions>:"  # a recorded dependency on which modules spell a word
# An identifier subscripted, maybe through a call: ``kernel[grid]``, ``wrap_triton(kernel)[grid]``.
_SUBSCRIPTED = re.compile(rb"([A-Za-z_][A-Za-z0-9_]*)[ \t]*\)?[ \t]*\[")
_SOURCE = "<source>:"  # a recorded dependency on a module's bytes (facts read from its code; rocmport.reuse)
# Bytes a module must hold to check a value for a power of two (``triton_values.pow2_shaped``).
_POW2_BYTES = re.compile(rb"(?i)-\s*1\s*\)|pow(?:er)?.?(?:of)?.?(?:2|two)|pow2|log2|bin\(")


class _ValuesProject:
    """What ``triton_values.ModuleValues`` asks of the other modules: constants and functions."""

    def __init__(self, index: "ProjectIndex") -> None:
        self.index = index

    def constant(self, dotted: str):
        found = self.index.constant(dotted)
        return (True, found[1]) if found is not None else None

    def function(self, dotted: str):
        module, _, attr = self.index.defining_name(dotted).rpartition(".")
        if not module or self.index.path_of(module) is None:
            return None
        values = self.index.module_values(module)
        target = values.functions.get(attr) if values is not None else None
        return (values, target) if target is not None else None
# Bytes a module must hold to define a platform predicate that ``platforms.module_tests``
# reads (a test of torch's, or a name whose words decide).
PLATFORM_WORDS = re.compile(rb"(?i)hip|rocm|amd|gfx|cuda|nvidia|npu|xpu|hpu|mps|cpu|is_available|capability|fnuz|mi3")
# Bytes a module must hold to define a ROCm-build test (``means_rocm_build``) at module level:
# ``NAME = [(][bool(][getattr(]torch.version`` ... ``hip`` at the start of a line, or a
# ``return`` of that shape. A function that returns such a constant needs the constant too.
TEST_SHAPE = re.compile(rb"^(?:[ \t]*return|\w+[ \t]*(?::[^=\n]*)?=)\s*\(?\s*(?:bool\(\s*)?(?:getattr\(\s*)?"
                        rb"\w+\.version\W{0,12}hip\b", re.M)


def _import_word(name: str) -> str:
    """The word an importer outside a module's NVIDIA package must spell to import it: the
    outermost package below the top whose name says NVIDIA (``quack`` for ``pkg._vendor.quack.
    utils``: an importer inside that package is NVIDIA's itself), else the module's own name."""
    parts = name.split(".")
    for part in parts[1:-1]:
        if nvidia_named(f"_.{part}"):
            return part
    return parts[-1]


def _hash(blob: Optional[bytes]) -> str:
    return "" if blob is None else hashlib.blake2b(blob, digest_size=12).hexdigest()


# ----------------------------------------------------------------------------------------
# Summaries, from CPython's tree
# ----------------------------------------------------------------------------------------

def _literal(node: Optional[ast.AST]):
    """(True, value) for a str/bool/None/number literal, else (False, None)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bool, int, float, type(None))):
        return True, node.value
    return False, None


def _summarise(index: ProjectIndex, summary: ModuleSummary, tree: ast.AST, own: bool = False,
               rebinds: bool = True) -> None:
    """Fill ``summary`` from ``tree`` (``own``: the linted file itself, methods too;
    ``rebinds``: whether a function may rebind a module name, ``global`` in the bytes)."""
    body = getattr(tree, "body", [])
    summary.parsed = True
    summary.imports = imports = module_imports(body, lambda module, level: index.absolute(summary.name, module, level))
    torch_aliases = torch_names(imports)
    assigned: Dict[str, int] = {}
    for stmt in top_level(body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            assigned[stmt.name] = assigned.get(stmt.name, 0) + 1
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for bound, _full in import_bindings(stmt):
                assigned[bound] = assigned.get(bound, 0) + 1
        elif not isinstance(stmt, (ast.If, ast.Try, ast.With)) and type(stmt).__name__ != "TryStar":
            for node in walk(stmt):
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    assigned[node.id] = assigned.get(node.id, 0) + 1
    if rebinds:
        for node in walk(tree):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                for n in node.names:
                    assigned[n] = assigned.get(n, 0) + 2
    functions: Dict[str, ast.AST] = {}
    partials: List[Tuple[str, ast.Call]] = []
    for stmt in body:  # functions and constants: the top level proper only
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[stmt.name] = stmt if stmt.name not in functions else None
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                continue
            target = targets[0].id
            if assigned.get(target) != 1:
                continue
            ok, value = _literal(stmt.value)
            if ok:
                summary.constants[target] = value
            elif torch_aliases and means_rocm_build(stmt.value, torch_aliases):
                summary.rocm_tests.append((target, "constant"))
            elif isinstance(stmt.value, ast.Call):
                partials.append((target, stmt.value))
    local = {n for n, f in functions.items() if f is not None}
    module = summary.name
    builder = _FunctionFlows(index, module, imports, local, summary.constants)
    for fname, node in functions.items():
        if node is None:
            continue
        if torch_aliases and _returns_rocm_test(node, torch_aliases, summary):
            summary.rocm_tests.append((fname, "function"))
    summary.functions = {}
    # Local functions may forward to one another: settle them in dependency order (a
    # call to a local function not yet summarised is summarised first; cycles give up).
    builder.pending = {n: f for n, f in functions.items() if f is not None}
    builder.summary = summary
    for fname in list(builder.pending):
        builder.settle(fname)
    for target, call in partials:
        found = builder.partial(target, call)
        if found is not None:
            summary.functions[target] = found
    for stmt in body if own else ():  # methods: only the linted file's own rules ask
        if isinstance(stmt, ast.ClassDef):
            seen: Set[str] = set()
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = f"{stmt.name}.{item.name}"
                    if key in seen:
                        summary.methods.pop(key, None)
                        continue
                    seen.add(key)
                    found = builder.function(item)
                    if found is not None:
                        summary.methods[key] = found


def _returns_rocm_test(node, aliases: Set[str], summary: ModuleSummary) -> bool:
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return False
    if node.args.args or node.args.posonlyargs or node.args.kwonlyargs or node.args.vararg or node.args.kwarg:
        return False
    value = body[0].value
    if means_rocm_build(value, aliases):
        return True
    return isinstance(value, ast.Name) and (value.id, "constant") in summary.rocm_tests


def _params(node) -> Tuple[Tuple[str, ...], FrozenSet[str], Dict[str, object], FrozenSet[str]]:
    args = node.args
    positional = tuple(a.arg for a in args.posonlyargs + args.args)
    keywords = frozenset(a.arg for a in args.args + args.kwonlyargs)
    defaults: Dict[str, object] = {}
    has_default: Set[str] = set()
    pos_with_default = (args.posonlyargs + args.args)[len(positional) - len(args.defaults):]
    for arg, default in list(zip(pos_with_default, args.defaults)) + [
            (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]:
        has_default.add(arg.arg)
        ok, value = _literal(default)
        if ok:
            defaults[arg.arg] = value
        elif isinstance(default, ast.IfExp) and _literal(default.body)[0] and _literal(default.orelse)[0]:
            defaults[arg.arg] = (_literal(default.body)[1], _literal(default.orelse)[1])  # a gated literal
    return positional, keywords, defaults, frozenset(has_default)


class _FunctionFlows:
    """Computes ``FunctionSummary.flows`` for the functions of one module."""

    def __init__(self, index: ProjectIndex, module: str, imports: Dict[str, str], local: Set[str], constants):
        self.index = index
        self.module = module
        self.imports = imports
        self.local = local
        self.constants = constants
        self.pending: Dict[str, ast.AST] = {}
        self.active: Set[str] = set()
        self.summary: Optional[ModuleSummary] = None

    def settle(self, name: str) -> Optional[FunctionSummary]:
        assert self.summary is not None
        if name in self.summary.functions:
            return self.summary.functions[name]
        node = self.pending.get(name)
        if node is None or name in self.active:
            return None
        self.active.add(name)
        try:
            found = self.function(node)
        finally:
            self.active.discard(name)
            self.pending.pop(name, None)
        if found is not None:
            self.summary.functions[name] = found
        return found

    def callee(self, func: ast.AST) -> Tuple[Optional[str], Optional[FunctionSummary]]:
        """("compile" | "partial" | "list_mode_options" | "wrapper" | None, summary)."""
        if isinstance(func, ast.Name) and func.id in self.local and func.id not in self.imports:
            found = self.settle(func.id)
            return ("wrapper", found) if found is not None else (None, None)
        full = resolve_name(self.imports, set(), self.module, func)
        if full is None:
            return None, None
        if full in COMPILE:
            return "compile", None
        if full in PARTIAL:
            return "partial", None
        if full in LIST_MODE_OPTIONS:
            return "list_mode_options", None
        if full.split(".", 1)[0] == "torch":
            return None, None
        found = self.index.function(full)
        return ("wrapper", found) if found is not None else (None, None)

    def _call_targets(self, call: ast.Call):
        """(argument node, what it reaches, is a ** splat) for a call that hands values to
        torch.compile, else nothing."""
        kind, wrapper = self.callee(call.func)
        if kind == "partial" and call.args:
            inner_kind, inner = self.callee(call.args[0])
            if inner_kind == "compile":
                for k in call.keywords:
                    yield k.value, (MODE if k.arg == MODE else OPTIONS if k.arg == OPTIONS else None) \
                        if k.arg else "kwargs", k.arg is None
            elif inner_kind == "wrapper" and inner is not None:
                for k in call.keywords:
                    yield k.value, (inner.target(k.arg, None) if k.arg else ("kwargs", inner)), k.arg is None
            return
        if kind == "compile" or (kind is None and isinstance(call.func, ast.Attribute) and call.func.attr == "compile"
                                 and _dotted(call.func.value) not in self.imports):
            for k in call.keywords:
                if k.arg is None:
                    yield k.value, "kwargs", True
                elif k.arg in (MODE, OPTIONS):
                    yield k.value, k.arg, False
        elif kind == "list_mode_options":
            if call.args:
                yield call.args[0], MODE, False
            for k in call.keywords:
                if k.arg == MODE:
                    yield k.value, MODE, False
        elif kind == "wrapper" and wrapper is not None:
            for position, arg in enumerate(call.args):
                if isinstance(arg, ast.Starred):
                    break
                reached = wrapper.target(None, position)
                if reached:
                    yield arg, reached, False
            for k in call.keywords:
                if k.arg is None:
                    yield k.value, ("kwargs", wrapper), True
                else:
                    reached = wrapper.target(k.arg, None)
                    if reached:
                        yield k.value, reached, False

    def function(self, node) -> Optional[FunctionSummary]:
        args = node.args
        if not (args.posonlyargs or args.args or args.kwonlyargs or args.kwarg):
            return None  # nothing to forward (a closure's parameters belong to its outer function)
        positional, keywords, defaults, has_default = _params(node)
        params = set(positional) | set(keywords)
        kwarg = args.kwarg.arg if args.kwarg else None
        stored: Set[str] = set()
        calls: List[ast.Call] = []
        returned_dicts: List[ast.Dict] = []
        config_writes: List[ast.Assign] = []
        for sub in walk(node):  # one walk: what is rebound, called, returned, written
            kind = type(sub)
            if kind is ast.Name:
                if type(sub.ctx) is not ast.Load:
                    stored.add(sub.id)
            elif kind is ast.Call:
                calls.append(sub)
            elif kind is ast.Return:
                if type(sub.value) is ast.Dict:
                    returned_dicts.append(sub.value)
            elif kind is ast.Assign:
                if len(sub.targets) == 1 and type(sub.targets[0]) is ast.Attribute \
                        and sub.targets[0].attr == "cudagraphs":
                    config_writes.append(sub)
        # a parameter that is rebound in the body is not followed
        clean = {p for p in params if p not in stored}
        if kwarg in stored:
            kwarg = None
        if not clean and kwarg is None:
            return None
        flows: Dict[str, str] = {}
        kw_flows: Dict[str, str] = {}
        for sub in config_writes:
            # torch._inductor.config.triton.cudagraphs = p
            dotted = _dotted(sub.targets[0]) or ""
            if dotted.endswith("triton.cudagraphs") and isinstance(sub.value, ast.Name) and sub.value.id in clean:
                full = resolve_name(self.imports, set(), self.module, sub.targets[0]) or ""
                if full.startswith("torch._inductor.config"):
                    flows[sub.value.id] = CUDAGRAPHS
        for sub in calls:
            if not _may_carry(sub, clean, kwarg):
                continue  # no parameter in its arguments: spares resolving its callee
            for value, reached, splat in self._call_targets(sub):
                if reached is None:
                    continue
                if splat:
                    if isinstance(value, ast.Name) and value.id == kwarg:
                        if reached == "kwargs":
                            kw_flows.update({MODE: MODE, OPTIONS: OPTIONS})
                        elif isinstance(reached, tuple):
                            inner = reached[1]
                            kw_flows.update({k: v for k, v in inner.flows.items() if k in inner.keywords})
                            kw_flows.update(inner.kw_flows)
                    continue
                for name in _leaf_names(value):
                    if name in clean:
                        flows[name] = reached
                if reached == OPTIONS and isinstance(value, ast.Dict):
                    for key, item in zip(value.keys, value.values):
                        if isinstance(key, ast.Constant) and key.value == "triton.cudagraphs":
                            for name in _leaf_names(item):
                                if name in clean:
                                    flows[name] = CUDAGRAPHS
                if reached == OPTIONS and isinstance(value, ast.Call):
                    # options=build(p): the helper's cudagraphs parameter
                    for inner_value, inner_reached, _ in self._call_targets_of_builder(value):
                        for name in _leaf_names(inner_value):
                            if name in clean and inner_reached == CUDAGRAPHS:
                                flows[name] = CUDAGRAPHS
        for d in returned_dicts:
            for key, value in zip(d.keys, d.values):
                if isinstance(key, ast.Constant) and key.value == "triton.cudagraphs":
                    for name in _leaf_names(value):
                        if name in clean:
                            flows[name] = CUDAGRAPHS
        if not flows and not kw_flows:
            return None
        return FunctionSummary(self.module, node.name, positional, keywords, defaults, has_default,
                               flows, kw_flows, node.lineno)

    def _call_targets_of_builder(self, call: ast.Call):
        kind, wrapper = self.callee(call.func)
        if kind != "wrapper" or wrapper is None:
            return
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            reached = wrapper.target(None, position)
            if reached:
                yield arg, reached, False
        for k in call.keywords:
            if k.arg is not None:
                reached = wrapper.target(k.arg, None)
                if reached:
                    yield k.value, reached, False

    def partial(self, target: str, call: ast.Call) -> Optional[FunctionSummary]:
        """``name = functools.partial(torch.compile | wrapper, ...)``: a callable that takes
        ``mode=`` / ``options=`` (and the wrapper's parameters past those bound)."""
        kind, _ = self.callee(call.func)
        if kind != "partial" or not call.args or isinstance(call.args[0], ast.Starred):
            return None
        inner_kind, inner = self.callee(call.args[0])
        bound = {k.arg for k in call.keywords if k.arg}
        if inner_kind == "compile":
            flows = {MODE: MODE, OPTIONS: OPTIONS}
            return FunctionSummary(self.module, target, ("model",), frozenset({"model", MODE, OPTIONS}),
                                   {}, frozenset(bound), flows, {}, call.lineno, "partial")
        if inner_kind == "wrapper" and inner is not None:
            skip = len(call.args) - 1
            return FunctionSummary(self.module, target, inner.positional[skip:], inner.keywords, inner.defaults,
                                   inner.has_default | frozenset(bound), dict(inner.flows), dict(inner.kw_flows),
                                   call.lineno, "partial")
        return None


def _may_carry(call: ast.Call, clean: Set[str], kwarg: Optional[str]) -> bool:
    """Can a call hand one of ``clean`` (or ``**kwarg``) on, in a shape ``function`` reads:
    an argument that is the parameter (or a conditional of it), a dict or a call holding it?"""
    values = [a for a in call.args if type(a) is not ast.Starred] + [k.value for k in call.keywords]
    for value in values:
        kind = type(value)
        if kind is ast.Name or kind is ast.IfExp:
            if any(name in clean or name == kwarg for name in _leaf_names(value)):
                return True
        elif kind is ast.Dict:
            if any(name in clean for item in value.values if item is not None for name in _leaf_names(item)):
                return True
        elif kind is ast.Call:
            if _may_carry(value, clean, None):
                return True
    return False


def _leaf_names(value: ast.AST) -> Iterator[str]:
    """Names that are the value of an expression: ``p``, either arm of ``a if c else b``."""
    if isinstance(value, ast.Name):
        yield value.id
    elif isinstance(value, ast.IfExp):
        yield from _leaf_names(value.body)
        yield from _leaf_names(value.orelse)


def _import_sites(tree: ast.Module, name: str, absolute) -> List[List[Tuple[ast.expr, bool]]]:
    """Each import of module ``name`` in ``tree`` (``import name``, ``import name.sub``, ``from
    name import x``, ``from pkg import leaf``, relative ones through ``absolute``), as the
    branch tests around it: (test, True for its body / False for its ``else``)."""
    out: List[List[Tuple[ast.expr, bool]]] = []

    def imports_it(node) -> bool:
        return any(m == name or m.startswith(name + ".") for m in imported_names(node, absolute))

    def visit(body, tests) -> None:
        for stmt in body:
            if imports_it(stmt):
                out.append(list(tests))
            elif isinstance(stmt, ast.If):
                visit(stmt.body, tests + [(stmt.test, True)])
                visit(stmt.orelse, tests + [(stmt.test, False)])
            else:
                for field_name in ("body", "orelse", "finalbody"):
                    inner = getattr(stmt, field_name, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                        visit(inner, tests)
                for handler in getattr(stmt, "handlers", ()):
                    visit(handler.body, tests)

    visit(tree.body, [])
    return out


def _package_root(path: str, module: str) -> str:
    """The folder that holds the top package of ``module`` (the file at ``path``)."""
    ups = module.count(".") + (1 if os.path.basename(path).startswith("__init__.") else 0)
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(ups):
        folder = os.path.dirname(folder)
    return folder
