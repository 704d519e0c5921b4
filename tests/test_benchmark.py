"""The five-chapter extrapolation of ``make benchmark`` (tools/benchmark.py), on a made-up record."""


import pytest

from tools.benchmark import extrapolate


def test_the_five_chapter_estimate_scales_what_grows_with_the_book_and_counts_every_ci_stage():
    record = {
        "machine": {"cores": 2},
        "make_test_cold": {"make_test_s": 400.0,
                           "fixtures": {"execute_notebooks_s": 150.0, "site_build_s": 20.0},
                           "test_calls_by_file_s": {"tests/test_site.py": 30.0, "tests/test_data.py": 2.0}},
        "notebooks": {"claims_only": {"a": {"seconds": 100.0}, "b": {"seconds": 60.0}}},
        "other_ci_stages": {"make_test_coursework_s": 200.0, "make_test_install_s": 180.0},
    }
    est = extrapolate(record, chapters_now=1)
    # make test: 200 s fixed + 5 x 200 s that grow
    assert est["make_test_cold_min"] == pytest.approx(1200 / 60, abs=0.05)
    assert est["coursework_and_install_min"] == pytest.approx((5 * 200 + 180) / 60, abs=0.05)
    # sweep: 9 seeds x 5 chapters x 160 s, two at a time
    assert est["sweep_min"] == pytest.approx(9 * 5 * 160 / 2 / 60, abs=0.05)
    assert est["ci_min"] == pytest.approx((1200 + 1180 + 3600) / 60, abs=0.05)
    # what each of the 4 later chapters may cost per seed for CI to take 60 minutes
    allowed = ((3600 - 1200 - 1180) * 2 / 9 - 160) / 4
    assert est["claims_only_s_per_seed_allowed_per_later_chapter"] == pytest.approx(allowed, abs=0.05)


def test_a_timed_sample_of_the_sweep_sets_its_cost():
    """Two runs side by side take longer than half their time alone: the sample says how much."""
    record = {
        "machine": {"cores": 2},
        "make_test_cold": {"make_test_s": 400.0, "fixtures": {}, "test_calls_by_file_s": {}},
        "notebooks": {"claims_only": {"a": {"seconds": 100.0}}},
        "sweep_sample": {"seeds": 2, "wall_s": 130.0},  # 2 x 100 s of runs in 130 s, not 100 s
    }
    est = extrapolate(record, chapters_now=1)
    assert est["sweep_wall_s_per_claims_only_s"] == pytest.approx(0.65)
    assert est["sweep_min"] == pytest.approx(9 * 5 * 100 * 0.65 / 60, abs=0.05)
    allowed = ((3600 - 400) / 0.65 / 9 - 100) / 4
    assert est["claims_only_s_per_seed_allowed_per_later_chapter"] == pytest.approx(allowed, abs=0.05)


def test_the_room_for_later_chapters_counts_todays_chapters_once():
    """``claims_only`` already holds every notebook of today's chapters: with three chapters
    written, the two later ones share what is left of the sweep's budget."""
    record = {
        "machine": {"cores": 2},
        "make_test_cold": {"make_test_s": 300.0, "fixtures": {}, "test_calls_by_file_s": {}},
        "notebooks": {"claims_only": {"ch1": {"seconds": 90.0}, "ch2": {"seconds": 60.0}, "ch3": {"seconds": 60.0}}},
    }
    est = extrapolate(record, chapters_now=3)
    allowed = ((3600 - 300) * 2 / 9 - 210) / 2
    assert est["claims_only_s_per_seed_allowed_per_later_chapter"] == pytest.approx(allowed, abs=0.05)


