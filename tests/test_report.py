"""The HTML report on small hand-built frames: bytes, links, audit lists, and a real browser."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from toolcalib.jsonio import InputError
from toolcalib.metrics.per_case import CASE_SCHEMA
from toolcalib.metrics.rows import CELL_KEYS
from toolcalib.metrics.triples import triples
from toolcalib.report import ReportTables, build_report, render_html
from toolcalib.report.audit import audited
from toolcalib.report.build import render_summary
from toolcalib.report.page import UNKNOWN_COUNTS
from toolcalib.report.selfcheck import checks

ROOT = Path(__file__).resolve().parents[1]
MODELS = ["org/model-a", "policy-oracle"]
VARIANTS = ["baseline", "paraphrase"]
CATEGORIES = {"irrelevance": "refuse", "multi_turn_miss_param": "ask"}
REAL = ["org/model-a"]
FIGURES = 2 * len(REAL) + 1 + len(REAL)  # profile and heatmap per real model, the plane, shift
HEADLINE = 1280, 800
"""The first viewport: the headline must be visible in it, no table wider than it."""


def _case(model: str, variant: str, category: str, index: int) -> dict[str, object]:
    """One per-case row; the pattern gives every group hits, misses, an excluded case, a
    step-cap case and an Acc>GAR case."""
    gold = CATEGORIES[category]
    shift = MODELS.index(model) + VARIANTS.index(variant) + len(category)
    turn_class = [gold, "tool_call", "other", gold, "none", gold][(index + shift) % 6]
    scored = index != 5
    passed = scored and (turn_class == gold or index == 2)
    hit = turn_class == gold
    return {
        "model": model, "variant": variant, "benchmark": "bfcl", "category": category,
        "case_id": f"{category}_{index}", "gold_action": gold, "gold_turn": 0,
        "gold_turn_gold": gold, "emitted": turn_class, "gold_emitted": hit,
        "gold_turn_class": turn_class, "gold_turn_hit": hit,
        "tool_call_emitted": turn_class == "tool_call",
        "gold_turn_tool_call": turn_class == "tool_call",
        "emission_classes": turn_class, "gold_emitted_any_step": hit or index == 3,
        "passed": passed if scored else None, "scored": scored,
        "outcome": "error" if not scored else "step_cap" if index == 4 else "completed",
        "error_type": None, "probes_fired": int(index == 7),
        "bound": ("acc_without_gold" if scored and passed and not hit
                  else "gold_without_acc" if scored and hit and not passed else None),
    }  # fmt: skip


def frames() -> dict[str, pl.DataFrame]:
    """per_case, triples, confusion, shift and validation tables of a small made-up run."""
    per_case = pl.DataFrame(
        [
            _case(m, v, c, i)
            for m in MODELS for v in VARIANTS for c in CATEGORIES for i in range(12)
        ]
    )  # fmt: skip
    confusion = (
        per_case.filter("scored")
        .group_by("model", "variant", "benchmark", "category",
                  gold="gold_turn_gold", emitted="gold_turn_class")
        .agg(count=pl.len().cast(pl.Int64))
        .with_columns(level=pl.lit("gold_turn"))
        .sort(pl.all())
    )
    shift = pl.DataFrame(
        [
            {"model": m, "variant": "paraphrase", "benchmark": "bfcl", "category": c,
             "metric": metric, "delta": (-1) ** j * 0.05 * (1 + i + j),
             "p_value": [0.01, 0.2, 0.04][(i + j) % 3]}
            for i, m in enumerate(MODELS) for j, c in enumerate(CATEGORIES)
            for metric in ("gar", "ter", "acc")
        ]
    )  # fmt: skip
    validation = pl.DataFrame(
        {"class": ["tool_call", "ask", "refuse"], "precision": [0.97, 0.9, 0.85],
         "recall": [0.95, 0.8, 0.9], "n": [120, 40, 35]}
    )  # fmt: skip
    overall = pl.DataFrame(
        {"profile": ["default", "default"], "source": ["all", "published-heldout"],
         "n": [195, 40], "accuracy": [0.912, 0.875]}
    )  # fmt: skip
    return {"per_case": per_case, "triples": triples(per_case), "confusion": confusion,
            "shift": shift, "validation": validation, "overall": overall}  # fmt: skip


def tables() -> ReportTables:
    f = frames()
    return ReportTables(f["triples"], f["confusion"], f["per_case"], shift=f["shift"],
                        validation=f["validation"], validation_summary=f["overall"])


def build(out_dir: Path) -> Path:
    return build_report(tables(), out_dir)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("report"))


def test_bytes_are_deterministic(report: Path, tmp_path: Path) -> None:
    """Equal bytes from another process, another hash seed and a changed matplotlib style."""
    script = (
        "import sys, matplotlib; from pathlib import Path; from tests.test_report import build;"
        "matplotlib.rcParams.update({'lines.linewidth': 5, 'font.size': 20});"
        "build(Path(sys.argv[1]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, env=env, check=True)
    for name in ("index.html", "summary.md"):
        assert (tmp_path / name).read_bytes() == (report.parent / name).read_bytes(), name


def test_page_is_self_contained(report: Path) -> None:
    text = report.read_text(encoding="utf-8")
    assert not re.search(r"https?:|file:|//", text)
    assert not re.search(r"<(img|link|iframe|object|embed)\b|\bsrc=|@import|@font-face", text)
    assert text.count("<svg") == FIGURES
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids)), "duplicate ids"
    missing = set(re.findall(r'href="#([^"]+)"', text)) - set(ids)
    assert not missing, f"links without a target: {sorted(missing)[:5]}"
    assert (report.parent / "summary.md").read_text() == render_summary(tables())


SECTIONS = ["headline", "shifts", "triples", "heatmaps", "self-check", "validation", "audit"]


def test_headline_first_then_shifts_triples_self_check(report: Path) -> None:
    """The page's order, the same in summary.md; the headline and shifts show real models
    only; the reference policies are in the self-check, each invariant with its verdict."""
    text = report.read_text(encoding="utf-8")
    starts = [text.index(f'<section id="{s}">') for s in SECTIONS]
    assert starts == sorted(starts)
    headline = text[starts[0]:starts[1]]
    assert headline.count("<svg") == len(REAL) + 1
    assert 'aria-label="calibration profile, org/model-a"' in headline
    assert "policy-oracle" not in headline and "policy-oracle" not in text[starts[1]:starts[2]]
    check = text[starts[4]:starts[5]]
    assert "policy-oracle</b>: GAR = 1 and Acc = 1 in every cell" in check
    assert "FAILS in 4 of 4 cells" in check  # the made-up oracle is not one
    md = (report.parent / "summary.md").read_text()
    heads = ["## Calibration at a glance", "## Variant shifts", "## Triples",
             "## Self-check", "## Classifier validation"]
    assert [md.index(h) for h in heads] == sorted(md.index(h) for h in heads)
    assert "- policy-oracle: GAR = 1 and Acc = 1 in every cell" in md
    assert "org/model-a · paraphrase: 6 (category, metric) pair(s) moved" in md


def test_validation_shows_accuracy_per_source_then_per_class(report: Path) -> None:
    """The classifier validation section: accuracy per profile and source (the held-out draw
    apart, issue 28), then the per-class table, on the page and in summary.md."""
    text = report.read_text(encoding="utf-8")
    section = text[text.index('<section id="validation">'):text.index('<section id="audit">')]
    assert section.index("<th>accuracy</th>") < section.index("<th>precision</th>")
    assert "<td>published-heldout</td>" in section
    md = (report.parent / "summary.md").read_text()
    part = md[md.index("## Classifier validation"):]
    assert part.index("| profile | source | n | accuracy |") < part.index("| class | precision")
    assert "| default | published-heldout | 40 | 0.875 |" in part


def test_ambiguous_turns_are_counted_per_cell(report: Path) -> None:
    """Each triple shows how many of its turns no classifier rule could decide (issue 28)."""
    text = report.read_text(encoding="utf-8")
    assert 'title="sort">ambiguous turns</th>' in text
    assert set(triples(frames()["per_case"])["ambiguous_turns"]) == {0}  # no such column


def test_a_variant_that_changed_nothing_is_one_line(tmp_path: Path) -> None:
    f = frames()
    flat = f["shift"].with_columns(delta=pl.lit(0.0), p_value=pl.lit(1.0))
    text = render_html(ReportTables(f["triples"], f["confusion"], f["per_case"], shift=flat))
    shifts = text[text.index('<section id="shifts">'):text.index('<section id="triples">')]
    assert "org/model-a · paraphrase: no change (every delta 0 over 2 categories x 3 metrics)" \
        in shifts
    assert "<svg" not in shifts


def test_self_check_holds_for_true_policies() -> None:
    rows = pl.DataFrame([
        {"model": "p-o", "variant": "baseline", "benchmark": "bfcl", "category": c,
         "gold_action": g, "n": 3, "gar": 1.0, "acc": 1.0, "ter": float(c != "irrelevance"),
         "ter_k": 3 * (c != "irrelevance")}
        for c, g in (("irrelevance", "refuse"), ("multi_turn_miss_param", "ask"))
    ] + [
        {"model": "p-c", "variant": "baseline", "benchmark": "bfcl", "category": c,
         "gold_action": g, "n": 200, "gar": 0.0, "acc": 0.0, "ter": ter, "ter_k": k}
        for c, g, ter, k in (("live_irrelevance", "refuse", 0.995, 199),
                             ("multi_turn_base", "tool_call", 1.0, 200))
    ])  # fmt: skip
    found = checks(rows, {"p-o": "oracle", "p-c": "always_call"})
    assert [(c.model, c.holds) for c in found] == [("p-c", True), ("p-c", True),
                                                   ("p-o", True)]
    broken = checks(rows.with_columns(ter=pl.lit(0.5)), {"p-c": "always_call"})
    assert [c.holds for c in broken] == [False, True]
    assert broken[0].failed == ["baseline/bfcl/multi_turn_base (GAR 0.000, TER 0.500, Acc 0.000)"]


def test_every_number_links_to_its_cases(report: Path) -> None:
    text = report.read_text(encoding="utf-8")
    table = frames()["triples"]
    for row in table.iter_rows(named=True):
        slug = "-".join(row[k] for k in ("model", "variant", "benchmark", "category"))
        slug = slug.replace("/", "_")
        for metric in audited(table.columns):
            if metric in UNKNOWN_COUNTS and not table[metric].sum():  # no column: none unknown
                assert f'id="audit-{slug}-{metric}"' in text
                continue
            assert f'id="cell-{slug}-{metric}"' in text
            assert f'href="#audit-{slug}-{metric}"' in text
    # org/model-a baseline irrelevance: turn classes by index are refuse, tool_call, other, ...
    slug = "org_model-a-baseline-bfcl-irrelevance"
    listing = re.search(rf'id="audit-{slug}-n_excluded">.*?<p class="ids">(.*?)</p>', text)
    assert listing and listing.group(1) == "irrelevance_5"
    cell = frames()["per_case"].filter(
        (pl.col("model") == "org/model-a") & (pl.col("variant") == "baseline")
        & (pl.col("category") == "irrelevance") & pl.col("scored")
    )  # fmt: skip
    listing = re.search(rf'id="audit-{slug}-ter">.*?<p class="ids">(.*?)</p>', text)
    expected = cell.filter("tool_call_emitted")["case_id"].to_list()
    assert listing and listing.group(1).split() == sorted(expected, key=lambda c: int(c[12:]))
    # most of n: written as the scored cases it leaves out
    listing = re.search(rf'id="audit-{slug}-acc">.*?<p class="ids">(.*?)</p>', text)
    failed = sorted(cell.filter(~pl.col("passed"))["case_id"], key=lambda c: int(c[12:]))
    assert listing and listing.group(1) == (
        f'every case of <a href="#audit-{slug}-n">n</a> but {len(failed)}: ' + " ".join(failed))
    # GAR@gold turn's cases are GAR's here: listed once, the second entry names the first
    same = re.search(rf'<p class="same" id="audit-{slug}-gar_turn">(.*?)</p>', text)
    assert same and same.group(1).endswith(f'the same cases as <a href="#audit-{slug}-gar">GAR</a>')
    # every triple of a category scores the same cases: n's list is written once on the page
    same = re.search(r'<p class="same" id="audit-policy-oracle-paraphrase-bfcl-irrelevance-n">'
                     r"(.*?)</p>", text)
    assert same and same.group(1).endswith(
        f'the same cases as <a href="#audit-{slug}-n">n of org/model-a · baseline · bfcl · '
        'irrelevance · refuse</a>')


def test_per_case_must_agree_with_triples() -> None:
    f = frames()
    with pytest.raises(InputError, match="disagrees with the triples"):
        render_html(ReportTables(f["triples"], f["confusion"], f["per_case"].slice(1)))


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium, installed with apt if missing (skipped only if that fails)."""
    binary = "/usr/bin/chromium"
    if not Path(binary).exists():
        if shutil.which("apt-get") is None:
            pytest.skip("chromium is missing and there is no apt-get to install it")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-q", "chromium"]
        done = subprocess.run(install, capture_output=True, text=True, env=env)
        if done.returncode:
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env)
            done = subprocess.run(install, capture_output=True, text=True, env=env)
        if done.returncode or not Path(binary).exists():
            pytest.skip(f"apt-get could not install chromium: {done.stderr[-500:]}")
    return binary


