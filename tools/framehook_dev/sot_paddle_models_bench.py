"""Time a training step of Paddle's dygraph_to_static models, to_static on framehook's translator and Paddle's.

    python -m framehook_dev.sot_paddle_models_bench                 # 3.10 and 3.13 (paddlepaddle's wheels)
    python -m framehook_dev.sot_paddle_models_bench --report-only   # the table from the saved results
    python -m framehook_dev.sot_paddle_models_bench --instructions  # the hot step counted by callgrind

For each interpreter: the venv of framehook_dev.matrix (which has the paddlepaddle wheel on
3.10 and 3.13) with a release build of framehook, then one run of benches/sot_paddle_models.py
there, which writes benches/results/sot-paddle-models-<name>.json. Ends with the table over the
interpreters with results, printed and written between its markers in docs/performance.md.
With ``--instructions`` the hot step's instructions are counted instead (the script under
callgrind; valgrind installed on first need): its own results
(``sot-paddle-models-instructions-<name>.json``) and table.

The models come from Paddle's test/dygraph_to_static files in ``--tests``
(``$FRAMEHOOK_CACHE/paddle-test-dy2st``), never committed; without them this says SKIPPED and
exits 0, as framehook_dev.paddle_sot_suite does.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from . import bench, matrix, provision
from .provision import CACHE
from .sot_paddle_bench import PADDLE_INTERPRETERS

SCRIPT = matrix.REPO / "benches" / "sot_paddle_models.py"
TABLE_START = "<!-- sot-paddle-models-table-start -->"
TABLE_END = "<!-- sot-paddle-models-table-end -->"
INSTRUCTIONS_START = "<!-- sot-paddle-models-instructions-start -->"
INSTRUCTIONS_END = "<!-- sot-paddle-models-instructions-end -->"
DEFAULT_TESTS = CACHE / "paddle-test-dy2st"
# The files the script imports the models from (and what they import in turn).
MODEL_FILES = ["test_mnist.py", "test_resnet.py", "bert_dygraph_model.py", "bert_utils.py",
               "transformer_dygraph_model.py"]


def markdown_table(reports: dict[str, dict[str, Any]]) -> str:
    lines = ["Release builds of framehook, `paddlepaddle` CPU wheel; one training step (forward, loss, backward, "
             "optimizer step) in ms. Hot: the minimum of wall time over the repeats (median in parentheses), the "
             "three copies interleaved in one process; beside it, the ratio of the hot steps' CPU time (the "
             "process's, which leaves out what other processes took on a shared machine). First: the first step "
             "of a new `to_static` model, translation and static program build included (median of three new "
             "models). Paddle's SOT runs on framehook's eval-frame functions; both translators as users get "
             "them (`MIN_GRAPH_SIZE` unset). Breaks: Paddle's as `framehook_dev.paddle_sot_suite` counts them, "
             "framehook's graph breaks and fallbacks. Same as eager: the first losses (and, after a dash, the "
             "parameters and buffers after those steps) against eager's. Targets per model: hot step no slower "
             "than Paddle SOT's, first step ≤ 0.5x Paddle SOT's, no more graph breaks.", "",
             "| interpreter | model | eager hot | Paddle SOT hot | framehook hot | ratio | ratio, CPU time | "
             "Paddle SOT first | framehook first | ratio | breaks Paddle SOT / framehook | "
             "same as eager, Paddle SOT / framehook |",
             "| --- | --- |" + " ---: |" * 9 + " --- |"]
    for name, report in reports.items():
        for model, result in report["models"].items():
            hot, median, first = result["hot_step_ms"], result["median_step_ms"], result["first_step_ms"]
            cpu = result["hot_step_cpu_ms"]
            same = " / ".join(agreement(result["checks"][mode]) for mode in ("paddle_sot", "framehook"))
            lines.append(
                f"| {name} | {model} | {hot['eager']:.2f} ({median['eager']:.2f}) | {hot['paddle_sot']:.2f} "
                f"({median['paddle_sot']:.2f}) | {hot['framehook']:.2f} ({median['framehook']:.2f}) | "
                f"{hot['framehook'] / hot['paddle_sot']:.2f} | {cpu['framehook'] / cpu['paddle_sot']:.2f} | "
                f"{first['paddle_sot']:.0f} | {first['framehook']:.0f} | "
                f"{first['framehook'] / first['paddle_sot']:.2f} | {result['breaks']['paddle_sot']} / "
                f"{result['breaks']['framehook']} | {same} |")
    lines.append("")
    for name, report in reports.items():
        configs = "; ".join(f"{model}: {result['config']}, framehook's graphs: {graph_runs(result)}"
                            for model, result in report["models"].items())
        missed = [f"{check['target']} ({check['value']:.2f})" for check in report["targets"] if not check["met"]]
        lines.append(f"- {name} (Python {report['python']}, paddle {report['paddle']}, load "
                     f"{report['loadavg'][0]:.1f}; {configs}): "
                     + ("every target met" if not missed else "**missed**: " + "; ".join(missed)))
    return "\n".join(lines)


def instructions_table(reports: dict[str, dict[str, Any]]) -> str:
    lines = ["Release builds of framehook, `paddlepaddle` CPU wheel; million instructions per training step, "
             "counted by callgrind on the main thread only (Paddle's worker threads spin for as long as they are "
             "left to), the copies counted in turn in one process, each first in turn; minimum and median over "
             "the rounds. The target: framehook's hot step no more instructions than Paddle SOT's (medians).", "",
             "| interpreter | model | eager | Paddle SOT | framehook | framehook / Paddle SOT | "
             "breaks Paddle SOT / framehook |",
             "| --- | --- |" + " ---: |" * 5]
    for name, report in reports.items():
        for model, result in report["models"].items():
            low, middle = result["min_instructions"], result["median_instructions"]
            cells = " | ".join(f"{low[mode] / 1e6:,.2f} ({middle[mode] / 1e6:,.2f})" for mode in
                               ("eager", "paddle_sot", "framehook"))
            lines.append(f"| {name} | {model} | {cells} | {middle['framehook'] / middle['paddle_sot']:.4f} | "
                         f"{result['breaks']['paddle_sot']} / {result['breaks']['framehook']} |")
    lines.append("")
    for name, report in reports.items():
        options = report["options"]
        configs = "; ".join(f"{model}: {result['config']}, framehook's graphs: {graph_runs(result)}"
                            for model, result in report["models"].items())
        missed = [f"{check['target']} ({check['value']:.4f})" for check in report["targets"] if not check["met"]]
        lines.append(f"- {name} (Python {report['python']}, paddle {report['paddle']}; {options['warm_steps']} "
                     f"warm steps per copy, then {options['rounds']} rounds of {options['count_steps']} counted "
                     f"steps; {configs}): "
                     + ("every target met" if not missed else "**missed**: " + "; ".join(missed)))
    return "\n".join(lines)


def graph_runs(result: dict[str, Any]) -> str:
    """How framehook's cost model runs a model's graphs ("75 operations, run as its program")."""
    return ", ".join(f"{graph['operations']} operations, run {graph['runs']}" for graph in result["framehook_graphs"])


def agreement(check: dict[str, Any]) -> str:
    """"yes" when the losses and the state after them agree with eager; what differs otherwise."""
    losses = "yes" if check["same_losses"] else "**losses differ**"
    differing = check["state_differs"]
    if not differing:
        return losses
    return f"{losses} - **{len(differing)} state entries differ** ({', '.join(differing[:2])})"


def main(argv: Optional[Sequence[str]] = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if "--only" not in arguments:
        arguments = ["--only", PADDLE_INTERPRETERS, *arguments]
    tests = tests_dir(arguments)
    missing = [name for name in MODEL_FILES if not (tests / name).is_file()]
    if missing and "--report-only" not in arguments:
        print(f"sot_paddle_models_bench: SKIPPED: no {', '.join(missing)} in {tests} (Paddle's "
              "test/dygraph_to_static files, never committed; fetch them there)")
        return 0
    if "--instructions" in arguments:
        return bench.script_bench_main(arguments, description=__doc__.splitlines()[0], script=SCRIPT,
                                       prefix="sot-paddle-models-instructions",
                                       markers=(INSTRUCTIONS_START, INSTRUCTIONS_END), tables=instructions_table,
                                       add_options=add_options, script_options=script_options,
                                       prepare=prepared_with_valgrind)
    return bench.script_bench_main(arguments, description=__doc__.splitlines()[0], script=SCRIPT,
                                   prefix="sot-paddle-models", markers=(TABLE_START, TABLE_END),
                                   tables=markdown_table, add_options=add_options, script_options=script_options)


def prepared_with_valgrind(name: str, args: Any) -> matrix.Target:
    provision.ensure_valgrind(matrix.resolve(name).in_sid)
    return bench.prepared(name, args)


def tests_dir(arguments: list[str]) -> Path:
    for index, argument in enumerate(arguments):
        if argument == "--tests" and index + 1 < len(arguments):
            return Path(arguments[index + 1]).expanduser()
        if argument.startswith("--tests="):
            return Path(argument.split("=", 1)[1]).expanduser()
    return DEFAULT_TESTS


def add_options(parser: Any) -> None:
    parser.add_argument("--tests", type=Path, default=DEFAULT_TESTS,
                        help=f"Paddle's test/dygraph_to_static files (default {DEFAULT_TESTS})")
    parser.add_argument("--repeats", type=int, default=15, help="batches of hot steps of each copy (default 15)")
    parser.add_argument("--first-repeats", type=int, default=3,
                        help="first steps of new copies of each model, per translator (default 3)")
    parser.add_argument("--models", default="mnist,resnet,bert", help="comma-separated (default all three)")
    parser.add_argument("--instructions", action="store_true",
                        help="count the hot step's instructions with callgrind instead of timing (tens of minutes)")
    parser.add_argument("--rounds", type=int, default=3, help="--instructions: rounds of counted steps per copy")


def script_options(args: Any, name: str) -> list[str]:
    options = ["--tests", str(args.tests), "--models", args.models]
    if args.instructions:
        return [*options, "--instructions", "--rounds", str(args.rounds)]
    return [*options, "--repeats", str(args.repeats), "--first-repeats", str(args.first_repeats)]


if __name__ == "__main__":
    sys.exit(main())
