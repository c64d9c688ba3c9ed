"""Rule documentation: ``docs/rules.md`` is generated from the rules' own ``Rule.doc()``.

Regenerate it with ``python scripts/gen_rule_docs.py`` (or ``python -m rocmport.docs``);
``python -m rocmport.docs --check`` exits 1 when the file is stale. Each rule's section is
exactly the text ``rocmport rule CODE`` prints, between ``<!-- rule: CODE -->`` markers.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Dict, Optional

HOMEPAGE = "https://github.com/rocmport/rocmport"
RULES_DOC = "docs/rules.md"
REPO_ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "python scripts/gen_rule_docs.py"

_MARKER = "<!-- rule: {code} -->"
_MARKER_RE = re.compile(r"^<!-- rule: (ROC\d{3}) -->\n", re.M)
_END = "<!-- end of rules -->"


def anchor(rule) -> str:
    """GitHub's heading anchor for a rule's section heading ``# CODE name``."""
    heading = f"{rule.CODE} {rule.NAME}".lower()
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def rule_url(rule) -> str:
    return f"{HOMEPAGE}/blob/main/{RULES_DOC}#{anchor(rule)}"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render() -> str:
    """The whole of docs/rules.md."""
    from .registry import all_rules

    rules = all_rules()
    out = [
        "# rocmport rules",
        "",
        f"<!-- Generated from the rules' own documentation by `{REGENERATE}`; do not edit. -->",
        "",
        "Each section below is what `rocmport rule CODE` prints. Fixes: *safe* keeps the NVIDIA",
        "path unchanged and is applied by `rocmport fix --write`; *unsafe* is applied only with",
        "`--unsafe-fixes`; *display-only* is a suggestion that is never applied.",
        "",
        "| code | name | fix | summary |",
        "| --- | --- | --- | --- |",
    ]
    for code, rule in rules.items():
        fix = rule.FIX_APPLICABILITY.value if rule.FIX_APPLICABILITY else "none"
        summary = _cell(rule.SUMMARY) + ("" if rule.DEFAULT_ENABLED else " (off by default)")
        out.append(f"| [{code}](#{anchor(rule)}) | `{rule.NAME}` | {fix} | {summary} |")
    out.append("")
    for code, rule in rules.items():
        out.append(_MARKER.format(code=code))
        out.append(rule.doc().rstrip("\n"))
        out.append("")
    out.append(_END)
    return "\n".join(out) + "\n"


def sections(text: str) -> Dict[str, str]:
    """Each rule's section of a rendered docs/rules.md, keyed by code (as ``rule CODE`` prints it)."""
    body = text.split(_END, 1)[0]
    matches = list(_MARKER_RE.finditer(body))
    result = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        result[match.group(1)] = body[match.end():end].rstrip("\n") + "\n"
    return result


def main(argv: Optional[list] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = REPO_ROOT / RULES_DOC
    for arg in args:
        if arg not in ("--check",):
            target = Path(arg)
    text = render()
    current = target.read_text(encoding="utf-8") if target.exists() else None
    if "--check" in args:
        if current != text:
            print(f"{target} is stale: regenerate it with `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
