"""ROC1xx fixtures: expected output, the fix properties, near-misses."""

from __future__ import annotations

import textwrap

import pytest

from .harness import assert_fix_properties, check_fixture_pair, codes, fix, fixed_text, fixture_pairs, lint

PAIRS = list(fixture_pairs("compile_modes"))


@pytest.mark.parametrize("path,expected", PAIRS, ids=[p.name for p, _ in PAIRS])
def test_fixture(path, expected):
    check_fixture_pair(path, expected)


def test_spellings_are_all_found():
    found = codes((PAIRS[0][0].parent / "spellings.py").read_bytes())
    assert found.count("ROC101") == 6
    assert found.count("ROC102") == 3
    assert found.count("ROC103") == 1
    assert found.count("ROC104") == 1


def test_never_adds_options_beside_mode():
    src = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
    out = fix(src).fixed.decode()
    assert "options=" not in out


def test_finding_positions_are_one_based_and_cover_the_literal():
    (finding,) = lint('import torch\nf = torch.compile(g,\n    mode="reduce-overhead")\n')
    assert (finding.start.row, finding.start.column) == (3, 10)
    assert (finding.end.row, finding.end.column) == (3, 27)


def test_a_mode_constant_is_gated_where_it_is_decided_not_at_the_call():
    """Issue 29, fix at the source: the constant is the decision; ROC104 leaves the call."""
    src = 'import torch\nMODE = "reduce-overhead"\nf = torch.compile(g, mode=MODE)\n'
    assert codes(src) == ["ROC105"]
    out = fix(src).fixed.decode()
    assert 'MODE = "default" if is_rocm else "reduce-overhead"\nf = torch.compile(g, mode=MODE)\n' in out
    assert lint(out) == []


def test_config_defaults_are_display_only():
    src = ('import torch\nfrom dataclasses import dataclass\n\n@dataclass\nclass Cfg:\n'
           '    compile_mode: str = "reduce-overhead"\n')
    (finding,) = lint(src)
    assert finding.code == "ROC105" and finding.fix.applicability.value == "display-only"
    assert fix(src).fixed is None


def test_already_fixed_code_is_left_alone():
    src = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
    once = fix(src).fixed
    assert lint(once) == []
    assert fix(once).fixed is None


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_form_feed_indentation_and_two_hazards_on_one_line(newline):
    """LibCST leaves form feeds in a line's indentation out of its columns; both hazards on
    the line must be fixed once each (found by the fuzzer: the second was gated again and
    again)."""
    src = newline.join([b"import torch", b"\x0c\x0cf = torch.compile(g, mode='reduce-overhead'); "
                        b"h = torch.compile(g, mode='max-autotune')", b""])
    report = assert_fix_properties(src)
    body = report.fixed.split(b'"hip", None) is not None')[1]
    assert body.count(b"is_rocm") == 2
    assert b"'default' if is_rocm else 'reduce-overhead'" in body
    assert b"'max-autotune-no-cudagraphs' if is_rocm else 'max-autotune'" in body


def test_a_stored_default_every_compile_call_reads_is_gated_where_it_is_decided():
    """Issue 29, fix at the source: ROC105 gates the default that every reader hands to
    torch.compile's mode, and ROC104 leaves the compile call (issue 28's "findings follow
    fixes" still holds where the calls are gated by hand: ROC105's VALID cases)."""
    src = textwrap.dedent("""\
        import torch
        from dataclasses import dataclass


        @dataclass
        class PolicyConfig:
            compile_mode: str = "reduce-overhead"


        def build(model, cfg):
            return torch.compile(model, mode=cfg.compile_mode)
        """)
    assert [f.code for f in lint(src)] == ["ROC105"]
    fixed = fix(src).fixed
    assert fixed is not None and b'compile_mode: str = "default" if is_rocm else "reduce-overhead"' in fixed
    assert b"mode=cfg.compile_mode)" in fixed
    assert [f.code for f in lint(fixed)] == []


def test_roc106_wraps_a_decode_step_beside_a_training_loop_but_not_the_trained_model():
    """ROC106 (issue 31): the helper falls back under autograd, so a compiled model that a
    function of the file runs backward through is not wrapped; one that only inference code
    calls, in the same file, still is."""
    src = textwrap.dedent('''\
        import torch

        decode = torch.compile(net, mode="reduce-overhead")
        trained = torch.compile(net, mode="reduce-overhead")


        @torch.no_grad()
        def generate(x):
            return decode(x)


        def train(x, y, opt):
            loss = (trained(x) - y).square().mean()
            loss.backward()
            opt.step()
        ''')
    found = {f.start.row: f for f in lint(src, select=["ROC106"])}
    assert sorted(found) == [3, 4]
    assert found[3].fix.edits and "train() runs backward" not in found[3].message
    assert not found[4].fix.edits and "train() runs backward on its output" in found[4].message
    fixed = fixed_text(src, select=["ROC106"], unsafe=True)
    assert "decode = rocmport_cudagraph(torch.compile(" in fixed
    assert "trained = torch.compile(net, mode=\"reduce-overhead\")" in fixed
