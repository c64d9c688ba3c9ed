"""ROC001 unreadable-file: A file that cannot be read, decoded or parsed.

The rule's documentation is its class's (`rocmport rule ROC001` prints it).
"""

from __future__ import annotations

from rocmport.reports import UNREADABLE
from rocmport.rules.base import Rule


class UnreadableFile(Rule):
    CODE, NAME = UNREADABLE
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
