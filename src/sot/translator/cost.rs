//! The cost model of a translated function (`sot.translate(cost_model=True)`): its calls run
//! translated only where that is faster than running the original.
//!
//! A translation's worth is the whole call's time: its guards, graphs, graph breaks and
//! resume functions against the original's bytecode, which only the call itself measures
//! (an estimate from the graph alone misses what the breaks cost, and they are most of a
//! library's 1-row call). So after its warm-up calls (the first translates), the function's
//! calls alternate between the translation and the original, timed, until each way has
//! `TRIALS` samples; the translation wins where its best time is at least 5% under the
//! original's (`TRANSLATED_AT_MOST`). The original is always exact, so the choice
//! never changes what a call computes. It is judged again after `REVIEW_FACTOR` times as
//! many calls (inputs and load change), never on a call that translated (not a hot call).

use std::time::Duration;

use parking_lot::Mutex;

/// Calls run translated, untimed, before the trials: the first translates, the next take
/// the cache (a cold cache's misses are not the translation's cost).
const WARM_CALLS: u64 = 2;
/// Timed calls each way before choosing.
const TRIALS: u32 = 5;
/// A choice made at call n is judged again at call n * REVIEW_FACTOR.
const REVIEW_FACTOR: u64 = 16;
/// The translation is chosen where its best time is at most this share of the original's,
/// in percent: within a few percent the trials cannot tell them apart (a busy machine, a
/// cold cache), and the original, exact by definition, is then the safe choice.
const TRANSLATED_AT_MOST: u128 = 95;

/// Where the cost model stands (`SotStats.cost_model`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Choice {
    Judging,
    Translated,
    Original,
}

impl Choice {
    pub fn name(self) -> &'static str {
        match self {
            Choice::Judging => "judging",
            Choice::Translated => "translated",
            Choice::Original => "original",
        }
    }
}

/// How one call runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Route {
    Translated,
    Original,
    /// A trial: run that way and report the time (`CostModel::timed`).
    TimeTranslated,
    TimeOriginal,
}

impl Route {
    pub fn translated(self) -> bool {
        matches!(self, Route::Translated | Route::TimeTranslated)
    }

    pub fn timed(self) -> bool {
        matches!(self, Route::TimeTranslated | Route::TimeOriginal)
    }
}

/// The best time of one way's trials.
#[derive(Default, Clone, Copy)]
struct Best {
    samples: u32,
    time: Option<Duration>,
}

impl Best {
    fn add(&mut self, elapsed: Duration) {
        self.samples += 1;
        self.time = Some(self.time.map_or(elapsed, |t| t.min(elapsed)));
    }
}

struct State {
    calls: u64,
    choice: Choice,
    translated: Best,
    original: Best,
    review_at: u64,
    runs_original: u64,
}

pub struct CostModel {
    state: Mutex<State>,
}

impl Default for CostModel {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                calls: 0,
                choice: Choice::Judging,
                translated: Best::default(),
                original: Best::default(),
                review_at: u64::MAX,
                runs_original: 0,
            }),
        }
    }
}

impl CostModel {
    /// How the next call runs.
    pub fn route(&self) -> Route {
        let mut state = self.state.lock();
        state.calls += 1;
        if state.calls >= state.review_at {
            state.choice = Choice::Judging;
            state.translated = Best::default();
            state.original = Best::default();
            state.review_at = u64::MAX;
        }
        let route = match state.choice {
            _ if state.calls <= WARM_CALLS => Route::Translated,
            Choice::Translated => Route::Translated,
            Choice::Original => Route::Original,
            Choice::Judging if state.original.samples <= state.translated.samples => Route::TimeOriginal,
            Choice::Judging => Route::TimeTranslated,
        };
        if !route.translated() {
            state.runs_original += 1;
        }
        route
    }

    /// A trial's time; `hot`: the call made no translation (else it is no sample).
    pub fn timed(&self, route: Route, elapsed: Duration, hot: bool) {
        let mut state = self.state.lock();
        if state.choice != Choice::Judging {
            return;
        }
        match route {
            Route::TimeTranslated if hot => state.translated.add(elapsed),
            Route::TimeOriginal => state.original.add(elapsed),
            _ => return,
        }
        if state.translated.samples >= TRIALS && state.original.samples >= TRIALS {
            let nanos = |best: Best| best.time.map_or(u128::MAX, |t| t.as_nanos());
            let faster = nanos(state.translated).saturating_mul(100)
                <= nanos(state.original).saturating_mul(TRANSLATED_AT_MOST);
            state.choice = if faster {
                Choice::Translated
            } else {
                Choice::Original
            };
            state.review_at = state.calls.saturating_mul(REVIEW_FACTOR);
        }
    }

    pub fn choice(&self) -> Choice {
        self.state.lock().choice
    }

    /// Calls that ran the original by the cost model's choice (trials included).
    pub fn runs_original(&self) -> u64 {
        self.state.lock().runs_original
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(model: &CostModel, translated: Duration, original: Duration) -> Vec<Route> {
        let mut routes = Vec::new();
        while model.choice() == Choice::Judging {
            let route = model.route();
            routes.push(route);
            if route.timed() {
                let elapsed = if route.translated() { translated } else { original };
                model.timed(route, elapsed, true);
            }
        }
        routes
    }

    #[test]
    fn warm_calls_run_translated_then_trials_alternate_and_the_faster_wins() {
        let model = CostModel::default();
        let routes = judge(&model, Duration::from_micros(30), Duration::from_micros(10));
        assert_eq!(&routes[..2], &[Route::Translated, Route::Translated]);
        assert_eq!(&routes[2..4], &[Route::TimeOriginal, Route::TimeTranslated]);
        assert_eq!(routes.len() as u32, 2 + 2 * TRIALS);
        assert_eq!(model.choice(), Choice::Original);
        assert_eq!(model.route(), Route::Original);
        assert_eq!(model.runs_original(), u64::from(TRIALS) + 1);

        let model = CostModel::default();
        judge(&model, Duration::from_micros(10), Duration::from_micros(30));
        assert_eq!(model.choice(), Choice::Translated);
        assert_eq!(model.route(), Route::Translated);
    }

    #[test]
    fn a_translation_within_the_margin_of_the_original_is_not_chosen() {
        let model = CostModel::default();
        judge(&model, Duration::from_micros(97), Duration::from_micros(100));
        assert_eq!(model.choice(), Choice::Original);
        let model = CostModel::default();
        judge(&model, Duration::from_micros(95), Duration::from_micros(100));
        assert_eq!(model.choice(), Choice::Translated);
    }

    #[test]
    fn a_call_that_translated_is_no_sample() {
        let model = CostModel::default();
        model.route();
        model.route();
        assert_eq!(model.route(), Route::TimeOriginal);
        model.timed(Route::TimeOriginal, Duration::from_micros(10), true);
        assert_eq!(model.route(), Route::TimeTranslated);
        model.timed(Route::TimeTranslated, Duration::from_millis(20), false);
        // Still owed a translated sample.
        assert_eq!(model.route(), Route::TimeTranslated);
    }

    #[test]
    fn the_choice_is_judged_again_after_review_factor_times_the_calls() {
        let model = CostModel::default();
        judge(&model, Duration::from_micros(30), Duration::from_micros(10));
        let decided_at = 2 + 2 * u64::from(TRIALS);
        for _ in decided_at + 1..decided_at * REVIEW_FACTOR {
            assert_eq!(model.route(), Route::Original);
        }
        assert!(model.route().timed());
        assert_eq!(model.choice(), Choice::Judging);
    }
}
