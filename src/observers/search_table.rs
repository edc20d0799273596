//! The candidates of a search that runs while the data is fed (llm-compressor's shrink-factor
//! grid search, torchao's threshold line search), kept in the observer's state so that its
//! derivation can list them afterwards: their state holds the searched ranges only, so the search
//! cannot be run again from it.
//!
//! Recorded as the search takes its candidates in order, whether or not a derivation is asked
//! for (it is small: one row per candidate, plus every candidate of a few slices):
//! * per candidate, its error summed over the slices and how many slices it improved;
//! * for the *focus* slices (the whole tensor, or the [`FOCUS`] slices of widest raw range),
//!   every candidate's range and error.

use crate::derivation::{Candidates, Step};

/// How many slices a per-slice search lists in full: those of widest raw range.
pub const FOCUS: usize = 3;

/// One candidate as the search scored it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Its index in the schedule (`i` of `p = 1 − i/grid`, or of `t_i = r·i/steps`).
    pub index: usize,
    /// The factor it applies to each slice's range (`p`, or `i/steps`).
    pub factor: f64,
}

/// Every candidate of one slice: `[index, factor, lo, hi, error]` rows, and the index the
/// slice selected.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FocusSlice {
    pub slice: usize,
    pub rows: Vec<[f64; 5]>,
    pub selected: Option<usize>,
}

/// The [`FOCUS`] slices of widest width, widest first (the first of equal widths first), in
/// one pass: a per-group search has a million slices, which sorting took 0.1 s of.
fn widest(widths: &[f64]) -> Vec<usize> {
    let before = |a: usize, b: usize| widths[b].total_cmp(&widths[a]).then(a.cmp(&b)).is_lt();
    let mut top: Vec<usize> = Vec::with_capacity(FOCUS + 1);
    for k in 0..widths.len() {
        if top.len() == FOCUS && !before(k, top[FOCUS - 1]) {
            continue;
        }
        let at = top.partition_point(|&t| before(t, k));
        top.insert(at, k);
        top.truncate(FOCUS);
    }
    top
}

/// The candidates of one search (the last batch searched).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchTable {
    /// Slices searched.
    pub slices: usize,
    /// `[index, factor, slices improved, Σ error]` per candidate, in the order taken.
    pub rows: Vec<[f64; 4]>,
    pub focus: Vec<FocusSlice>,
}

impl SearchTable {
    /// A table for a search over slices whose raw ranges have widths `widths`: the whole
    /// tensor, or the [`FOCUS`] widest slices (first of equal widths) kept in full.
    pub fn new(widths: &[f64]) -> SearchTable {
        SearchTable {
            slices: widths.len(),
            rows: Vec::new(),
            focus: widest(widths)
                .into_iter()
                .map(|slice| FocusSlice {
                    slice,
                    ..FocusSlice::default()
                })
                .collect(),
        }
    }

    /// Candidate `c` as the search took it: each slice's `error`, its range `range(k)`, and
    /// `improved` slices.
    pub fn add(
        &mut self,
        c: Candidate,
        error: &[f32],
        range: impl Fn(usize) -> (f32, f32),
        improved: usize,
    ) {
        let total = error.iter().map(|&e| e as f64).sum::<f64>();
        self.rows
            .push([c.index as f64, c.factor, improved as f64, total]);
        for f in &mut self.focus {
            let (lo, hi) = range(f.slice);
            let e = error.get(f.slice).copied().unwrap_or(f32::NAN);
            f.rows
                .push([c.index as f64, c.factor, lo as f64, hi as f64, e as f64]);
        }
    }

    /// Record which candidate each focus slice selected (`selected[k]`, the index of slice
    /// `k`'s winner; `None`: it kept its raw range).
    pub fn select(&mut self, selected: impl Fn(usize) -> Option<usize>) {
        for f in &mut self.focus {
            f.selected = selected(f.slice);
        }
    }

