"""The index of a folder of reproductions (`synthformer reproduce --index DIR` -> DIR/README.md): every
claim of the paper, its status in the reports found under DIR (one folder per name), and why ours
differs; names with no report are listed as not run yet."""
from __future__ import annotations

import json
from pathlib import Path

from ..evidence import crosstask
from ..evidence.paper.claims import CLAIMS
from ..evidence.tables import markdown_table
from .common import NOT_RUN, ReproduceError, is_open, open_reason, short_finding, status_counts
from ..utils.integrity import atomic_write_text, read_recorded_json


def _reports(root: Path) -> dict:
    """{name: results.json of that name} for every name-level results.json in root/*/."""
    from . import names

    found = {}
    for file in sorted(root.glob("*/results.json")):
        try:
            data = json.loads(file.read_text())
        except json.JSONDecodeError:
            continue
        if data.get("name") in names() and "claims" in data:
            found[data["name"]] = {**data, "folder": file.parent.name, "judged": _has_floor(file.parent)}
    return found


OLD_RULES = ("predates the evidence rules (no floor, no intervals, one-sided 'close'; R/FR evaluated with a "
             "stale softmax table): see NOTES.md")


def seeds_text(report: dict) -> str:
    """The seeds each variant of a report trained ("3", or "3-5" where grids differ), read from its sections'
    rows; the report's own setting ("auto", a number) when no row lists its seeds."""
    counts = sorted({len(row["seeds"]) for section in report.get("sections") or []
                     for row in section.get("rows") or [] if isinstance(row.get("seeds"), list) and row["seeds"]})
    if not counts:
        return str(report.get("seeds", "—"))
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def _has_floor(folder: Path) -> bool:
    """Whether a name's grids were judged with a floor row (reports written before the evidence rules were
    not: their statuses are kept, marked as such)."""
    for file in folder.glob("*/results.json"):
        try:
            if json.loads(file.read_text()).get("floor"):
                return True
        except (json.JSONDecodeError, UnicodeDecodeError, OSError):
            continue
    return False


def floors_text(report: dict) -> str:
    """Per grid of a name's report: V's main metric beside the floor's ("—" for reports without floors)."""
    from ..tasks.metrics import METRIC_COLUMNS

    parts = []
    for section in report.get("sections", []):
        floor, task = section.get("floor"), section.get("task")
        v = next((r for r in section.get("rows") or [] if r.get("variant") == "V"), None)
        key = "accuracy" if task == "finetune" else METRIC_COLUMNS[task][0][1] if task in METRIC_COLUMNS else None
        if not floor or key is None or v is None:  # finetune: the mean accuracy over the suite's tasks
            continue
        mine, theirs = (v.get("metrics") or {}).get(key), (floor.get("metrics") or {}).get(key)
        if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)):
            parts.append(f"{section.get('key')}: {key} {mine:.4g} vs {theirs:.4g} ({floor.get('name', 'floor')})")
    return "; ".join(parts) or "—"


def protocol_cell(report: dict) -> str:
    """Per grid of a name's report, how far it follows the protocol of issue 48: seeds trained fresh after the
    sweep (`tuning.first_seed`), the same number of sweep candidates for every variant, and intervals that pair
    the evaluation items (every seed row kept its items: the section's "paired", `common.paired`)."""
    parts = {}
    for section in report.get("sections") or []:
        tuning, rows = section.get("tuning"), section.get("rows") or []
        if not rows or "tuning" not in section:  # figures, or an average over grids: not a grid of its own
            continue
        counts = sorted({len(r["sweep"]) for r in rows if r.get("sweep")})
        found = [("fresh seeds" if tuning.get("fresh_seeds") else "seed 0 the sweep's") if tuning else "no sweep",
                 (f"{counts[0]} candidates each" if len(counts) == 1 else f"{counts[0]}-{counts[-1]} candidates")
                 if counts else "",
                 "paired items" if section.get("paired") else "unpaired items"]
        parts.setdefault(", ".join(filter(None, found)), []).append(str(section.get("key")))
    if len(parts) == 1:
        return next(iter(parts))
    return "; ".join(f"{', '.join(keys)}: {text}" for text, keys in parts.items()) or "—"


