"""The dashboard at /ui in headless Chromium against a live API and worker: the key asked once,
the list and its filters, an experiment followed while its trials run, surfaces over factors
picked from the menus, a suggestion accepted, the API's 422 shown as it is, an observation
recorded on a manual target, experiments compared, and no request to another host."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect

from app.config import Settings
from app.services.api_keys import create_key, revoke_key
from client.http import Client
from tests.ui.conftest import Browse, BrowseAs, off_the_loop

pytestmark = pytest.mark.integration

CATALOG = Path(__file__).resolve().parents[2] / "experiments" / "catalog"
QUICKSTART = yaml.safe_load((CATALOG / "quickstart.yaml").read_text())  # 3 x 3, two factors
THREE_FACTORS = yaml.safe_load((CATALOG / "nodes_vs_connections.yaml").read_text())  # 18 runs
MANUAL = {
    "name": "measured by hand",
    "target": "manual",
    "factors": [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 3},
        {"name": "threads_per_client", "kind": "integer", "levels": [2, 8, 32]},
    ],
    "design": {"kind": "full_factorial", "levels": 3},
    "objective": {"response": "tps"},
}


def wait_for(client: Client, experiment_id: int, status: str, timeout: float = 60) -> dict:
    """The experiment once it has `status`."""
    deadline = time.monotonic() + timeout
    while True:
        experiment = client.experiment(experiment_id)
        if experiment["status"] == status:
            return experiment
        assert time.monotonic() < deadline, f"still {experiment['status']}: {experiment}"
        time.sleep(0.2)


def run(client: Client, spec: dict, target: str, name: str) -> dict:
    """Create an experiment on `target`, run it to completion through the worker."""
    created = client.create_experiment(spec | {"target": target, "name": name})
    client.start(created["id"])
    return wait_for(client, created["id"], "completed")


@pytest.fixture(scope="module")
def finished(client: Client) -> dict:
    """The quickstart, run on the instant simulated target."""
    return run(client, QUICKSTART, "simulated", "quickstart, finished")


@pytest.fixture(scope="module")
def three_factors(client: Client) -> dict:
    """A face-centred composite design over three factors, run on the simulated target."""
    return run(client, THREE_FACTORS, "simulated", "three factors, finished")


def table_rows(browse: Browse, selector: str = "#experiments tbody tr") -> list[str]:
    return [text.strip() for text in browse.page.locator(selector).all_inner_texts()]


def test_the_key_is_asked_once_and_the_list_filters_by_status_and_target(
    browse_without_key: Browse,
    browse_as: BrowseAs,
    client: Client,
    finished: dict,
    settings: Settings,
):
    planned = client.create_experiment(MANUAL | {"name": "planned by hand"})
    browse = browse_without_key
    page = browse.page
    browse.open("#/")
    expect(page.locator("#key-panel")).to_be_visible()
    page.fill("#key-input", "gdoe_not-a-key")
    page.click("#key-form button")
    expect(page.locator("#key-error")).to_contain_text("not valid")
    page.fill("#key-input", client.api_key)
    page.click("#key-form button")
    table = page.locator("#experiments tbody")
    expect(table).to_contain_text(finished["name"])
    expect(table).to_contain_text("planned by hand")
    rows = table_rows(browse)
    done = next(row for row in rows if finished["name"] in row)
    assert "simulated" in done and "completed" in done and "9/9" in done and "tps" in done
    assert finished["created_at"][:10] in done
    assert any("planned by hand" in row and "manual" in row and "0/9" in row for row in rows)
    browse.shot("list")

    # The key stays for the tab: a reload asks for nothing.
    page.reload()
    expect(table).to_contain_text("planned by hand")
    expect(page.locator("#key-panel")).to_be_hidden()

    # Filters: the table holds what matches them, and only that.
    page.select_option("#filter-status", "completed")
    expect(table).not_to_contain_text("planned by hand")
    expect(table).to_contain_text(finished["name"])
    assert all("completed" in row for row in table_rows(browse))
    page.select_option("#filter-status", "")
    page.select_option("#filter-target", "manual")
    expect(table).not_to_contain_text(finished["name"])
    expect(table).to_contain_text("planned by hand")
    assert all("\tmanual\t" in row for row in table_rows(browse))
    assert "target=manual" in page.url  # the filter is in the address: a reload keeps it
    browse.shot("list-filtered")
    page.click(f"a[href='#/experiments/{planned['id']}']")
    expect(page.locator("#exp-header h1")).to_contain_text("planned by hand")
    browse.assert_stayed_home()

    # Another owner sees none of them: the API answers per key. (An owner name of its own: the
    # suite's database is shared, and other modules create experiments for their owners.)
    other = off_the_loop(create_key, settings.database_url, f"stranger-{uuid.uuid4().hex[:8]}")
    try:
        stranger = browse_as(other.token)
        stranger.open("#/")
        expect(stranger.page.locator("#experiments")).to_contain_text("No experiments")
    finally:
        off_the_loop(revoke_key, settings.database_url, str(other.key.id))


def test_an_experiment_page_follows_its_trials_while_they_run(browse: Browse, client: Client):
    created = client.create_experiment(QUICKSTART | {"target": "paced", "name": "paced quickstart"})
    client.start(created["id"])
    page = browse.page
    page.on("dialog", lambda dialog: dialog.accept())  # the cancel button asks first
    browse.open(f"#/experiments/{created['id']}")
    bar = page.locator("#progress-bar")
    expect(page.locator("#progress-text")).to_contain_text("of 9 trials done")
    page.wait_for_function(
        "() => Number(document.getElementById('progress-bar').dataset.finished) >= 1"
    )
    seen = int(bar.get_attribute("data-finished") or 0)
    assert seen < 9, "the trials finished before the page could watch them"
    expect(page.locator("#time-left")).to_contain_text("left")
    page.wait_for_function(
        f"() => Number(document.getElementById('progress-bar').dataset.finished) > {seen}"
    )
    expect(page.locator("tr.trial.status-succeeded").nth(seen)).to_be_visible()
    browse.shot("running")

    # A finished trial opens its raw output (and says when no reproducibility record was kept).
    page.locator("tr.trial.status-succeeded a.trial-link").first.click()
    expect(page.locator("#raw-output")).to_contain_text("galera-doe simulated cluster 'paced'")
    expect(page.locator("#trial-dialog")).to_contain_text("Reproducibility record")
    expect(page.locator("#trial-responses")).to_contain_text("latency_p95_ms")
    browse.shot("trial")
    page.keyboard.press("Escape")

    # Cancelling from the page stops what has not run (and frees the worker for the others).
    page.click("#cancel")
    expect(page.locator("#run-result")).to_contain_text("cancelled")
    expect(page.locator("#exp-header .badge")).to_have_text("cancelled")
    assert client.experiment(created["id"])["progress"]["cancelled"] >= 1
    browse.shot("cancelled")
    browse.assert_stayed_home()


def contour_axes(browse: Browse) -> tuple[str, str]:
    return browse.page.evaluate(
        "() => { const l = document.getElementById('surface-contour').layout;"
        " return [l.xaxis.title.text, l.yaxis.title.text]; }"
    )


def contour_z(browse: Browse) -> list:
    return browse.plot_data("surface-contour")[0]["z"]


def test_two_factors_picked_from_the_menus_and_a_slider_change_the_surface(
    browse: Browse, three_factors: dict
):
    page = browse.page
    browse.open(f"#/experiments/{three_factors['id']}?tab=surface")
    browse.wait_for_plot("surface-contour")
    x, y = page.input_value("#surface-x"), page.input_value("#surface-y")
    third = next(f["name"] for f in three_factors["factors"] if f["name"] not in (x, y))
    assert contour_axes(browse)[0].startswith(x) and contour_axes(browse)[1].startswith(y)
    names = {t["name"] for t in browse.plot_data("surface-contour")}
    assert {"runs", "optimum", "extrapolation", "constraint broken"} <= names
    before = contour_z(browse)
    browse.shot("contour")

    page.select_option("#surface-y", third)
    page.wait_for_function(
        "(name) => document.getElementById('surface-contour').layout.yaxis.title.text"
        ".startsWith(name)",
        arg=third,
    )
    after = contour_z(browse)
    assert after != before
    # The factor no longer on an axis now has a slider, at the optimum: moving it to the other
    # end of its range holds that factor there, and the surface changes.
    slider = page.locator(f"#surface-sliders input[data-factor={y}]")
    expect(slider).to_have_count(1)
    mark = page.locator("#surface-sliders .at-optimum")
    expect(mark).to_be_visible()
    page.evaluate("() => { window.drawn = document.getElementById('surface-contour').data[0].z; }")
    slider.evaluate(
        "(s) => { s.value = Number(s.value) > 0 ? '0' : s.max;"
        " s.dispatchEvent(new Event('input')); }"
    )
    expect(mark).to_be_hidden()
    page.wait_for_function(
        "() => document.getElementById('surface-contour').data[0].z !== window.drawn"
    )
    expect(page.locator("#surface-status")).not_to_contain_text("fitting")
    browse.shot("contour-moved")

    page.click("button.seg[data-view='3d']")
    browse.wait_for_plot("surface-3d")
    kinds = [t["type"] for t in browse.plot_data("surface-3d")]
    assert kinds.count("surface") == 2 and "scatter3d" in kinds
    expect(page.locator("#surface-contour")).to_be_hidden()
    browse.shot("surface-3d")
    browse.assert_stayed_home()


def test_accepting_a_suggestion_runs_a_new_trial(browse: Browse, client: Client):
    experiment = run(client, QUICKSTART, "simulated", "quickstart, to steer")
    page = browse.page
    browse.open(f"#/experiments/{experiment['id']}")
    expect(page.locator("tr.trial")).to_have_count(9)
    page.click("#suggest")
    expect(page.locator("#suggest-plan")).to_contain_text("accept them below")
    card = page.locator("#open-suggestions .suggestion").first
    expect(card).to_be_visible()
    card.locator("button.accept").click()
    expect(page.locator("#accept-result")).to_contain_text("became trial")
    expect(page.locator("tr.trial")).to_have_count(10)
    new = page.locator("tr.trial").last
    expect(new).to_contain_text("suggestion")
    # The one worker may still be finishing another test's trials: wait for it, not 5 s.
    expect(new.locator(".badge")).to_have_text("succeeded", timeout=60_000)
    browse.shot("accepted")
    assert client.trials(experiment["id"])[-1]["source"] == "suggestion"
    browse.assert_stayed_home()


def test_the_confirm_button_runs_the_answer_against_today_and_opens_with_the_sentence(
    browse: Browse, client: Client
):
    baseline = {"nodes": 1, "threads_per_client": 2}
    experiment = run(client, QUICKSTART | {"baseline": baseline}, "simulated", "to confirm")
    page = browse.page
    browse.open(f"#/experiments/{experiment['id']}")
    expect(page.locator("#baseline")).to_contain_text("nodes=1, threads_per_client=2")
    expect(page.locator("#confirmation-summary")).to_contain_text("Not confirmed")
    page.click("#confirm")
    expect(page.locator("#confirm-result")).to_contain_text("pairs queued")
    # The page follows the pairs and then opens with the sentence to paste.
    sentence = page.locator("#confirmation-sentence")
    expect(sentence).to_contain_text("than today's (95 % CI", timeout=60_000)
    browse.shot("confirmed")
    assert sentence.inner_text() == client.confirmations(experiment["id"])[0]["sentence"]
    # The analysis names today's configuration beside the answer to deploy.
    page.click("button[data-tab=analysis]")
    expect(page.locator("#analysis-baseline")).to_contain_text("Today's configuration (nodes=1")
    browse.assert_stayed_home()


def test_a_confirm_without_a_baseline_shows_why(browse: Browse, finished: dict):
    page = browse.page
    browse.open(f"#/experiments/{finished['id']}")
    expect(page.locator("#baseline")).to_contain_text("No baseline named")
    expect(page.locator("#confirm")).to_be_disabled()


def test_fresh_replicates_are_asked_for_at_the_start_and_for_the_loop(
    browse: Browse, client: Client
):
    spec = THREE_FACTORS | {"target": "simulated", "name": "fresh replicates"}
    created = client.create_experiment(spec)
    page = browse.page
    browse.open(f"#/experiments/{created['id']}")
    page.check("#start-restart-replicates")
    page.click("#start")
    expect(page.locator("#run-result")).to_contain_text("started:")
    wait_for(client, created["id"], "completed")
    # The four centre points are one configuration: the last three measure it again, fresh.
    centre = [
        t["restart_first"] for t in client.trials(created["id"]) if t["point_type"] == "centre"
    ]
    assert centre == [False, True, True, True]
    expect(page.locator("#progress-text")).to_contain_text("18 of 18 trials done")
    expect(page.locator("tr.trial", has_text="fresh")).to_have_count(3)
    browse.shot("fresh-replicates")

    page.fill("#loop-budget", "1")
    page.fill("#loop-budget-seconds", "600")
    page.check("#loop-restart-replicates")
    page.click("#optimize")
    expect(page.locator("#loop-result")).to_contain_text("budget 1 or 600 s of trial time")
    loop = client.experiment(created["id"])["optimization"]
    assert loop["restart_replicates"] is True and loop["budget_seconds"] == 600
    expect(page.locator("#loop-status")).to_contain_text("of 1 trials, ")
    expect(page.locator("#loop-status")).to_contain_text(" of 10 min 0 s of trial time")
    browse.assert_stayed_home()


def test_a_bad_budget_shows_the_apis_422_naming_the_field(browse: Browse, finished: dict):
    page = browse.page
    browse.open(f"#/experiments/{finished['id']}")
    page.fill("#loop-budget", "0")
    page.click("#optimize")
    refusal = page.locator("#loop-result .error")
    expect(refusal).to_contain_text("HTTP 422")
    expect(refusal).to_contain_text("body.budget: Input should be greater than or equal to 1")
    refusal.scroll_into_view_if_needed()
    browse.shot("budget-422")
    browse.assert_stayed_home()


def test_an_observation_recorded_on_a_manual_target_fills_its_trial(browse: Browse, client: Client):
    created = client.create_experiment(MANUAL)
    page = browse.page
    browse.open(f"#/experiments/{created['id']}")
    expect(page.locator("#start")).to_be_hidden()  # nothing runs on a manual target
    first = page.locator("tr.trial").first
    first.locator("button.link").click()
    page.fill("#observe-fields input[aria-label=tps]", "812.5")
    page.click("#observe")
    expect(page.locator("#observe-result")).to_contain_text("recorded")
    expect(first.locator(".badge")).to_have_text("succeeded")
    expect(first).to_contain_text("812.5")
    page.fill("#observe-extra", "qps=lots")
    page.click("#observe")
    refusal = page.locator("#observe-result .error")
    expect(refusal).to_contain_text("body.0.responses.qps: Input should be a valid number")
    refusal.scroll_into_view_if_needed()
    browse.shot("observed")
    browse.assert_stayed_home()


def test_every_view_loads_only_from_the_api_host(
    browse: Browse, client: Client, finished: dict, three_factors: dict
):
    page = browse.page
    browse.open("#/")
    expect(page.locator("#experiments tbody tr").first).to_be_visible()
    browse.open(f"#/experiments/{three_factors['id']}")
    expect(page.locator("tr.trial")).to_have_count(18)
    page.click("button.tab[data-tab=analysis]")
    expect(page.locator("#analysis-model")).to_contain_text("auto (")
    expect(page.locator("#explanation li").first).to_be_visible()
    expect(page.locator("#analysis-optimum")).to_contain_text("95 % prediction interval")
    on_edge = client.analysis(three_factors["id"])["optimum"]["on_edge"]
    assert on_edge  # the simulated cluster's best lies at an end of a range
    for name, end in on_edge.items():
        first_cell = page.get_by_role("cell", name=name, exact=True)
        row = page.locator("#analysis-optimum tr").filter(has=first_cell)
        expect(row).to_contain_text(f"at the {end} end of its range")
    expect(page.locator("#anova")).to_contain_text("Residual")
    browse.shot("analysis")
    page.click("button.tab[data-tab=effects]")
    browse.wait_for_plot("effects-main")
    assert {t["type"] for t in browse.plot_data("effects-pareto")} == {"bar"}
    browse.shot("effects")
    page.click("button.tab[data-tab=best]")
    browse.wait_for_plot("best-plot")
    best = next(t for t in browse.plot_data("best-plot") if t["name"] == "best so far")
    assert len(best["y"]) == 18 and best["y"] == sorted(best["y"])  # maximize: never falls
    browse.shot("best-so-far")
    page.click("button.tab[data-tab=surface]")
    page.click("button.seg[data-view='both']")
    browse.wait_for_plot("surface-3d")
    browse.wait_for_plot("surface-contour")
    browse.resize(1920, 1080)
    browse.shot("surface-both-1920")
    browse.open(f"#/compare?ids={finished['id']},{three_factors['id']}")
    expect(page.locator(".compare-column")).to_have_count(2)
    browse.wait_for_plot("compare-curves")
    browse.wait_for_plot("compare-boxes")
    browse.shot("compare-1920")
    browse.resize(1280, 800)
    browse.shot("compare-1280")
    assert any(url.endswith("/ui/vendor/plotly.min.js") for url in browse.requests)
    browse.assert_stayed_home()


def test_the_analysis_and_the_compare_view_show_one_answer_to_deploy_first(
    browse: Browse, client: Client, finished: dict, three_factors: dict
):
    # Issue 54, item 7: the answer the API gives, first, and the model's predicted optimum
    # labelled as what it is, on the experiment's analysis and in every compared column.
    page = browse.page
    answers = {e["id"]: client.analysis(e["id"])["deploy"] for e in (finished, three_factors)}
    browse.open(f"#/experiments/{three_factors['id']}")
    page.click("button.tab[data-tab=analysis]")
    deploy = page.locator("#analysis-deploy")
    expect(deploy.locator(".deploy-summary")).to_have_text(answers[three_factors["id"]]["summary"])
    before = page.evaluate(
        "() => !!(document.querySelector('#analysis-deploy').compareDocumentPosition("
        "document.querySelector('#analysis-model')) & Node.DOCUMENT_POSITION_FOLLOWING)"
    )
    assert before  # the answer comes before the model and its optimum
    for other in answers[three_factors["id"]]["alternatives"]:
        expect(deploy.locator(f"li[data-kind={other['kind']}]")).to_contain_text(other["label"])
    expect(page.locator("#optimum-label")).to_contain_text("configuration to deploy")
    expect(page.locator("#effects-legend")).to_contain_text("the number the explanation states")
    browse.shot("analysis-deploy")
    browse.open(f"#/compare?ids={finished['id']},{three_factors['id']}")
    for experiment_id, answer in answers.items():
        column = page.locator(f".compare-column[data-experiment='{experiment_id}']")
        expect(column.locator(".compare-deploy")).to_contain_text(answer["summary"])
        expect(column).to_contain_text("one measurement, not the answer")
        expect(column).to_contain_text("configuration to deploy")
    browse.shot("compare-deploy")
    browse.assert_stayed_home()
