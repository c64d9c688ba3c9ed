"""The platform analysis (``rocmport.analysis.platforms`` and ``gates``): which platforms a
condition is true on, and which platforms a node can run on, in the spellings torch and the
projects that port to ROCm use, and through the project's own predicates in other modules."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from rocmport.analysis import gates
from rocmport.analysis.index import ProjectIndex
from rocmport.analysis.platforms import Test as Cond
from rocmport.analysis.platforms import (ARCH, CPU, CUDA, EVERY, GPUS, HAS_GPU, IS_CPU, IS_CUDA, IS_OTHER, IS_ROCM, OTHER,
                                         ROCM, UNKNOWN, Env, classify, module_tests, only)
from rocmport.analysis.prescan import Facts
from rocmport.rules.base import RuleContext, RuleOptions

IMPORTS = {"torch": "torch", "os": "os"}


def read(source: str, tests=None) -> Cond:
    env = Env(dict(IMPORTS), dict(tests or {}))
    return classify(ast.parse(source, mode="eval").body, env)


@pytest.mark.parametrize("source,expected", [
    ("torch.version.hip", IS_ROCM),
    ("torch.version.hip is not None", IS_ROCM),
    ("torch.version.hip is None", IS_ROCM.negated()),
    ("getattr(torch.version, 'hip', None) is not None", IS_ROCM),
    ("bool(torch.version.hip)", IS_ROCM),
    ("torch.version.cuda is not None", IS_CUDA),
    ("not torch.version.cuda", IS_CUDA.negated()),
    ("torch.cuda.is_available()", HAS_GPU),
    ("torch.cuda.is_available() and torch.version.hip is None", only(CUDA)),
    ("torch.cuda.is_available() and not is_hip()", only(CUDA)),
    ("is_hip()", IS_ROCM), ("_is_hip", IS_ROCM), ("IS_ROCM", IS_ROCM), ("on_gfx950()", ARCH),
    ("current_platform.is_rocm()", IS_ROCM), ("current_platform().is_amd", IS_ROCM),
    ("is_cuda()", IS_CUDA), ("_is_cuda", IS_CUDA), ("current_platform.is_cuda()", IS_CUDA),
    ("current_platform().is_nvidia", IS_CUDA),
    ("x.is_cuda", HAS_GPU),  # a tensor's attribute: True on ROCm too
    ("is_cuda_alike()", HAS_GPU), ("use_cuda", HAS_GPU), ("torch.cuda.is_available() or is_npu()", only(CUDA, ROCM, OTHER)),
    ("is_npu()", IS_OTHER), ("_is_xpu", IS_OTHER), ("is_cpu()", IS_CPU),
    ("SYSTEM == 'rocm'", IS_ROCM), ("SYSTEM != 'rocm'", IS_ROCM.negated()), ("SYSTEM == 'cuda'", IS_CUDA),
    ("device.type == 'cuda'", HAS_GPU), ("x.device.type == 'cpu'", IS_CPU),
    ("target.backend == 'hip'", IS_ROCM), ("target.backend == 'cuda'", IS_CUDA),
    ("'AMD' in torch.cuda.get_device_name()", IS_ROCM), ("'gfx950' in props.gcnArchName", ARCH),
    ("'nvidia' in name.lower()", IS_CUDA),
    ("SYSTEM in ('cuda', 'rocm')", only(CUDA, ROCM)),
    ("not is_cpu() and not is_npu()", Cond(EVERY - {CPU, OTHER}, frozenset({CPU, OTHER}))),
    ("_is_cuda or _is_hip", only(CUDA, ROCM)),
    ("torch.cuda.get_device_capability() >= (9, 0)", Cond(GPUS, EVERY, arch=True)),
    ("x > 3", UNKNOWN), ("flag", UNKNOWN), ("rocm_enabled_by_user_somewhere.x()", UNKNOWN),
])
def test_conditions_read_as_platform_tests(source, expected):
    assert read(source) == expected


@pytest.mark.parametrize("source", [
    "on_gfx950()", "is_mi300()", "self._on_mi3xx()", "supports_float8_fnuz()", "current_platform.is_fp8_fnuz()",
    "'gfx94' in torch.cuda.get_device_properties(0).gcnArchName", "arch == 'gfx942'", "'MI300' in name",
    "props.gcnArchName.startswith(('gfx942', 'gfx950'))", "re.match('gfx95', arch)",
    "torch.version.hip and torch.cuda.get_device_capability() >= (9, 5)", "not is_navi4()",
])
def test_architecture_tests_tell_amd_gpus_apart(source):
    """An architecture test is true on some AMD GPUs only: neither side holds every one (the
    else of ``if on_gfx950():`` runs on MI300), unlike a vendor test."""
    test = read(source)
    assert test.arch, source
    assert ROCM in (test.true if not source.startswith("not") else test.false)
    assert ROCM in (test.false if not source.startswith("not") else test.true), source


@pytest.mark.parametrize("source", ["torch.version.hip is not None", "is_hip()", "SYSTEM == 'rocm'",
                                    "current_platform.is_rocm()", "not torch.version.cuda", "is_cuda()"])
def test_vendor_tests_are_not_architecture_tests(source):
    assert not read(source).arch


def test_a_helper_that_answers_by_architecture_is_learnt_whatever_its_name():
    tree = ast.parse(
        "import torch\n"
        "def uses_old_fp8():\n"
        "    if torch.version.hip:\n"
        "        if torch.cuda.get_device_capability() == (9, 4):\n"
        "            return True\n"
        "    return False\n"
        "def is_hopper():\n"
        "    if torch.cuda.get_device_capability() >= (9, 0):\n"
        "        return True\n"
        "    return False\n"
    )
    tests = module_tests(tree.body, Env({"torch": "torch"}, {}))
    assert tests["uses_old_fp8"] == ARCH
    assert "is_hopper" not in tests  # an NVIDIA generation, not a question about AMD GPUs


def test_the_guards_that_let_hip_through_are_true_on_rocm():
    for source in ("not is_cpu() and not is_npu()", "_is_cuda or _is_hip", "torch.cuda.is_available()",
                   "torch.cuda.get_device_capability()[0] >= 8"):
        assert ROCM in read(source).true, source
    for source in ("is_cuda()", "torch.version.cuda and not torch.version.hip", "not is_hip()",
                   "torch.version.hip is None"):
        assert ROCM not in read(source).true, source


def test_a_modules_own_predicates_are_learnt_in_order():
    tree = ast.parse(
        "import torch\n"
        "def is_hip():\n    '''doc'''\n    return torch.version.hip is not None\n"
        "_is_hip = is_hip()\n"
        "_is_cuda = torch.cuda.is_available() and not _is_hip\n"
        "def is_cuda():\n    return triton.runtime.driver.active.get_current_target().backend == 'cuda'\n"
        "HAS = x\n"
        "twice = torch.version.hip\ntwice = None\n"
    )
    env = Env({"torch": "torch"}, {})
    tests = module_tests(tree.body, env)
    assert tests["is_hip"] == IS_ROCM and tests["_is_hip"] == IS_ROCM
    assert tests["_is_cuda"] == only(CUDA)
    assert tests["is_cuda"] == IS_CUDA
    assert "HAS" not in tests and "twice" not in tests


def _project(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return ProjectIndex([str(p) for p in tmp_path.rglob("*.py")])


def test_predicates_are_followed_into_the_project_through_re_exports(tmp_path):
    index = _project(tmp_path, {
        "pkg/__init__.py": "from .utils import on_amd as is_amd_gpu\n",
        "pkg/utils.py": "import torch\ndef on_amd():\n    return torch.version.hip is not None\n"
                        "ON_NV = torch.cuda.is_available() and not on_amd()\nPLAIN = 3\n",
        "pkg/model.py": "from pkg import is_amd_gpu\nfrom .utils import ON_NV\n",
    })
    assert index.platform_test("pkg.utils.on_amd") == IS_ROCM
    assert index.platform_test("pkg.is_amd_gpu") == IS_ROCM
    assert index.platform_test("pkg.utils.ON_NV") == only(CUDA)
    assert index.platform_test("pkg.utils.PLAIN") is None
    index.start_recording()
    index.platform_test("pkg.is_amd_gpu")
    record = index.stop_recording()
    assert {"<platform-tests>:pkg", "<platform-tests>:pkg.utils"} <= set(record)
    digest = index.dependency_digest(record)
    (tmp_path / "pkg" / "utils.py").write_text("import torch\ndef on_amd():\n    return torch.version.cuda is not None\n")
    assert _project(tmp_path, {}).dependency_digest(record) != digest


def _where(source: str, marker: str = "HERE", index=None, path="m.py"):
    module = cst.parse_module(source)
    from rocmport.analysis.metadata import Metadata

    wrapper = Metadata(module, ast.parse(source), source)
    wrapper.walk()
    ctx = RuleContext(path=path, text=source, module=module, wrapper=wrapper, lines=None, gate_name="is_rocm",
                      options=RuleOptions(), facts=Facts.of(ast.parse(source)), index=index)
    found = []

    class Find(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == marker:
                found.append(node)

    module.visit(Find())
    return gates.of(ctx).where(found[0])


@pytest.mark.parametrize("source,expected", [
    ("HERE()\n", EVERY),
    ("import torch\nif torch.version.hip:\n    HERE()\n", {ROCM}),
    ("import torch\nif torch.version.hip:\n    pass\nelse:\n    HERE()\n", EVERY - {ROCM}),
    ("import torch\nif torch.version.hip:\n    pass\nelif torch.cuda.is_available():\n    HERE()\n", {CUDA}),
    ("import torch\nif not torch.cuda.is_available():\n    pass\nelse:\n    HERE()\n", {CUDA, ROCM}),
    ("import torch\nx = HERE() if torch.version.hip else 1\n", {ROCM}),
    ("import torch\nx = torch.version.hip is None and HERE()\n", EVERY - {ROCM}),
    ("import torch\nx = torch.version.hip or HERE()\n", EVERY - {ROCM}),
    ("import torch\ndef f():\n    if torch.version.hip is not None:\n        return\n    HERE()\n", EVERY - {ROCM}),
    ("import torch\ndef f():\n    assert torch.version.hip\n    HERE()\n", {ROCM}),
    ("import torch\nif torch.version.hip:\n    def f():\n        HERE()\n", {ROCM}),
    ("import torch\n_is_hip = torch.version.hip is not None\nif not _is_hip:\n    HERE()\n", EVERY - {ROCM}),
    ("if is_rocm:\n    HERE()\n", {ROCM}),  # the gate's name
    ("import torch\nwhile torch.version.hip:\n    HERE()\n", {ROCM}),
])
def test_where_a_node_runs(source, expected):
    assert _where(source) == frozenset(expected)


def test_where_reads_the_projects_predicates(tmp_path):
    index = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/env.py": "import torch\nIS_HIP = torch.version.hip is not None\n",
        "pkg/run.py": "from .env import IS_HIP\nif IS_HIP:\n    pass\nelse:\n    HERE()\n",
    })
    source = (tmp_path / "pkg" / "run.py").read_text()
    assert _where(source, index=index, path=str(tmp_path / "pkg" / "run.py")) == EVERY - {ROCM}


def test_other_and_cpu_are_platforms_too():
    assert OTHER in read("is_npu()").true and CPU in read("is_cpu()").true


@pytest.mark.parametrize("name,word", [
    ("fp8_gemm_sm90", "sm90"), ("HopperAttention", "hopper"), ("FP8GemmSM90", "sm90"), ("nvfp4_quantize", "nvfp4"),
    ("_tma_ok", "tma"), ("run_cutlass_mla", "cutlass"), ("execute", None), ("compute_sm", None),
    ("attention_mi300", None), ("smooth_quant", None), ("is_sm100_supported", "sm100"),
])
def test_names_that_say_nvidia_only(name, word):
    from rocmport.analysis.platforms import nvidia_feature_word

    assert nvidia_feature_word(name) == word


def _nvidia_only(source: str, names: bool = True):
    module = cst.parse_module(source)
    from rocmport.analysis.metadata import Metadata

    wrapper = Metadata(module, ast.parse(source), source)
    wrapper.walk()
    ctx = RuleContext(path="m.py", text=source, module=module, wrapper=wrapper, lines=None, gate_name="is_rocm",
                      options=RuleOptions(), facts=Facts.of(ast.parse(source)))
    found = []

    class Find(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == "HERE":
                found.append(node)

    module.visit(Find())
    return gates.of(ctx).nvidia_only(found[0], names=names)


def test_code_for_nvidia_gpus_only():
    assert "sm90" in _nvidia_only("class GemmSM90:\n    def run(self):\n        HERE()\n")
    assert "deep_gemm" in _nvidia_only("import torch\nimport deep_gemm\ndef f():\n    HERE()\n")
    # near misses: a guarded import, an import in a function, a portable name
    assert _nvidia_only("try:\n    import deep_gemm\nexcept ImportError:\n    deep_gemm = None\nHERE()\n") is None
    assert _nvidia_only("def f():\n    import deep_gemm\n    HERE()\n") is None
    assert _nvidia_only("class Gemm:\n    def run(self):\n        HERE()\n") is None


# -- tests that skip themselves: where a test runs (issue 28) --------------------------------------

@pytest.mark.parametrize("source,expected", [
    ("import torch, unittest\n@unittest.skipIf(torch.version.hip is not None, 'no')\ndef test_x():\n    HERE()\n",
     EVERY - {ROCM}),
    ("import torch, unittest\n@unittest.skipIf(not torch.version.cuda, 'Skip on AMD')\ndef test_x():\n    HERE()\n",
     {CUDA}),
    ("import torch, pytest\n@pytest.mark.skipif(torch.version.hip is not None or x, reason='r')\n"
     "def test_x():\n    HERE()\n", EVERY - {ROCM}),
    ("import torch, unittest\n@unittest.skipUnless(torch.version.hip, 'rocm only')\ndef test_x():\n    HERE()\n",
     {ROCM}),
    ("import torch, unittest\n@unittest.skipIf(torch.version.hip, 'no')\nclass T(unittest.TestCase):\n"
     "    def test_x(self):\n        HERE()\n", EVERY - {ROCM}),
    ("from torch.testing._internal.common_utils import skipIfRocm\n@skipIfRocm\ndef test_x():\n    HERE()\n",
     EVERY - {ROCM}),
    ("import torch, pytest\npytestmark = [pytest.mark.skipif(torch.version.hip is not None, reason='r')]\n"
     "def test_x():\n    HERE()\n", EVERY - {ROCM}),
    ("import torch, unittest\nclass T(unittest.TestCase):\n    def test_x(self):\n        if torch.version.hip:\n"
     "            self.skipTest('no')\n        HERE()\n", EVERY - {ROCM}),
    ("import torch, pytest\ndef test_x():\n    if torch.version.hip:\n        pytest.skip('no')\n    HERE()\n",
     EVERY - {ROCM}),
    # near misses: a skip that depends on nothing known, an unconditional skip (not a platform:
    # testing.FileTests.skipped), the decorator's own argument, skipIfRocmArch (some ROCm GPUs only)
    ("import unittest\n@unittest.skipIf(x > 3, 'no')\ndef test_x():\n    HERE()\n", EVERY),
    ("import unittest\n@unittest.skip('failing')\ndef test_x():\n    HERE()\n", EVERY),
    ("import torch, unittest\n@unittest.skipIf(HERE, 'no')\ndef test_x():\n    pass\n", EVERY),
    ("@skipIfRocmArch(MI300_ARCH)\ndef test_x():\n    HERE()\n", EVERY),
    ("import torch\ndef test_x():\n    if torch.version.hip:\n        log('rocm')\n    HERE()\n", EVERY),
])
def test_skip_decorators_say_where_a_test_runs(source, expected):
    assert _where(source) == frozenset(expected)


@pytest.mark.parametrize("name,skips", [
    ("skipIfRocm", True), ("skipCUDAIfRocm", True), ("skip_if_rocm", True), ("skipOnHip", True),
    ("skip_rocm", True), ("skipIfRocmArch", False), ("skipif", False), ("skipIfNotRocm", False),
])
def test_decorator_names_that_skip_on_rocm(name, skips):
    from rocmport.analysis.platforms import skips_on_rocm

    assert skips_on_rocm(name) is skips


@pytest.mark.parametrize("source,expected", [
    ("'Tesla' in name", IS_CUDA), ("'GeForce' in torch.cuda.get_device_name()", IS_CUDA),
    ("name.startswith('NVIDIA')", IS_CUDA), ("gpu_name.lower().startswith('nvidia')", IS_CUDA),
    ("'Radeon' in name", IS_ROCM), ("name.startswith('AMD')", IS_ROCM), ("'Instinct' not in name", IS_ROCM.negated()),
    # near misses: a product word that is no vendor's, a method that is not a prefix test
    ("name.startswith('GPU-')", UNKNOWN), ("'A' in name", UNKNOWN), ("name.count('NVIDIA')", UNKNOWN),
])
def test_product_names_of_gpus(source, expected):
    assert read(source) == expected


@pytest.mark.parametrize("source,expected", [
    ("USE_COMPILE = False\nif USE_COMPILE:\n    HERE()\n", set()),
    ("USE_COMPILE = False\nif not USE_COMPILE:\n    HERE()\n", EVERY),
    ("FULL = False\nx = HERE() if FULL else 1\n", set()),
    ("import torch\nFAST = True\nif FAST and torch.version.hip:\n    HERE()\n", {ROCM}),
    ("if False:\n    HERE()\n", set()),
    # near misses: a flag assigned twice, one a function may rebind (global), one from the environment
    ("FLAG = False\nFLAG = True\nif FLAG:\n    HERE()\n", EVERY),
    ("FLAG = False\ndef enable():\n    global FLAG\n    FLAG = True\nif FLAG:\n    HERE()\n", EVERY),
    ("import os\nFLAG = os.environ.get('X') == '1'\nif FLAG:\n    HERE()\n", EVERY),
])
def test_constant_flags_decide_where_code_runs(source, expected):
    assert _where(source) == frozenset(expected)


def test_a_module_none_is_no_flag():
    # a parameter of the same name would read as the module's value: only constants are flags
    assert _where("model = None\ndef f(model):\n    if model is not None:\n        HERE()\n") == EVERY
    assert _where("use_compile = False\nif use_compile:\n    HERE()\n") == EVERY


def test_code_after_a_cuda_only_import_that_must_succeed_is_for_nvidia_only():
    """``try: import deep_gemm`` whose handlers leave, or ``pytest.importorskip("flash_mla")``:
    the code after it runs only where the package imports, never on ROCm."""
    leave = "def f():\n    try:\n        import deep_gemm\n    except ImportError:\n        return False\n    HERE()\n"
    assert "deep_gemm" in _nvidia_only(leave)
    assert "flash_mla" in _nvidia_only("import pytest\ndef test():\n    pytest.importorskip('flash_mla')\n    HERE()\n")
    assert "cutlass" in _nvidia_only("import cutlass.cute as cute\ndef f():\n    HERE()\n")
    assert "cuda.bindings" in _nvidia_only("import cuda.bindings.driver as cuda\ndef f():\n    HERE()\n")
    # near misses: a fallback in the handler, the package found portable, a try after the node
    stay = "def f():\n    try:\n        import deep_gemm\n    except ImportError:\n        deep_gemm = None\n" \
           "    HERE()\n"
    assert _nvidia_only(stay) is None
    portable = "def f():\n    try:\n        import flash_attn\n    except ImportError:\n        return\n    HERE()\n"
    assert _nvidia_only(portable) is None
    before = "def f():\n    HERE()\n    try:\n        import deep_gemm\n    except ImportError:\n        return\n"
    assert _nvidia_only(before) is None


def test_a_predicate_named_for_a_feature_is_not_code_for_it_when_names_are_left_out():
    assert _nvidia_only("def is_hopper():\n    return HERE()\n") is not None
    assert _nvidia_only("def is_hopper():\n    return HERE()\n", names=False) is None
    assert _nvidia_only("import deep_gemm\ndef is_hopper():\n    return HERE()\n", names=False) is not None


@pytest.mark.parametrize("source,rocm", [
    ("importlib.util.find_spec('cutlass') is not None", False),
    ("find_spec('deep_gemm') is not None and torch.cuda.is_available()", False),
    ("importlib.util.find_spec('cutlass') is None", True),
    ("importlib.util.find_spec('flash_attn') is not None", None),  # ROCm builds exist
])
def test_finding_a_package_with_no_rocm_build_is_false_on_rocm(source, rocm):
    test = read(source)
    if rocm is None:
        assert not test.known
    elif rocm:
        assert ROCM not in test.false
    else:
        assert ROCM not in test.true


def test_acronyms_are_words_of_their_own():
    from rocmport.analysis.platforms import name_words

    assert list(name_words("NVIDIAModelOptQuantizer")) == ["nvidia", "model", "opt", "quantizer"]
    assert list(name_words("FP8GemmSM90")) == ["fp8", "gemm", "sm90"]


@pytest.mark.parametrize("path,other", [
    ("src/flag_gems/runtime/backend/_kunlunxin/ops/mm.py", True), ("backend/_mthreads/fused/x.py", True),
    ("pkg/npu/attention.py", True), ("src/flag_gems/runtime/backend/_amd/ops/mm.py", False),
    ("lmdeploy/pytorch/kernels/cuda/attention.py", False), ("npu_utils.py", False),
])
def test_other_accelerators_backend_trees(path, other):
    from rocmport.analysis.platforms import other_accelerator_path

    assert other_accelerator_path(path) is other