GRIDS = "grids"  # root/grids/NAME-BUDGET: reproductions in progress (reproductions/grids/.gitignore)


def interims(folder: Path, reports: dict) -> dict[Path, tuple[dict, str]]:
    """{grid folder: (its results, the report they are from)} for every grid under `folder` (root/grids) whose
    run is not published (`_published`): a grid still running gives its interim report (interim.json:
    `reproduce --interim`), a finished grid of such a run its results (table2's LM grid, finished while its MT
    grid runs)."""
    from ..evidence.grid import INTERIM

    found = {}
    for run in _runs(folder):
        if _published(run, reports):
            continue
        for grid in sorted(g for g in run.iterdir() if g.is_dir()):
            for name, report in (("results.json", "table.md"), (INTERIM, "interim.md")):
                if (grid / name).is_file():  # verified against the grid's digests.json: one line when it differs
                    found[grid] = read_recorded_json(grid, grid / name, f"rerun `synthformer reproduce --out {run} "
                                                     "--interim` (or delete it)", adopt=False), report
                    break
    return found


def _runs(folder: Path) -> list[Path]:
    """The reproduction folders under `folder` (root/grids), each with its reproduce.json."""
    return sorted(p for p in folder.glob("*/") if (p / "reproduce.json").is_file())


def _started(run: Path) -> dict:
    """A reproduction folder's reproduce.json: its name, budget and start."""
    try:
        return json.loads((run / "reproduce.json").read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}


def _published(run: Path, reports: dict) -> bool:
    """Whether the published report of the run's name and budget was written from it (created after it started)."""
    started = _started(run)
    r = reports.get(started.get("name"), {})
    return r.get("budget") == started.get("budget") and str(r.get("created", "")) >= str(started.get("started", "~"))


def grid_folders(folder: Path, reports: dict) -> list[str]:
    """One line per reproduction folder under `folder`: its finished cells per grid (with a link to the
    grid's report and its claims' statuses while the run is not published: interim.md, `reproduce --interim`,
    or table.md of a finished grid), and whether the published report of its name and budget was written
    from it."""
    out, running = [], interims(folder, reports)

    def interim(g: Path) -> str:
        if g in running:
            r, report = running[g]
            counts = status_counts(r.get("findings") or []) or "no claim judged yet"
            task = r.get("task") or r.get("kind")  # table5's suite: its kind, finetune
            floor = floors_text({"sections": [{"key": g.name, "task": task, "floor": r.get("floor"),
                                               "rows": r.get("variants")}]})
            label = "interim" if report != "table.md" else "finished"
            return (f" ([{label}]({folder.name}/{g.parent.name}/{g.name}/{report}): {counts}"
                    + (f"; {floor}" if floor != "—" else "") + ")")
        return ""
    for run in _runs(folder):
        counts = [f"{g.name} {sum(1 for _ in (g / 'cells').rglob('*.json'))} cells" + interim(g)
                  for g in sorted(run.iterdir()) if (g / "settings.json").is_file() or (g / "cells").is_dir()]
        name = _started(run).get("name")
        state = f"finished: [{name}]({name}/report.md)" if _published(run, reports) else "in progress"
        out.append(f"`{folder.name}/{run.name}` ({state}): " + (", ".join(counts) if counts else "no cell finished"))
    return out


def _interim_findings(folder: Path, reports: dict) -> dict[str, list[tuple[dict, str, str, str, str]]]:
    """{claim id: [(finding, created, grid folder relative to the index, the run's name, the grid's report)]}
    from the grids of the runs not yet published under `folder` (`interims`)."""
    found: dict[str, list] = {}
    for grid, (results, report) in interims(folder, reports).items():
        name = _started(grid.parent).get("name")
        for f in results.get("findings") or []:
            found.setdefault(f["claim"], []).append((f, str(results.get("created", "")),
                                                     f"{folder.name}/{grid.parent.name}/{grid.name}", name, report))
    return found