def browse(binary: str, profile: Path, page: Path, *args: str) -> str:
    """Run headless chromium on the page with networking features off; its stdout."""
    command = [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args, page.as_uri(),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


LAYOUT = """<script>addEventListener('load',function(){
var h=document.getElementById('headline').getBoundingClientRect(),d=document.documentElement;
var w=0;document.querySelectorAll('table').forEach(function(t){
var r=t.getBoundingClientRect();if(r.width>0&&r.right>w){w=r.right;}});
var svgs=document.querySelectorAll('#headline svg'),low=0;svgs.forEach(function(s){
low=Math.max(low,s.getBoundingClientRect().bottom);});
var sel=document.querySelector('select[name=model]');sel.value='org/model-a';filt();
var shown=0;document.querySelectorAll('table.triples tbody tr').forEach(function(r){
if(r.style.display!=='none'){shown++;}});sel.value='';filt();sortBy(0);sortBy(0);
var first=document.querySelector('table.triples tbody tr').dataset.model;
var p=document.createElement('pre');p.id='layout';p.textContent=JSON.stringify({
scroll:d.scrollWidth,table:w,top:h.top,figures:svgs.length,bottom:low,shown:shown,
first:first});
document.body.appendChild(p);});</script>"""
"""Appended to a copy of the page: measures the layout after load into `<pre id=layout>`."""


@pytest.mark.slow
def test_headline_fits_the_first_viewport(chromium: str, report: Path, tmp_path: Path) -> None:
    """At 1280x800: the page is no wider than the window (no table overflows it), the
    headline's figures end inside the first viewport, and the screenshot shows them drawn."""
    import json

    import numpy as np
    from PIL import Image

    width, height = HEADLINE
    probe = tmp_path / "probe.html"
    probe.write_text(report.read_text(encoding="utf-8").replace("</body>", LAYOUT + "</body>"),
                     encoding="utf-8")
    dom = browse(chromium, tmp_path / "profile", probe, f"--window-size={width},{height}",
                 "--dump-dom")
    layout = json.loads(re.search(r'<pre id="layout">(.*?)</pre>', dom).group(1))
    assert layout["scroll"] <= width and layout["table"] <= width, layout
    assert layout["figures"] == len(REAL) + 1 and layout["bottom"] <= height, layout
    # the inline filter and sort work without a server
    assert layout["shown"] == len(VARIANTS) * len(CATEGORIES)
    assert layout["first"] == "policy-oracle"  # sorted by model, twice: descending

    shot = tmp_path / "first-screen.png"
    browse(chromium, tmp_path / "profile", report, f"--window-size={width},{height}",
           f"--screenshot={shot}")  # fmt: skip
    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=np.int16)
    assert pixels.shape == (height, width, 3)
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    gar = (abs(r - 0x1F) < 20) & (abs(g - 0x5F) < 20) & (abs(b - 0xA8) < 20)
    acc = (r > 240) & (abs(g - 0x7F) < 25) & (b < 50)
    assert gar.sum() > 300 and acc.sum() > 300, "the profile's GAR and Acc bars are not drawn"
    if os.environ.get("TOOLCALIB_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["TOOLCALIB_KEEP_SCREENSHOT"] + ".first-screen.png")


@pytest.mark.slow
def test_figures_render_in_a_browser(chromium: str, report: Path, tmp_path: Path) -> None:
    import numpy as np
    from PIL import Image

    dom = browse(chromium, tmp_path / "profile", report, "--dump-dom")
    svgs = re.findall(r"<svg\b.*?</svg>", dom, flags=re.S)
    assert len(svgs) == FIGURES
    for svg in svgs:
        assert len(svg) > 3000 and svg.count("<path") >= 10 and svg.count("<text") >= 5
    assert dom.count('class="audit"') == frames()["triples"].height

    shot = tmp_path / "screenshot.png"
    browse(chromium, tmp_path / "profile", report, "--window-size=1400,3000",
           f"--screenshot={shot}")  # fmt: skip
    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=np.int16)
    assert pixels.shape == (3000, 1400, 3)
    gray = pixels.mean(axis=2)
    assert gray.std() > 20, "blank screenshot"
    assert 0.02 < (gray < 250).mean() < 0.9
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    assert ((b > 100) & (r < 60) & (g < 110)).sum() > 500, "no dark-blue heatmap cells drawn"
    assert ((r > 240) & (g < 130) & (b < 50)).sum() > 200, "no orange marks/bars drawn"
    if os.environ.get("TOOLCALIB_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["TOOLCALIB_KEEP_SCREENSHOT"])


def test_the_structural_reading_is_shown_beside_gar_in_tau2_cells() -> None:
    """A τ² cell shows `gar_structural` with its own k/n and interval; a BFCL cell (no reading)
    shows "–", in the markdown table and the page's triples table."""
    from toolcalib.metrics.markdown import STRUCTURAL_LABEL, triples_markdown
    from toolcalib.report.audit import slugs
    from toolcalib.report.page import triples_table

    base = _case("org/model-a", "baseline", "irrelevance", 0)
    rows = [base | {"structural_hit": None},
            base | {"benchmark": "tau2", "category": "airline", "case_id": "airline_0",
                    "gold_action": "refuse", "structural_hit": True}]
    table = triples(pl.DataFrame(rows, schema=CASE_SCHEMA))
    bfcl, tau2 = table.sort("benchmark").iter_rows(named=True)
    assert (bfcl["gar_structural_n"], bfcl["gar_structural"]) == (0, None)
    assert (tau2["gar_structural_n"], tau2["gar_structural_k"], tau2["gar_structural"]) == (
        1, 1, 1.0)
    text = triples_markdown(table)
    assert STRUCTURAL_LABEL in text and "not GAR" in text and "`paper`" in text
    lines = {line.split(" | ")[2]: line for line in text.splitlines() if "org/model-a" in line}
    assert lines["tau2"].count("100.0% (1/1)") >= 1 and lines["bfcl"].split(" | ")[-3] == "–"
    html = triples_table(table, slugs([tuple(r) for r in table.select(CELL_KEYS).iter_rows()]))
    assert "<small>1/1</small>" in html and "<small>none</small>" in html
