"""scikit-learn's inference paths through SOT, against eager (a child of ``framehook_dev.sot_suites``).

    python -m framehook_dev.sot_sklearn --out RESULT.json [--trace sklearn]

Fits estimators and pipelines on fixed seeded data, then calls ``predict``,
``predict_proba``, ``transform`` and ``decision_function`` (those each has) on 1-row and
32-row inputs, eagerly and translated (``sot.translate(bound_method,
trace_modules=("sklearn",))``) twice: the first call translates, the second takes the cache.
Each translated result must equal the eager one exactly: same type, dtype, shape and values
(NaN where NaN); otherwise the call reports the largest absolute difference. Per call: the
outcome, own_frame, translations, graphs, operations, breaks with their most frequent
reasons, fallbacks, and the cached call's time against eager's.

The result file is rewritten after every call, naming the call then running, so that a crash
or a hang leaves what was done (the parent reports the running call as lost).
"""

from __future__ import annotations

import argparse
import collections
import faulthandler
import json
import sys
import time
import warnings
from typing import Any, Callable, Optional

METHODS = ("predict", "predict_proba", "decision_function", "transform")
ROWS = (1, 32)
CALL_TIMEOUT_S = 300.0


def estimators(seed: int = 0) -> tuple[list[tuple[str, Any]], Any]:
    """The fitted estimators (name, estimator) and the inputs to call them on."""
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import PCA
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(seed)
    features = rng.normal(size=(240, 6))
    features[:, 5] = rng.integers(0, 3, size=240)  # a categorical column (0, 1, 2)
    labels = (features[:, 0] + 0.5 * features[:, 1] - features[:, 5] * 0.3 > 0).astype(int)
    labels3 = np.digitize(features[:, 2] + features[:, 0], [-0.5, 0.5])  # three classes
    target = features @ np.array([1.0, -2.0, 0.5, 0.0, 3.0, 1.5]) + rng.normal(scale=0.1, size=240)
    train, inputs = features[:200], features[200:]
    categorical = ColumnTransformer([("onehot", OneHotEncoder(handle_unknown="ignore"), [5]),
                                     ("scale", StandardScaler(), [0, 1, 2, 3, 4])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the small models
        fitted = [
            ("LogisticRegression", LogisticRegression(max_iter=500).fit(train, labels[:200])),
            ("LogisticRegression(3 classes)", LogisticRegression(max_iter=500).fit(train, labels3[:200])),
            ("MLPClassifier", MLPClassifier(hidden_layer_sizes=(16,), max_iter=300, random_state=seed)
             .fit(train, labels[:200])),
            ("StandardScaler", StandardScaler().fit(train)),
            ("PCA", PCA(n_components=3, random_state=seed).fit(train)),
            ("RandomForestClassifier", RandomForestClassifier(n_estimators=10, random_state=seed)
             .fit(train, labels[:200])),
            ("KNeighborsClassifier", KNeighborsClassifier(n_neighbors=5).fit(train, labels3[:200])),
            ("SVC(probability=True)", SVC(probability=True, random_state=seed).fit(train, labels[:200])),
            ("GaussianNB", GaussianNB().fit(train, labels3[:200])),
            ("Pipeline(StandardScaler, LogisticRegression)",
             make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(train, labels[:200])),
            ("DecisionTreeRegressor", DecisionTreeRegressor(max_depth=5, random_state=seed).fit(train, target[:200])),
            ("Ridge", Ridge(alpha=1.0).fit(train, target[:200])),
            ("KMeans", KMeans(n_clusters=3, n_init=3, random_state=seed).fit(train)),
            ("Pipeline(ColumnTransformer(OneHotEncoder, StandardScaler), LogisticRegression)",
             Pipeline([("columns", categorical), ("model", LogisticRegression(max_iter=500))])
             .fit(train, labels[:200])),
        ]
    return fitted, inputs


def same(eager: Any, translated: Any) -> tuple[bool, str]:
    """Whether two results are exactly equal (type, dtype, shape, values); else why not."""
    import numpy as np

    if type(eager) is not type(translated):
        return False, f"type {type(translated).__name__}, eagerly {type(eager).__name__}"
    if isinstance(eager, np.ndarray):
        if eager.dtype != translated.dtype:
            return False, f"dtype {translated.dtype}, eagerly {eager.dtype}"
        if eager.shape != translated.shape:
            return False, f"shape {translated.shape}, eagerly {eager.shape}"
        if np.array_equal(eager, translated, equal_nan=eager.dtype.kind in "fc"):
            return True, ""
        if eager.dtype.kind in "fciub":
            difference = np.max(np.abs(eager.astype(np.float64) - translated.astype(np.float64)))
            return False, f"values differ: max abs diff {difference:.3g}"
        return False, "values differ"
    return (True, "") if eager == translated else (False, f"{translated!r}, eagerly {eager!r}")


def best_time(function: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def first_line(text: str) -> str:
    lines = [line for line in str(text).splitlines() if line.strip()]
    return (lines[0] if lines else "")[:200]


def run_call(sot: Any, trace: tuple[str, ...], name: str, estimator: Any, method: str, data: Any) -> dict[str, Any]:
    bound = getattr(estimator, method)
    record: dict[str, Any] = {"estimator": name, "method": method, "rows": int(data.shape[0])}
    eager = bound(data)
    record["eager_s"] = best_time(lambda: bound(data))
    fast = sot.translate(bound, trace_modules=trace, cost_model=False)
    outcomes = []
    for attempt in ("first", "cached"):
        started = time.perf_counter()
        try:
            translated = fast(data)
        except Exception as error:  # the translated call raised where eager returned: report it
            record[f"{attempt}_s"] = time.perf_counter() - started
            outcomes.append(("raised", f"{attempt} call: {type(error).__name__}: {first_line(str(error))}"))
            continue
        record[f"{attempt}_s"] = time.perf_counter() - started
        equal, why = same(eager, translated)
        outcomes.append(("equal", "") if equal else ("differs", f"{attempt} call: {why}"))
    bad = [outcome for outcome in outcomes if outcome[0] != "equal"]
    record["outcome"], record["detail"] = bad[0] if bad else ("equal", "")
    stats = sot.stats(fast)
    reasons = collections.Counter(first_line(b.reason) for b in stats.graph_breaks)
    record.update(own_frame=stats.own_frame, translations=stats.translations, cache_hits=stats.cache_hits,
                  graphs=stats.graphs, ops=stats.ops_captured, breaks=len(stats.graph_breaks),
                  top_breaks=reasons.most_common(5), fallbacks=len(stats.fallbacks),
                  fallback_reasons=[first_line(f.reason) for f in stats.fallbacks[:5]])
    if record["outcome"] == "equal" and record["eager_s"] > 0:
        record["time_ratio"] = round(record["cached_s"] / record["eager_s"], 2)
    return record


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--trace", default="sklearn")
    args = parser.parse_args(argv)
    faulthandler.enable()
    import numpy as np
    import sklearn

    from framehook import sot

    trace = tuple(name for name in args.trace.split(",") if name)
    result: dict[str, Any] = {"version": sklearn.__version__, "numpy": np.__version__, "calls": [], "running": None}

    def save() -> None:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=1)

    fitted, inputs = estimators()
    for name, estimator in fitted:
        for method in METHODS:
            if not hasattr(estimator, method):
                continue
            for rows in ROWS:
                result["running"] = f"{name}.{method}[{rows} rows]"
                save()
                faulthandler.dump_traceback_later(CALL_TIMEOUT_S, exit=True)
                result["calls"].append(run_call(sot, trace, name, estimator, method, inputs[:rows]))
                faulthandler.cancel_dump_traceback_later()
                print(f"{name}.{method}[{rows}]: {result['calls'][-1]['outcome']}", flush=True)
    result["running"] = None
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
