import io

from toolcalib.progress import Progress


def test_progress_reports_rate_and_eta():
    now = [0.0]
    out = io.StringIO()
    progress = Progress("m/baseline/bfcl/base", 4, every_s=0, stream=out, clock=lambda: now[0])
    now[0] = 60.0
    progress.advance()
    assert out.getvalue().strip() == (
        "[toolcalib] m/baseline/bfcl/base: 1/4 cases (25%), 60.0 cases/h, "
        "elapsed 1m00s, ETA 3m00s")
    now[0] = 7200.0
    progress.advance(3)
    assert "4/4 cases (100%)" in out.getvalue() and "ETA 0m00s" in out.getvalue()
