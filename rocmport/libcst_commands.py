"""Run a rule family through LibCST's own codemod runner.

One command class per rule family, all in this module, so that

    python -m libcst.tool codemod libcst_commands.CompileModes PATH      # via .libcst.codemod.yaml
    python -m libcst.tool codemod -x rocmport.libcst_commands.CompileModes PATH

apply that family's fixes with LibCST's tooling (parallel jobs, ``--unified-diff``, its
generated-file and blacklist handling). A command does not duplicate the engine: it runs
rocmport's ``fix_text`` on ``module.code`` with only the family's rule codes selected, under
the ``[tool.rocmport]`` configuration found from the file (prelude style and profile, unsafe
fixes), and returns the parsed result. A file with nothing to fix raises ``SkipFile``, so
LibCST reports it unchanged.

This is a face: it sits on the engine, and no rule module knows it exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Tuple

import libcst as cst
from libcst.codemod import CodemodCommand, SkipFile

from .config import ConfigError, Settings, load_settings
from .fixing import fix_text
from .linting import select_rules
from .registry import family_rules


class RocmportCommand(CodemodCommand):
    DESCRIPTION = "The base of the rocmport family commands: run libcst_commands.CompileModes and the like."
    #: the rule family package under ``rocmport.rules`` whose rules the command applies
    FAMILY: ClassVar[str] = ""

    @classmethod
    def family_codes(cls) -> Tuple[str, ...]:
        """The codes of the rules of the command's family."""
        return tuple(rule.CODE for rule in family_rules(cls.FAMILY))

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        filename = self.context.filename or "-"
        try:
            base = load_settings(Path(filename).resolve().parent if filename != "-" else Path.cwd())
        except ConfigError:
            base = Settings()
        settings = base.with_overrides(select=self.family_codes(), extend_select=(), ignore=base.ignore)
        enabled, rules = select_rules(settings, filename)
        text = tree.code
        fixed, analysis, applied, notes, extra = fix_text(text, filename, settings, rules, enabled)
        for note in notes:
            if note is not None:
                self.warn(f"{note.code} line {note.start.row}: {note.message}")
        if fixed == text:
            raise SkipFile("rocmport: nothing to fix")
        for path, data in extra.items():  # the generated prelude module (module style)
            Path(path).write_bytes(data)
        return cst.parse_module(fixed, config=tree.config_for_parsing)


class CompileModes(RocmportCommand):
    DESCRIPTION = "rocmport ROC1xx: torch.compile modes that use CUDA graphs."
    FAMILY = "compile_modes"


class InductorConfig(RocmportCommand):
    DESCRIPTION = "rocmport ROC2xx: inductor and dynamo configuration."
    FAMILY = "inductor_config"


class Capture(RocmportCommand):
    DESCRIPTION = "rocmport ROC3xx: CUDA-graph capture hazards."
    FAMILY = "capture"


class GraphBreaks(RocmportCommand):
    DESCRIPTION = "rocmport ROC4xx: graph breaks inside compiled code."
    FAMILY = "graph_breaks"


class TritonLaunch(RocmportCommand):
    DESCRIPTION = "rocmport ROC5xx: Triton launch and tile parameters."
    FAMILY = "triton_launch"


class EnvVars(RocmportCommand):
    DESCRIPTION = "rocmport ROC6xx: environment variables."
    FAMILY = "env_vars"


class VendorChecks(RocmportCommand):
    DESCRIPTION = "rocmport ROC7xx: code that assumes the GPU is NVIDIA."
    FAMILY = "vendor_checks"


#: family module name -> its command
COMMANDS = {command.FAMILY: command for command in
            (CompileModes, InductorConfig, Capture, GraphBreaks, TritonLaunch, EnvVars, VendorChecks)}
