"""Run a rule family through LibCST's own codemod runner.

Each family module ends with a two-line ``Command`` subclass of :class:`RocmportCommand`, so

    python -m libcst.tool codemod compile_modes.Command PATH        # via .libcst.codemod.yaml
    python -m libcst.tool codemod -x codemods.compile_modes.Command PATH

apply that family's fixes with LibCST's tooling (parallel jobs, ``--unified-diff``, its
generated-file and blacklist handling). The command does not duplicate the engine: it runs
rocmport's ``fix_text`` on ``module.code`` with only the family's rule codes selected, under
the ``[tool.rocmport]`` configuration found from the file (prelude style and profile, unsafe
fixes), and returns the parsed result. A file with nothing to fix raises ``SkipFile``, so
LibCST reports it unchanged.
"""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodCommand, SkipFile


class RocmportCommand(CodemodCommand):
    DESCRIPTION = "The base of the rocmport family commands: run compile_modes.Command and the like."

    @classmethod
    def family_codes(cls):
        """The codes of the rules in the module that defines the command."""
        module = sys.modules[cls.__module__]
        return tuple(rule.CODE for rule in getattr(module, "RULES", ()))

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        from rocmport.config import ConfigError, Settings, load_settings
        from rocmport.engine import fix_text, select_rules

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
