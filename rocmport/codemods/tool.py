"""ROC0xx: findings about the tool itself (files it cannot read, fixes it could not apply).

These rules never visit a tree; the engine reports them. They live here so that their
documentation comes from the same place as every other rule's.
"""

from __future__ import annotations

from .base import Rule


class UnreadableFile(Rule):
    CODE = "ROC001"
    NAME = "unreadable-file"
    SUMMARY = "A file that cannot be read, decoded or parsed."
    WHAT = """
        A file rocmport was asked to check but could not: a syntax error, a NUL byte, bytes
        that are not valid in the file's encoding, a directory or broken link given by name,
        or a file it has no permission to read. The message gives the reason and the position.
        """
    WHY = """
        A file that is not checked may still hold a hazard. rocmport reports it instead of
        skipping it silently, and goes on with the other files.
        """
    EXAMPLE = """
        def broken(:
            pass
        """
    FIX = "None: correct the file, or exclude it in `[tool.rocmport] extend-exclude`."


class FixFailed(Rule):
    CODE = "ROC002"
    NAME = "fix-not-applied"
    SUMMARY = "A fix that rocmport computed but did not apply."
    WHAT = """
        The fix loop applies fixes and lints again until nothing changes. When applying a
        fix would produce code that does not parse, or the loop does not settle within its
        bound, the original text is kept for that fix and this finding says why.
        """
    WHY = "It points at a rocmport bug or an unusual construct; the code is left as it was."
    EXAMPLE = "# (no example: this finding reports on rocmport itself)"
    FIX = "None. Please report it with the file that triggers it."


RULES = [UnreadableFile, FixFailed]