def _pick(candidates: list[tuple], name: str) -> tuple | None:
    """The interim finding of a claim that the index shows: one of the claim's own name's grids (table4's for a
    Table 4 claim another grid also judges), else any; the newest of those."""
    own = [c for c in candidates if c[3] == name] or candidates
    return max(own, key=lambda c: c[1]) if own else None


def _overrules(pick: tuple, report: dict, name: str) -> bool:
    """Whether a grid's finding (`_pick`) is shown instead of the claim's finding in the published report of its
    name: when that report predates the evidence rules, or the grid is the name's own and newer (the name being
    rerun). Another name's grid (table2's LM judges a Table 4 speed claim) does not overrule a judged report."""
    return not report["judged"] or (pick[3] == name and pick[1] > str(report.get("created", "")))


def all_claims() -> list[tuple[str, str, str, str]]:
    """(name, claim id, table, text) of every claim the names check, in the order of the names."""
    from . import names

    out, seen = [], set()
    for name, module in names().items():
        spec = module.SPEC
        for c in CLAIMS:
            if c.table in spec.tables and c.name not in seen:
                out.append((name, c.name, c.table, c.text))
                seen.add(c.name)
        for cid, table, text in spec.extra_claims:
            if cid not in seen:
                out.append((name, cid, table, text))
                seen.add(cid)
    return out


def write_index(root: str | Path) -> Path:
    from . import names

    root = Path(root)
    if not root.is_dir():
        raise ReproduceError(f"--index {root}: not a folder (run `synthformer reproduce NAME --publish {root}` first)")
    reports = _reports(root)
    lines = ["# Reproductions of the Synthesizer paper", "",
             "Written by `synthformer reproduce --index` from the reports in this folder. Each folder holds one "
             "name's `report.md` (our numbers beside the paper's, every claim with its status and the rule that "
             "decided it), `results.json` and figures. The paper's numbers come from full-scale TPU runs; ours "
             "from small models on small real data sets, so the claims are checked as orderings and relative gaps.",
             "", "## Names", ""]
    rows = []
    for name, module in names().items():
        spec = module.SPEC
        r = reports.get(name)
        if r:
            rows.append([f"[{name}]({r['folder']}/report.md)", spec.reproduces, r["budget"], seeds_text(r),
                         f"{r['wall_s'] / 60:.0f} min", protocol_cell(r), floors_text(r),
                         status_counts(r["claims"]) + ("" if r["judged"] else f"; {OLD_RULES}")])
        else:
            rows.append([name, spec.reproduces, NOT_RUN, "—", "—", "—", "—",
                         f"run `synthformer reproduce {name} --budget cpu --publish {root.name}`"])
    lines += [markdown_table(["name", "reproduces", "budget", "seeds", "time", "protocol", "V against the floor",
                              "claims"], rows), ""]
    progress = grid_folders(root / GRIDS, reports)
    if progress:
        lines += ["Grid folders (their finished cells are committed; the same command with `--out` on a folder "
                  "trains only the missing ones, and rebuilds a finished report without training):", ""]
        lines += [f"- {p}" for p in progress] + [""]
    lines += ["## Every claim of the paper", "",
              "A claim judged by a grid whose name is not yet published is shown from that grid: from its interim "
              "report while it runs (the variants finished so far, under the evidence rules), from its table.md "
              "once it has finished (\"grid finished\"), where that is newer than the published report or the "
              "published report predates the rules.", ""]
    claim_rows, open_rows = _claim_rows(root, reports)
    cross = crosstask.judge_reports(reports)  # the claim across tasks, on the published reports of several names
    where = ", ".join(f"{n} ({reports[n]['budget']})" for n in cross["names"]) or "not run yet"
    claim_rows.append([cross["table"], f"{cross['text']} (`{cross['claim']}`)", f"**{cross['status']}**", where,
                       _short(crosstask.detail(cross))])
    lines += [markdown_table(["table", "claim", "status", "where", "detail"], claim_rows), ""]
    lines += [crosstask.markdown(cross), ""]
    if open_rows:
        lines += ["## What would decide the open claims", "",
                  "Each claim still inconclusive or undecidable at this size, with what keeps it open: per pair left "
                  "open, the 95% half-width of its gap now and the one under which the interval would decide the "
                  "claim were the gap to hold where it is (its distance to the line it must clear; for \"undecidable\" "
                  "the band), with the seeds or evaluation items that would bring it there (each part of the "
                  "half-width scales as 1/sqrt(n)); or why it was not judged (a metric not learned). Only a guide: "
                  "gaps move as the size grows.", "",
                  markdown_table(["table", "claim", "status", "what would decide it"], open_rows), ""]
    lines += ["## Why ours differs", ""]
    for name, module in names().items():
        lines += [f"- **{name}**: {module.SPEC.differences}"]
    not_run = [n for n in names() if n not in reports]
    lines += ["", "## Not run yet", "", ", ".join(not_run) if not_run else "Every name has a report here.", ""]
    notes = root / "NOTES.md"  # hand-written reading of the results, kept across rewrites
    if notes.exists():
        lines += ["## Notes on the results (NOTES.md)", "", notes.read_text().strip(), ""]
    path = root / "README.md"
    atomic_write_text(path, "\n".join(lines))
    return path


