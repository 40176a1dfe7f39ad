"""Issue 49 item 1: every file a table or report reads its numbers from (cells, floor.json, speed.json,
settings.json, results.json, reproduce.json) is covered by the folder's digests.json, written by the folder's
writer and verified by every reader (`synthformer.utils.integrity.read_recorded`). A hand edit, a cell copied
from another folder or malformed content is one line (exit 2) and changes nothing; --trust-unverified opts out."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from test_compare import TINY, compare_main, dialogue  # noqa: F401  (the dialogue fixture)

from synthformer.utils.integrity import DIGESTS, RecordError, read_recorded, record_files, trust_unverified

ARGS = ["--variants", "V,R", *TINY]


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _reportable(out: Path) -> None:
    """A fresh clone of a grid: its cells, settings, floor and speed; no run folders, no results yet."""
    (out / "results.json").unlink()
    for run in ("V", "R"):
        shutil.rmtree(out / run)


@pytest.fixture(scope="module")
def grids(dialogue, tmp_path_factory):  # noqa: F811
    """Two compares differing only in --embed_dim (32, 64), each a fresh clone (`_reportable`)."""
    root = tmp_path_factory.mktemp("grids")
    for d in ("32", "64"):
        code, _, err = compare_main("--data", dialogue, "--out", root / d, *ARGS, "--embed_dim", d)
        assert code == 0, err
        _reportable(root / d)
    return root


def _copy(grids, tmp_path) -> Path:
    out = tmp_path / "cmp"
    shutil.copytree(grids / "32", out)
    return out


def _json(file: Path, edit) -> None:
    obj = json.loads(file.read_text())
    edit(obj)
    file.write_text(json.dumps(obj, indent=2) + "\n")


def _rerun(dialogue, out, *extra):  # noqa: F811
    return compare_main("--data", dialogue, "--out", out, *ARGS, "--embed_dim", "32", *extra)


# each: (name, damage(out, other), what the one line says, re-record the digest: malformed content the digest vouches)
def _loss_digit(cell):
    cell["result"]["valid"]["loss"] = round(cell["result"]["valid"]["loss"] + 0.1, 6)


DAMAGE = {
    "cell copied from the d=64 folder": (lambda out, other: shutil.copy(other / "cells/V.json", out / "cells/V.json"),
                                         "cells/V.json: contents differ from", False),
    "a digit of a cell's validation loss": (lambda out, _: _json(out / "cells/V.json", _loss_digit),
                                            "cells/V.json: contents differ from", False),
    "a cell's loss set to 'abc'": (lambda out, _: _json(out / "cells/V.json", lambda c: c["result"]["valid"].update(
        loss="abc")), "cells/V.json: contents differ from", False),
    "floor.json's perplexity": (lambda out, _: _json(out / "floor.json", lambda f: f["row"]["metrics"].update(
        ppl=f["row"]["metrics"]["ppl"] * 0.5)), "floor.json: contents differ from", False),
    "a digit of speed.json": (lambda out, _: _json(out / "speed.json", lambda s: s["rows"]["V"][0].update(
        tokens_per_s=s["rows"]["V"][0]["tokens_per_s"] + 1)), "speed.json: contents differ from", False),
    # malformed content, even where the digest vouches for it (a buggy writer): one line, never a traceback
    "settings.json a JSON list": (lambda out, _: (out / "settings.json").write_text("[1, 2]"),
                                  "settings.json: not a JSON object (a list)", True),
    "an empty speed.json": (lambda out, _: (out / "speed.json").write_text(""), "speed.json: empty", True),
    "a cell missing valid": (lambda out, _: _json(out / "cells/V.json", lambda c: c["result"].pop("valid")),
                             "cells/V.json: result valid is missing, not an object of metrics", True),
    "a cell missing params": (lambda out, _: _json(out / "cells/R.json", lambda c: c["result"].pop("params")),
                              "cells/R.json: result params is missing, not a number", True),
    "a cell's loss 'abc' with a matching digest": (
        lambda out, _: _json(out / "cells/V.json", lambda c: c["result"]["valid"].update(loss="abc")),
        "cells/V.json: result valid loss is 'abc', not a number", True),
    "floor.json without its row": (lambda out, _: (out / "floor.json").write_text("{}"),
                                   "floor.json: lacks its row", True),
    "the digests themselves edited": (lambda out, _: (out / DIGESTS).write_text("[]"),
                                      "digests.json: not a valid digests file", False),
    "the digests removed": (lambda out, _: (out / DIGESTS).unlink(), f"has no {DIGESTS}", False),
}


def test_an_undamaged_clone_reports_without_training(grids, dialogue, tmp_path):  # noqa: F811
    out = _copy(grids, tmp_path)
    code, _, err = _rerun(dialogue, out)
    assert code == 0, err
    assert not (out / "V").exists() and (out / "results.json").exists()  # from the cells: nothing trained
    read_recorded(out, out / "results.json", "")  # the report's results are recorded too


@pytest.mark.parametrize("case", list(DAMAGE))
def test_folder_damage_is_one_line_and_changes_nothing(grids, dialogue, tmp_path, case):  # noqa: F811
    damage, said, rerecord = DAMAGE[case]
    out = _copy(grids, tmp_path)
    damage(out, grids / "64")
    if rerecord:
        record_files(out, *[p for p in out.rglob("*.json") if p.name != DIGESTS and not p.name.startswith(".")])
    before = _snapshot(out)
    code, _, err = _rerun(dialogue, out)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert said in err, err
    if not rerecord and "digests" not in case:
        assert "--trust-unverified" in err, err  # the opt-out is named
    assert _snapshot(out) == before  # nothing written, nothing trained


def test_the_d64_cell_is_refused_by_its_model_even_when_trusted(grids, dialogue, tmp_path):  # noqa: F811
    """The attack of issue 49: V's cell copied from the d=64 folder; --trust-unverified skips the digest, and
    check_cell still refuses a cell trained with another model."""
    out = _copy(grids, tmp_path)
    shutil.copy(grids / "64" / "cells/V.json", out / "cells/V.json")
    code, _, err = _rerun(dialogue, out, "--trust-unverified")
    assert code == 2 and "trained with other settings" in err and "embed_dim 64 (now 32)" in err, err


def test_trust_unverified_uses_an_edited_file_with_a_warning_and_records_it(grids, dialogue, tmp_path):  # noqa: F811
    out = _copy(grids, tmp_path)
    _json(out / "cells/V.json", _loss_digit)
    code, _, err = _rerun(dialogue, out, "--trust-unverified")  # used, with a warning
    assert code == 0, err
    read_recorded(out, out / "cells/V.json", "")  # adopted: its digest recorded


def test_reader_outside_the_cli_raises_record_error(tmp_path):
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "floor.json").write_text("{}")
    with pytest.raises(RecordError, match=f"has no {DIGESTS}.*--trust-unverified"):
        read_recorded(folder, folder / "floor.json", "delete it")
    with trust_unverified(), pytest.warns(UserWarning):
        assert read_recorded(folder, folder / "floor.json", "delete it") == "{}"
    read_recorded(folder, folder / "floor.json", "delete it")  # recorded now


def test_verify_recorded_names_the_first_damaged_file_in_any_grid_below(tmp_path):
    from synthformer.utils.integrity import verify_recorded, write_recorded_json

    for grid in ("a", "b"):
        (tmp_path / grid / "cells").mkdir(parents=True)
        for cell in ("V", "R"):
            write_recorded_json(tmp_path / grid, tmp_path / grid / "cells" / f"{cell}.json", {"loss": 1.0}, indent=None)
    verify_recorded(tmp_path)  # undamaged
    (tmp_path / "a" / "cells" / "R.json").unlink()  # deleted: trained again, not damage
    verify_recorded(tmp_path)
    (tmp_path / "b" / "cells" / "V.json").write_text('{"loss": 0.5}')
    with pytest.raises(RecordError, match=r"b/cells/V.json: contents differ from .*b/digests.json.*--trust-unverified"):
        verify_recorded(tmp_path)
    with trust_unverified():
        verify_recorded(tmp_path)  # each file is then checked where it is read


# ----------------------------------------------------------------------------- a tiny reproduction
@pytest.fixture(scope="module")
def table7(tmp_path_factory):
    from test_reproduce import reproduce

    out = tmp_path_factory.mktemp("t7") / "table7"
    code, _, err = reproduce("table7", "--budget", "smoke", "--out", out)
    assert code == 0, err
    return out


REPRODUCE_DAMAGE = {
    "sentiment/cells/V.json accuracy 0.999": (
        lambda out: _json(out / "sentiment/cells/V.json", lambda c: c["result"]["valid"].update(accuracy=0.999)),
        "sentiment/cells/V.json: contents differ from"),
    "reproduce.json edited": (lambda out: _json(out / "reproduce.json", lambda r: r.update(started="yesterday")),
                              "reproduce.json: contents differ from"),
    "topic/floor.json edited": (lambda out: _json(out / "topic/floor.json", lambda f: f["row"]["metrics"].update(
        accuracy=99.0)), "topic/floor.json: contents differ from"),
    "sentiment/settings.json a list": (lambda out: (out / "sentiment/settings.json").write_text("[]"),
                                       "sentiment/settings.json: contents differ from"),
    "topic/speed.json empty": (lambda out: (out / "topic/speed.json").write_text(""), "topic/speed.json"),
    "sentiment/results.json edited": (lambda out: _json(out / "sentiment/results.json",
                                                        lambda r: r["variants"][0]["metrics"].update(accuracy=99.9)),
                                      "sentiment/results.json: contents differ from"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(REPRODUCE_DAMAGE))
def test_reproduce_folder_damage_is_one_line_and_changes_nothing(table7, tmp_path, case):
    from test_reproduce import reproduce

    damage, said = REPRODUCE_DAMAGE[case]
    out = tmp_path / "table7"
    shutil.copytree(table7, out)
    (out / "results.json").unlink()  # the report is written again from the grids ...
    for grid in ("sentiment", "topic"):
        if "results.json" not in case:  # ... and the grids' from their cells (the committed grids hold no results)
            (out / grid / "results.json").unlink()
        for run in out.glob(f"{grid}/*/"):
            if (run / "config.json").exists():
                shutil.rmtree(run)  # a fresh clone: cells only
    damage(out)
    before = _snapshot(out)
    code, _, err = reproduce("table7", "--budget", "smoke", "--out", out)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert said in err and "--trust-unverified" in err, err
    assert _snapshot(out) == before
