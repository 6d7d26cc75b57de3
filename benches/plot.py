"""One PNG chart per interpreter from framehook_dev.bench's summaries (run with matplotlib).

    python benches/plot.py benches/results/3.12.json [...]   # writes benches/results/3.12.png
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CONFIGS = "bcdefghi"


def chart(path: Path) -> Path:
    summary = json.loads(path.read_text())
    workloads = list(summary["workloads"])
    labels = [f"({c}) {summary['configs'][c]['label']}" for c in CONFIGS if c in summary["configs"]]
    figure, axes = plt.subplots(figsize=(11, 5.5))
    width = 0.8 / len(workloads)
    for index, workload in enumerate(workloads):
        rows = summary["workloads"][workload]["configs"]
        values = [rows[c]["added_ns_per_call"] for c in CONFIGS if c in summary["configs"]]
        frames = summary["workloads"][workload]["frames_per_iteration"]
        errors = [rows[c]["stdev_pct"] / 100 * rows[c]["median_s"] / frames * 1e9
                  for c in CONFIGS if c in summary["configs"]]
        positions = [i + (index - (len(workloads) - 1) / 2) * width for i in range(len(labels))]
        axes.bar(positions, values, width, yerr=errors, capsize=2, label=workload)
    floor = summary["configs"]["b"]["added_ns_per_call"]
    axes.axhline(floor, color="grey", linestyle="--", linewidth=1, label="floor (b), mean")
    axes.set_xticks(range(len(labels)))
    axes.set_xticklabels(labels, rotation=25, ha="right", fontsize=8)
    axes.set_ylabel("ns added per call over (a) framehook not imported")
    axes.set_title(f"framehook overhead per call, CPython {summary['version']} ({summary['interpreter']}); "
                   "error bars: std dev")
    axes.legend(fontsize=8)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    out = path.with_suffix(".png")
    figure.savefig(out, dpi=90)
    plt.close(figure)
    return out


def main() -> None:
    for argument in sys.argv[1:]:
        print(f"[bench] chart {chart(Path(argument))}", file=sys.stderr)


if __name__ == "__main__":
    main()