def test_with_every_chapter_written_the_room_left_is_headroom():
    """At five chapters nothing is extrapolated, and no later chapter shares the room."""
    record = {
        "machine": {"cores": 2},
        "make_test_cold": {"make_test_s": 600.0, "fixtures": {"execute_notebooks_s": 300.0},
                           "test_calls_by_file_s": {}},
        "notebooks": {"claims_only": {"ch1": {"seconds": 200.0}, "ch5": {"seconds": 100.0}}},
        "sweep_sample": {"seeds": 2, "wall_s": 330.0},
    }
    est = extrapolate(record, chapters_now=5)
    assert est["make_test_cold_min"] == pytest.approx(10.0)
    assert est["sweep_min"] == pytest.approx(9 * 330 / 2 / 60, abs=0.06)  # rounded to 0.1 min
    assert est["claims_only_s_per_seed_left"] == pytest.approx((3600 - 600) / 0.55 / 9 - 300, abs=0.05)
    assert est["claims_only_s_per_seed_allowed_per_later_chapter"] is None


def test_ci_with_one_chapter_changed_sweeps_only_that_chapter_and_budgets_are_in_reference_seconds():
    from tools.benchmark import ci_scenarios

    record = {
        "machine": {"cores": 2, "speed_index": 0.5},  # half as fast as the reference machine
        "notebooks": {"claims_only": {"book/ch1/01.ipynb": {"seconds": 100.0}, "book/ch1/02.ipynb": {"seconds": 50.0},
                                      "book/ch2/01.ipynb": {"seconds": 30.0}}},
        "five_chapters_estimate": {"make_test_cold_min": 10.0, "coursework_and_install_min": 5.0,
                                   "sweep_wall_s_per_claims_only_s": 0.5},
    }
    ci = ci_scenarios(record, installs_s=60.0)
    fixed = 60 + 900
    assert ci["ci_every_notebook_swept_min"] == pytest.approx((fixed + 9 * 0.5 * 180) / 60, abs=0.06)
    assert ci["the_costliest_chapter"] == "ch1"
    assert ci["ci_one_chapter_changed_min"] == pytest.approx((fixed + 9 * 0.5 * 150) / 60, abs=0.06)
    assert ci["ci_nothing_changed_min"] == pytest.approx(fixed / 60, abs=0.06)
    # On a machine half as fast, a minute here is half a reference minute.
    assert ci["ci_every_notebook_swept_reference_min"] == pytest.approx(ci["ci_every_notebook_swept_min"] / 2,
                                                                        abs=0.11)
    assert ci["ci_one_chapter_changed_budget_reference_min"] == 40


def test_the_speed_index_is_the_reference_time_over_this_machines():
    from tools.speed_index import REFERENCE_S, normalised, speed_index

    assert speed_index(REFERENCE_S) == pytest.approx(1.0)
    assert speed_index(REFERENCE_S / 2) == pytest.approx(2.0)
    assert normalised(30.0, 2.0) == 60.0  # 30 s on a machine twice as fast: 60 reference seconds
    with pytest.raises(ValueError, match="seconds must be positive"):
        speed_index(0.0)


def test_the_learners_run_all_is_read_from_the_lab_tests_printout():
    """Every row the test printed, failed or not, judged in reference CPU seconds as the test does."""
    from tools.benchmark import lab_rows

    out = ("Run All Cells in JupyterLab: 21.5 s for 30 code cells of book/ch5/04_deepnorm.ipynb, "
           "CPU 29.3 s (kernel and workers), speed index 2.61\nF"
           "Run All Cells in JupyterLab: 3.5 s for 12 code cells of book/ch4/01_inside_the_layer.ipynb, "
           "CPU 4.0 s (kernel and workers), speed index 2.50\n.")
    rows = lab_rows(out)
    assert rows == {
        "book/ch5/04_deepnorm.ipynb": {"wall_s": 21.5, "cpu_s": 29.3, "speed_index": 2.61,
                                       "reference_cpu_s": 76.5, "over_budget": True},
        "book/ch4/01_inside_the_layer.ipynb": {"wall_s": 3.5, "cpu_s": 4.0, "speed_index": 2.5,
                                               "reference_cpu_s": 10.0, "over_budget": False},
    }
