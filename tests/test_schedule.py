from types import SimpleNamespace

from toolcalib.benchmarks import PLUGINS, get_benchmark
from toolcalib.pipeline.schedule import drop_local_rate_limit, generate_priority

VARIANTS = ["baseline", "system-permission", "sri"]
BFCL = get_benchmark("bfcl")


def priorities() -> dict[tuple[str, str], int]:
    return {(v, c): generate_priority(VARIANTS, BFCL.categories, BFCL.opens_as, v, c)
            for v in VARIANTS for c in BFCL.categories}


def test_the_first_variant_starts_before_the_others_and_order_is_total() -> None:
    p = priorities()
    assert len(set(p.values())) == len(p)
    for c in BFCL.categories:
        for d in BFCL.categories:
            assert p["baseline", c] > p["system-permission", d] > p["sri", c]


def test_categories_opening_as_another_start_after_every_other_category() -> None:
    p = priorities()
    derived = set(BFCL.opens_as)
    assert derived == {"multi_turn_long_context", "multi_turn_miss_param"}
    for v in VARIANTS:
        assert min(p[v, c] for c in BFCL.categories if c not in derived) > \
            max(p[v, c] for c in derived)
        assert p[v, "multi_turn_long_context"] > p[v, "multi_turn_miss_param"]  # config order


def test_every_benchmark_names_real_categories() -> None:
    for name in PLUGINS:
        benchmark = get_benchmark(name)
        for category, source in benchmark.opens_as.items():
            assert {category, source} <= set(benchmark.categories)
            assert source not in benchmark.opens_as


def test_a_local_run_has_no_submission_rate_limit() -> None:
    local = SimpleNamespace(local_exec=True, scheduler=SimpleNamespace(job_rate_limiter=object()))
    assert drop_local_rate_limit(local) is True
    assert local.scheduler.job_rate_limiter is None
    assert drop_local_rate_limit(local) is False  # nothing left to drop


def test_a_cluster_run_keeps_its_limit() -> None:
    limiter = object()
    cluster = SimpleNamespace(local_exec=False, scheduler=SimpleNamespace(job_rate_limiter=limiter))
    assert drop_local_rate_limit(cluster) is False
    assert cluster.scheduler.job_rate_limiter is limiter
    assert drop_local_rate_limit(SimpleNamespace(local_exec=True)) is False  # no scheduler yet
