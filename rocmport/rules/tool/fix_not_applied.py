"""ROC002 fix-not-applied: A fix that rocmport computed but did not apply.

The rule's documentation is its class's (`rocmport rule ROC002` prints it).
"""

from __future__ import annotations

from rocmport.reports import NOT_APPLIED
from rocmport.rules.base import Rule


class FixFailed(Rule):
    CODE, NAME = NOT_APPLIED
    SUMMARY = "A fix that rocmport computed but did not apply."
    WHAT = """
        The fix loop applies fixes and lints again until nothing changes. When applying a
        fix would produce code that does not parse, the original text is kept for that fix;
        when a rule's fixes do not settle within the loop's bound (8 passes), none of that
        rule's fixes is applied (the passes are made again without them). This finding says
        which and why.
        """
    WHY = "It points at a rocmport bug or an unusual construct; the code is left as it was."
    EXAMPLE = "# (no example: this finding reports on rocmport itself)"
    FIX = "None. Please report it with the file that triggers it."