    /// The derivation's tables: with one slice, every candidate with its range and error (the
    /// pick marked); with several, every candidate's summed error and how many slices it
    /// improved, then each focus slice in full. `names` are the columns' names for the index,
    /// the factor and the error; `rule` says how a slice picks.
    pub fn steps(
        &self,
        names: [&str; 3],
        rule: &str,
        source: &str,
    ) -> (Vec<Candidates>, Vec<Step>) {
        let [index, factor, error] = names;
        let full = |f: &FocusSlice| {
            let picked = f
                .selected
                .and_then(|s| f.rows.iter().position(|r| r[0] as usize == s))
                .unwrap_or(0);
            let rule = match f.selected {
                Some(_) => rule.to_string(),
                None => format!(
                    "{rule}; no candidate was selected: the raw range stayed (marked: the first)"
                ),
            };
            Candidates::new(
                &[index, factor, "min", "max", error],
                f.rows.iter().map(|r| r.to_vec()).collect(),
                picked,
                &rule,
            )
            .ranges_in(2, 3)
        };
        if self.slices == 1 {
            return (self.focus.iter().map(full).collect(), Vec::new());
        }
        let last_improving = self.rows.iter().rposition(|r| r[2] > 0.0).unwrap_or(0);
        let summary = Candidates::new(
            &[
                index,
                factor,
                "slices improved",
                &format!("Σ {error} over slices"),
            ],
            self.rows.iter().map(|r| r.to_vec()).collect(),
            last_improving,
            &format!(
                "{rule}, each slice on its own; marked: the last candidate that improved any slice"
            ),
        );
        let slices = self
            .focus
            .iter()
            .map(|f| {
                Step::new(
                    format!("Slice {} of {}, every candidate", f.slice, self.slices),
                    "one of the slices of widest raw range, searched in full",
                    source,
                )
                .value("slice", f.slice)
                .candidates(full(f))
            })
            .collect();
        (vec![summary], slices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass pick is the head of the full sort it replaced, ties and NaN included.
    #[test]
    fn the_widest_are_the_head_of_the_sort_by_width() {
        let mut state = 7u64;
        for n in [0, 1, 2, 3, 4, 17, 1000] {
            let widths: Vec<f64> = (0..n)
                .map(|k| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    match (state >> 33) % 11 {
                        0 => f64::NAN,
                        1 => -f64::NAN,
                        2 => f64::INFINITY,
                        r => (r % 4) as f64 + (k % 3) as f64,
                    }
                })
                .collect();
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| widths[b].total_cmp(&widths[a]).then(a.cmp(&b)));
            order.truncate(FOCUS);
            assert_eq!(widest(&widths), order, "{widths:?}");
        }
    }

    #[test]
    fn the_widest_slices_are_kept_in_full_and_the_pick_is_the_selected_candidate() {
        let mut t = SearchTable::new(&[1.0, 5.0, 3.0, 5.0, 0.5]);
        assert_eq!(
            t.focus.iter().map(|f| f.slice).collect::<Vec<_>>(),
            vec![1, 3, 2]
        );
        for i in 0..3 {
            let error = [1.0, 3.0 - i as f32, 2.0, 1.0 + i as f32, 0.0];
            let improved = if i < 2 { 1 } else { 0 };
            t.add(
                Candidate {
                    index: i,
                    factor: 1.0 - i as f64 / 10.0,
                },
                &error,
                |k| (-(k as f32), k as f32),
                improved,
            );
        }
        t.select(|k| Some(if k == 1 { 2 } else { 0 }));
        let (tables, slices) = t.steps(["i", "p", "error"], "first minimum", "src");
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].rows[1], vec![1.0, 0.9, 1.0, 7.0]);
        assert_eq!(tables[0].picked, 1);
        assert_eq!(slices.len(), 3);
        let first = slices[0].candidates.as_ref().unwrap();
        assert_eq!(first.rows[2], vec![2.0, 0.8, -1.0, 1.0, 1.0]);
        assert_eq!(first.picked, 2);
        // One slice: the table in full, no summary.
        let mut one = SearchTable::new(&[2.0]);
        one.add(
            Candidate {
                index: 0,
                factor: 1.0,
            },
            &[4.0],
            |_| (-2.0, 2.0),
            1,
        );
        one.select(|_| None);
        let (tables, slices) = one.steps(["i", "p", "error"], "first minimum", "src");
        assert!(slices.is_empty());
        assert_eq!(tables[0].columns, vec!["i", "p", "min", "max", "error"]);
        assert!(tables[0].rule.contains("raw range stayed"));
    }
}