def _claim_rows(root: Path, reports: dict) -> tuple[list, list]:
    """The index's rows of every claim (table, claim, status, where, detail), each from its published report or a
    newer grid's interim / table.md; and the open ones' (table, claim, status, what would decide it)."""
    claim_rows, open_rows = [], []
    latest = _interim_findings(root / GRIDS, reports)
    for name, cid, table, text in all_claims():
        r = reports.get(name)
        mine = next((c for c in (r or {}).get("claims", []) if c["claim"] == cid), None)
        where = f"{name} ({r['budget']})" if r else name
        pick = _pick(latest.get(cid, []), name)
        why = None
        if pick and (mine is None or _overrules(pick, r, name)):
            f, _, grid, _, report = pick
            label = "interim" if report != "table.md" else "grid finished"
            status, detail, where = f"{f['status']} ({label})", short_finding(f), f"[{grid}]({grid}/{report})"
            why = open_reason(f)
        elif mine is None:
            status, detail = (NOT_RUN, f"`synthformer reproduce {name} --budget cpu`") if r is None else ("not checked", "")
        else:
            status, detail = mine["status"], mine["detail"]
            why = mine.get("open") or ("(a report older than this column: publish it again)" if is_open(status) else None)
            if not r["judged"]:
                status = f"{status} (old rules)"
        claim_rows.append([table, f"{text} (`{cid}`)", f"**{status}**", where, _short(detail)])
        if why:
            open_rows.append([table, f"`{cid}`", status, _short(why, 600)])
    return claim_rows, open_rows


def _short(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


# Files of a reproduction worth keeping (reports, numbers, figures); run folders (weights, checkpoints)
# and generated data stay behind.
PUBLISHED = ("report.md", "results.json", "table.md", "curves.png")


def publish(run: str | Path, root: str | Path) -> Path:
    """Copy a finished reproduction's reports, results and figures from `run` to root/NAME (no weights,
    no run folders), then rewrite root/README.md. Returns the destination folder."""
    import shutil

    run, root = Path(run), Path(root)
    file = run / "results.json"
    if not file.exists():
        raise ReproduceError(f"{run} holds no finished reproduction (no results.json); run it first")
    name = json.loads(file.read_text()).get("name")
    dest = root / str(name)
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(run.iterdir()):
        if path.is_file() and (path.name in PUBLISHED or path.suffix == ".png"):
            shutil.copy2(path, dest / path.name)
        elif path.is_dir() and not (path / "config.json").exists() and path.name != "data":
            for sub in path.iterdir():
                if sub.is_file() and (sub.name in PUBLISHED or sub.suffix == ".png"):
                    (dest / path.name).mkdir(exist_ok=True)
                    shutil.copy2(sub, dest / path.name / sub.name)
    write_index(root)
    return dest
