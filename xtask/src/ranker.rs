//! `cargo xtask train-ranker --runs DIR`: fits the learned ranking (LambdaMART, hessboost)
//! on the tuning half's candidates that `cargo xtask eval --corpus --changes --out DIR`
//! wrote, calibrates its scores to probabilities (Platt scaling, same half), writes the
//! artifact the retrieval crate compiles in, and reports the test half's ranking before
//! and after on the same candidates, per question kind, macro-averaged over repositories.
//!
//! Deterministic: the same run files give the same model (files and questions are read in
//! a fixed order, hessboost is seeded and reproducible on any thread count).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use codectx_retrieval::TextQuery;
use codectx_retrieval::ranker::{
    FEATURE_NAMES, Features, Node, QuestionLayout, RankerModel, TitledTrees,
};
use hessboost::config::Monotone;
use hessboost::objective::LambdaRank;
use hessboost::prelude::*;

use crate::tuning::Split;

/// Boosting rounds, tree depth and learning rate: small trees, enough of them to use every
/// signal, few enough that the artifact stays small (the shipped trees have 8 to 62 leaves,
/// 35 on average). A two-fold cross-validation on the tuning half over 24 shapes (depth-wise
/// at other rates and rounds; leaf-wise with 7, 15 and 31 leaves) found none better than
/// this one by more than its noise (docs/benchmarks.md); none was tuned on the test half.
const ROUNDS: usize = 200;
const MAX_DEPTH: usize = 6;
const ETA: f64 = 0.05;
const SEED: u64 = 1;

/// The trees' size and learning rate: depth-wise growth to depth [`MAX_DEPTH`], or, with
/// `max_leaves`, leaf-wise growth to that many leaves (hessboost, like XGBoost, reads a
/// leaf bound only when growing leaf-wise).
#[derive(Clone, Copy, Debug)]
pub struct TreeShape {
    pub max_leaves: Option<usize>,
    pub eta: f64,
}

impl Default for TreeShape {
    fn default() -> Self {
        TreeShape {
            max_leaves: None,
            eta: ETA,
        }
    }
}

pub struct TrainRanker {
    /// The eval's run files (`run-*.jsonl`).
    pub runs: PathBuf,
    /// Where the artifact goes.
    pub out: PathBuf,
    pub corpus_pins: PathBuf,
    pub changes_pins: PathBuf,
    /// Features the model may not split on (names of [`FEATURE_NAMES`]): a model trained
    /// without them, on the same candidates, is what a new feature is measured against.
    pub without: Vec<String>,
    /// Also report a two-fold cross-validation on the tuning half; the test half is then
    /// reported only with `report_test`.
    pub cross_validate: bool,
    /// Report the test half after a cross-validation too.
    pub report_test: bool,
    /// A model to continue: its trees are kept, and new ones are boosted on its margins
    /// (the artifact holds both). Its columns must all be among the kept ones.
    pub continue_from: Option<PathBuf>,
    /// Boosting rounds (default [`ROUNDS`]).
    pub rounds: Option<usize>,
    /// Trees for titled questions ([`QuestionLayout::Titled`]), boosted after the others on
    /// those questions alone and kept apart, for them only, with their own calibration:
    /// every other question scores by the other trees, to the bit. Both stages are fitted
    /// in one run, so a cross-validation fits both on each fold.
    pub titled_rounds: Option<usize>,
    /// Leaves per tree and learning rate, for both stages.
    pub shape: TreeShape,
}

/// One question's candidates.
struct Group {
    kind: &'static str,
    repo: String,
    split: Split,
    layout: QuestionLayout,
    rows: Vec<[f32; FEATURE_NAMES.len()]>,
    labels: Vec<f32>,
    /// The score the run's ranking gave each candidate.
    scores: Vec<f32>,
}

#[derive(serde::Deserialize)]
struct RunLine {
    #[serde(default)]
    query: String,
    #[serde(default)]
    candidates: Vec<Candidate>,
}

#[derive(serde::Deserialize)]
struct Candidate {
    label: bool,
    score: f32,
    features: Features,
}

pub fn run(config: &TrainRanker) -> anyhow::Result<()> {
    let groups = read_groups(config)?;
    let tune: Vec<&Group> = groups
        .iter()
        .filter(|g| g.split == Split::Tune && g.labels.contains(&1.0))
        .collect();
    anyhow::ensure!(
        !tune.is_empty(),
        "no tuning-half question with a target among its candidates in {}",
        config.runs.display()
    );
    if let Some(unknown) = config
        .without
        .iter()
        .find(|w| !FEATURE_NAMES.contains(&w.as_str()))
    {
        anyhow::bail!("--without {unknown}: not a feature; they are {FEATURE_NAMES:?}");
    }
    // The columns the model is trained on, in this build's order.
    let kept: Vec<usize> = (0..FEATURE_NAMES.len())
        .filter(|&i| !config.without.iter().any(|w| w == FEATURE_NAMES[i]))
        .collect();
    let base = match &config.continue_from {
        Some(path) => Some(RankerModel::from_json(&std::fs::read_to_string(path)?)?),
        None => None,
    };
    if base.as_ref().is_some_and(|b| b.titled.is_some()) {
        // They were boosted on the margins of its other trees, which new trees would change.
        anyhow::bail!("the model to continue holds titled trees: continue one without them");
    }
    let rounds = config.rounds.unwrap_or(ROUNDS);
    let fit_model = |groups: &[&Group]| {
        fit_stages(
            groups,
            &kept,
            base.as_ref(),
            rounds,
            config.titled_rounds,
            config.shape,
        )
    };
    if config.cross_validate {
        cross_validate(&tune, fit_model)?;
    }
    let (model, read) = fit_model(&tune)?;
    let json = serde_json::to_string(&model)?;
    std::fs::write(&config.out, &json)?;
    println!(
        "wrote {} ({} trees, {:.1} KB; calibration slope {:.3}, intercept {:.3})",
        config.out.display(),
        model.trees.len(),
        json.len() as f64 / 1024.0,
        model.slope,
        model.intercept
    );
    if let Some(titled) = &model.titled {
        println!(
            "  and {} trees for titled questions (calibration slope {:.3}, intercept {:.3})",
            titled.trees.len(),
            titled.slope,
            titled.intercept
        );
    }
    if config.cross_validate && !config.report_test {
        // A choice made on the folds is read on the test half once, for the choice made:
        // not printed beside every candidate setting.
        println!("test half not read (--cross-validate): add --report-test for the choice made");
        return Ok(());
    }
    println!("test half, same candidates (A@1 / any@10 / MRR), macro over repositories:");
    let test: Vec<&Group> = groups.iter().filter(|g| g.split == Split::Test).collect();
    report(&test, &read);
    Ok(())
}

/// Boosts `rounds` trees on `groups` over the `kept` columns (splits numbered in `kept`'s
/// order), on `base`'s margins when there is one; with how they were trained.
fn boost(
    groups: &[&Group],
    kept: &[usize],
    base: Option<&RankerModel>,
    rounds: usize,
    shape: TreeShape,
) -> anyhow::Result<(String, Vec<Vec<Node>>)> {
    let TreeShape { max_leaves, eta } = shape;
    let n_cols = kept.len();
    let x: Vec<f32> = groups
        .iter()
        .flat_map(|g| g.rows.iter().flat_map(|row| kept.iter().map(|&i| row[i])))
        .collect();
    let y: Vec<f32> = groups
        .iter()
        .flat_map(|g| g.labels.iter().copied())
        .collect();
    let sizes: Vec<usize> = groups.iter().map(|g| g.labels.len()).collect();
    let n_rows = y.len();
    println!(
        "training on {} questions, {} candidates, {} targets, {n_cols} features",
        groups.len(),
        n_rows,
        y.iter().filter(|&&l| l > 0.0).count()
    );
    let mut dtrain = DMatrix::from_dense(&x, n_rows, n_cols)?
        .with_labels(&y)?
        .with_group_sizes(&sizes)?;
    if let Some(base) = base {
        let margins: Vec<f32> = groups
            .iter()
            .flat_map(|g| {
                g.rows
                    .iter()
                    .map(|row| base.margin(row, QuestionLayout::Line))
            })
            .collect();
        dtrain = dtrain.with_base_margin(&margins)?;
    }
    let builder = TrainingParams::builder().objective(Objective::RankNdcg(LambdaRank::default()));
    let builder = match max_leaves {
        Some(leaves) => builder
            .grow_policy(hessboost::config::GrowPolicy::LossGuide)
            .max_leaves(leaves),
        None => builder.max_depth(MAX_DEPTH),
    };
    let params = builder
        .eta(eta)
        .min_child_weight(1.0)
        .seed(SEED)
        .monotone_constraints(kept.iter().map(|&i| monotone(FEATURE_NAMES[i])).collect())
        .build()?;
    let boosted = train(&params, &dtrain, rounds)?;
    let size = match max_leaves {
        Some(leaves) => format!("of at most {leaves} leaves"),
        None => format!("of depth {MAX_DEPTH}"),
    };
    let trained_on = format!(
        "LambdaMART (hessboost, rank:ndcg), {rounds} trees {size}, eta {eta}, seed {SEED}, \
         on the tuning half: {} questions, {n_rows} candidates",
        groups.len()
    );
    Ok((
        trained_on,
        boosted.trees().iter().map(convert_tree).collect(),
    ))
}

/// Fits a model on `groups` over the `kept` columns: the artifact (splits numbered in
/// `kept`'s order, the names it was trained on) and the product's reading of it (splits
/// renumbered to this build's rows), both calibrated.
///
/// With `base`, its trees come first and the `rounds` new ones are boosted on its margins.
fn fit(
    groups: &[&Group],
    kept: &[usize],
    base: Option<&RankerModel>,
    rounds: usize,
    shape: TreeShape,
) -> anyhow::Result<(RankerModel, RankerModel)> {
    let (mut trained_on, boosted) = boost(groups, kept, base, rounds, shape)?;
    let mut trees = match base {
        Some(base) => {
            trained_on = format!(
                "{} trees of [{}], then {trained_on}",
                base.trees.len(),
                base.trained_on
            );
            in_columns(&base.trees, kept)?
        }
        None => Vec::new(),
    };
    trees.extend(boosted);
    let mut model = RankerModel {
        trained_on,
        features: kept.iter().map(|&i| FEATURE_NAMES[i].to_string()).collect(),
        slope: 1.0,
        intercept: 0.0,
        trees,
        titled: None,
    };
    // Read back through the product's own check before anything is written.
    let mut read = RankerModel::from_json(&serde_json::to_string(&model)?)?;
    (model.slope, model.intercept) = platt(&labelled_margins(groups, &read, QuestionLayout::Line));
    (read.slope, read.intercept) = (model.slope, model.intercept);
    Ok((model, read))
}

/// The whole model on `groups`: `rounds` trees (after `base`'s), then, with
/// `titled_rounds`, that many trees boosted on the titled questions among `groups` alone.
/// One function for both stages, so that a cross-validation refits both on each fold.
fn fit_stages(
    groups: &[&Group],
    kept: &[usize],
    base: Option<&RankerModel>,
    rounds: usize,
    titled_rounds: Option<usize>,
    shape: TreeShape,
) -> anyhow::Result<(RankerModel, RankerModel)> {
    let (model, read) = fit(groups, kept, base, rounds, shape)?;
    let Some(titled_rounds) = titled_rounds else {
        return Ok((model, read));
    };
    let titled: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.layout == QuestionLayout::Titled)
        .collect();
    anyhow::ensure!(!titled.is_empty(), "no titled question to fit trees on");
    fit_titled(&titled, kept, &read, titled_rounds, shape)
}

/// `base` with `rounds` trees for titled questions, boosted on its margins over `groups`
/// (titled questions) and calibrated on them; its own trees and calibration are kept.
fn fit_titled(
    groups: &[&Group],
    kept: &[usize],
    base: &RankerModel,
    rounds: usize,
    shape: TreeShape,
) -> anyhow::Result<(RankerModel, RankerModel)> {
    let (trained_on, trees) = boost(groups, kept, Some(base), rounds, shape)?;
    let mut model = RankerModel {
        features: kept.iter().map(|&i| FEATURE_NAMES[i].to_string()).collect(),
        trees: in_columns(&base.trees, kept)?,
        titled: Some(TitledTrees {
            trained_on: format!("titled questions only, on the trees before: {trained_on}"),
            slope: 1.0,
            intercept: 0.0,
            trees,
        }),
        ..base.clone()
    };
    let mut read = RankerModel::from_json(&serde_json::to_string(&model)?)?;
    let (slope, intercept) = platt(&labelled_margins(groups, &read, QuestionLayout::Titled));
    for titled in [&mut model.titled, &mut read.titled].into_iter().flatten() {
        (titled.slope, titled.intercept) = (slope, intercept);
    }
    Ok((model, read))
}

/// `trees` (splits numbered in this build's rows) with their splits renumbered to `kept`'s
/// order; an error if one splits on a column left out.
fn in_columns(trees: &[Vec<Node>], kept: &[usize]) -> anyhow::Result<Vec<Vec<Node>>> {
    let mut out = trees.to_vec();
    for node in out.iter_mut().flatten() {
        if let Some(f) = node.feature {
            let at = kept.iter().position(|&k| k == f as usize).ok_or_else(|| {
                anyhow::anyhow!(
                    "the base model splits on {}, which is left out",
                    FEATURE_NAMES[f as usize]
                )
            })?;
            node.feature = Some(at as u16);
        }
    }
    Ok(out)
}

/// Each candidate's margin under `model` as a question of `layout`, with whether it is a
/// target: what a calibration is fitted on.
fn labelled_margins(
    groups: &[&Group],
    model: &RankerModel,
    layout: QuestionLayout,
) -> Vec<(f32, bool)> {
    groups
        .iter()
        .flat_map(|g| {
            g.rows
                .iter()
                .zip(&g.labels)
                .map(move |(row, &l)| (model.margin(row, layout), l > 0.0))
        })
        .collect()
}

/// Two-fold cross-validation on the tuning half, by repository (alternate repositories in
/// name order): a choice between feature sets or settings is made on these figures, so
/// that the test half is read once, for the choice made.
fn cross_validate(
    tune: &[&Group],
    fit: impl Fn(&[&Group]) -> anyhow::Result<(RankerModel, RankerModel)>,
) -> anyhow::Result<()> {
    let repos: std::collections::BTreeSet<&str> = tune.iter().map(|g| g.repo.as_str()).collect();
    let fold_of: BTreeMap<&str, usize> =
        repos.iter().enumerate().map(|(i, r)| (*r, i % 2)).collect();
    let mut scored: Vec<(&Group, Vec<f32>)> = Vec::new();
    for fold in 0..2 {
        let (train_on, held_out): (Vec<&Group>, Vec<&Group>) =
            tune.iter().partition(|g| fold_of[g.repo.as_str()] != fold);
        let (_, read) = fit(&train_on)?;
        scored.extend(held_out.into_iter().map(|g| (g, margins(g, &read))));
    }
    println!("tuning half, 2-fold by repository (A@1 / any@10 / MRR), macro over repositories:");
    for kind in ["doc", "change", "long"] {
        if let Some((n, f)) = kind_figures(&scored, kind) {
            println!(
                "  {kind:<6} ({n} repositories): {:.3} / {:.3} / {:.3}",
                f[0], f[1], f[2]
            );
        }
    }
    Ok(())
}

/// Evidence features can only raise a candidate's score: the trees may not learn that
/// ranking first in BM25 is worse than ranking tenth on the tuning half's noise.
fn monotone(feature: &str) -> Monotone {
    match feature {
        "lexical" | "lexicalShare" | "name" | "nameLevel" | "quoted" | "title" | "vector"
        | "similarity" | "coverage" | "fileShare" | "notes" | "linked" => Monotone::Increasing,
        "test" | "companion" => Monotone::Decreasing,
        _ => Monotone::None,
    }
}

fn convert_tree(tree: &hessboost::tree::RegTree) -> Vec<Node> {
    // Renumber so that children follow their parent (the product's walk relies on it):
    // breadth first from the root.
    let nodes = tree.nodes();
    let mut order = vec![0usize];
    let mut i = 0;
    while i < order.len() {
        let n = &nodes[order[i]];
        if !n.is_leaf() {
            order.push(n.left as usize);
            order.push(n.right as usize);
        }
        i += 1;
    }
    let mut position = vec![0u32; nodes.len()];
    for (new, &old) in order.iter().enumerate() {
        position[old] = new as u32;
    }
    order
        .iter()
        .map(|&old| {
            let n = &nodes[old];
            if n.is_leaf() {
                Node {
                    feature: None,
                    threshold: 0.0,
                    left: 0,
                    right: 0,
                    value: n.leaf_value,
                }
            } else {
                Node {
                    feature: Some(n.split_feature as u16),
                    threshold: n.split_cond,
                    left: position[n.left as usize],
                    right: position[n.right as usize],
                    value: 0.0,
                }
            }
        })
        .collect()
}

/// Platt scaling: the logistic map of a margin to P(target), fitted by Newton's method.
fn platt(points: &[(f32, bool)]) -> (f32, f32) {
    let (mut a, mut b) = (1.0_f64, 0.0_f64);
    for _ in 0..50 {
        let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(m, label) in points {
            let m = f64::from(m);
            let p = 1.0 / (1.0 + (-(a * m + b)).exp());
            let d = p - f64::from(u8::from(label));
            let w = (p * (1.0 - p)).max(1e-9);
            ga += d * m;
            gb += d;
            haa += w * m * m;
            hab += w * m;
            hbb += w;
        }
        let det = haa * hbb - hab * hab;
        if det.abs() < 1e-12 {
            break;
        }
        let (da, db) = ((hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det);
        a -= da;
        b -= db;
        if da.abs() + db.abs() < 1e-9 {
            break;
        }
    }
    (a as f32, b as f32)
}

fn read_groups(config: &TrainRanker) -> anyhow::Result<Vec<Group>> {
    // Repository or package → half, from the two pin lists.
    let mut splits: BTreeMap<String, Split> = BTreeMap::new();
    for pin in crate::tuning::read_pins(&config.corpus_pins)? {
        splits.insert(pin.name.replace('/', "+"), pin.split);
    }
    for pin in crate::changes::read_pins(&config.changes_pins)? {
        splits.insert(pin.name.replace('/', "+"), pin.split);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&config.runs)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("run-") && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    let mut groups = Vec::new();
    for file in files {
        let Some((kind, repo)) = kind_and_repo(&file) else {
            continue;
        };
        let Some(&split) = splits.get(&repo) else {
            continue;
        };
        let text = std::fs::read_to_string(&file)?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let mut line: RunLine = serde_json::from_str(line)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            if line.candidates.is_empty() {
                continue;
            }
            // The run's order is the ranking of the build that wrote it: the training data
            // must not depend on it, so that any build's run files give the same model.
            line.candidates.sort_by(|a, b| {
                let (x, y) = (a.features.values(), b.features.values());
                x.iter()
                    .zip(&y)
                    .map(|(x, y)| x.total_cmp(y))
                    .find(|o| o.is_ne())
                    .unwrap_or(a.label.cmp(&b.label))
            });
            groups.push(Group {
                kind,
                repo: repo.clone(),
                split,
                layout: QuestionLayout::of(&TextQuery::new(&line.query)),
                rows: line
                    .candidates
                    .iter()
                    .map(|c| c.features.values())
                    .collect(),
                labels: line
                    .candidates
                    .iter()
                    .map(|c| f32::from(u8::from(c.label)))
                    .collect(),
                scores: line.candidates.iter().map(|c| c.score).collect(),
            });
        }
    }
    Ok(groups)
}

/// `run-change-owner+name.jsonl` → (change, owner+name); `run-owner+name.jsonl` → doc.
fn kind_and_repo(file: &Path) -> Option<(&'static str, String)> {
    let stem = file.file_stem()?.to_str()?.strip_prefix("run-")?;
    for kind in ["change", "long"] {
        if let Some(repo) = stem.strip_prefix(kind).and_then(|s| s.strip_prefix('-')) {
            return Some((kind, repo.to_string()));
        }
    }
    Some(("doc", stem.to_string()))
}

/// `groups`' ranking by the scores of the build that wrote the run files and by `model`:
/// first result a target, any target in the top 10, MRR (cut at 10), macro over
/// repositories, per question kind.
fn report(groups: &[&Group], model: &RankerModel) {
    let run: Vec<(&Group, Vec<f32>)> = groups.iter().map(|g| (*g, g.scores.clone())).collect();
    let learned: Vec<(&Group, Vec<f32>)> = groups.iter().map(|g| (*g, margins(g, model))).collect();
    for kind in ["doc", "change", "long"] {
        let (Some(b), Some(a)) = (kind_figures(&run, kind), kind_figures(&learned, kind)) else {
            continue;
        };
        println!(
            "  {kind:<6} ({} repositories): {:.3} / {:.3} / {:.3} → {:.3} / {:.3} / {:.3}",
            b.0, b.1[0], b.1[1], b.1[2], a.1[0], a.1[1], a.1[2]
        );
    }
}

/// `model`'s score of each of `g`'s candidates.
fn margins(g: &Group, model: &RankerModel) -> Vec<f32> {
    g.rows.iter().map(|r| model.margin(r, g.layout)).collect()
}

/// The number of repositories of `kind` among `scored` (each question with its candidates'
/// scores) and their macro figures.
fn kind_figures(scored: &[(&Group, Vec<f32>)], kind: &str) -> Option<(usize, [f64; 3])> {
    let mut by_repo: BTreeMap<&str, Vec<[f64; 3]>> = BTreeMap::new();
    for (g, scores) in scored.iter().filter(|(g, _)| g.kind == kind) {
        by_repo
            .entry(&g.repo)
            .or_default()
            .push(metrics(scores, &g.labels));
    }
    (!by_repo.is_empty()).then(|| (by_repo.len(), macro_mean(&by_repo)))
}

fn metrics(scores: &[f32], labels: &[f32]) -> [f64; 3] {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // Stable: ties keep the canonical (feature) order.
    order.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]));
    let first = order.iter().position(|&i| labels[i] > 0.0);
    match first {
        Some(p) if p < 10 => [f64::from(u8::from(p == 0)), 1.0, 1.0 / (p + 1) as f64],
        _ => [0.0, 0.0, 0.0],
    }
}

fn macro_mean(by_repo: &BTreeMap<&str, Vec<[f64; 3]>>) -> [f64; 3] {
    let mut sum = [0.0; 3];
    for rows in by_repo.values() {
        for k in 0..3 {
            sum[k] += rows.iter().map(|r| r[k]).sum::<f64>() / rows.len() as f64;
        }
    }
    sum.map(|s| s / by_repo.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platt_scaling_recovers_a_logistic_relation() {
        // Margins -2..2; labels true where a fixed sequence falls under the logistic of 2m.
        let mut points = Vec::new();
        let mut state = 7u64;
        for i in 0..4000 {
            let m = (i % 41) as f32 / 10.0 - 2.0;
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (state >> 33) as f32 / (1u64 << 31) as f32;
            points.push((m, u < 1.0 / (1.0 + (-2.0 * m).exp())));
        }
        let (a, b) = platt(&points);
        assert!(
            (a - 2.0).abs() < 0.3 && b.abs() < 0.2,
            "slope {a}, intercept {b}"
        );
    }

    #[test]
    fn run_files_name_their_kind_and_repository() {
        assert_eq!(
            kind_and_repo(Path::new("x/run-change-tj+commander.js.jsonl")),
            Some(("change", "tj+commander.js".to_string()))
        );
        assert_eq!(
            kind_and_repo(Path::new("run-date-fns.jsonl")),
            Some(("doc", "date-fns".to_string()))
        );
    }

    /// Questions whose target is the candidate with the highest `lexical` or, in a third
    /// of them, the highest `title`: a base that splits on `lexical` alone misses those.
    /// Question `q` of the tuning half, in one of two repositories by its parity.
    fn tuning_question(
        kind: &'static str,
        q: usize,
        layout: QuestionLayout,
        rows: Vec<[f32; FEATURE_NAMES.len()]>,
        labels: Vec<f32>,
    ) -> Group {
        Group {
            kind,
            repo: format!("r{}", q % 2),
            split: Split::Tune,
            layout,
            scores: vec![0.0; rows.len()],
            rows,
            labels,
        }
    }

    fn title_questions() -> Vec<Group> {
        let column = |name: &str| FEATURE_NAMES.iter().position(|f| *f == name).unwrap();
        let (lexical, title) = (column("lexical"), column("title"));
        (0..60)
            .map(|q| {
                let mut rows = vec![[0.0; FEATURE_NAMES.len()]; 5];
                let mut labels = vec![0.0; 5];
                // A title question's best title stands out; so does the others' best BM25.
                let by_title = q % 3 == 0;
                let (lexical_top, title_top) = if by_title { (0.5, 1.0) } else { (1.0, 0.5) };
                for (c, row) in rows.iter_mut().enumerate() {
                    row[lexical] = lexical_top / (c + 1) as f32;
                    row[title] = title_top / (5 - c) as f32;
                }
                labels[if by_title { 4 } else { 0 }] = 1.0;
                tuning_question("long", q, QuestionLayout::Titled, rows, labels)
            })
            .collect()
    }

    /// [`title_questions`], and a base of 3 trees fitted on them without `title` (and the
    /// columns it kept).
    fn title_blind_base() -> (Vec<Group>, RankerModel, Vec<usize>) {
        let groups = title_questions();
        let without_title: Vec<usize> = (0..FEATURE_NAMES.len())
            .filter(|&i| FEATURE_NAMES[i] != "title")
            .collect();
        let all: Vec<&Group> = groups.iter().collect();
        let (_, base) = fit(&all, &without_title, None, 3, TreeShape::default()).unwrap();
        (groups, base, without_title)
    }

    /// A continued model holds the base's trees, renumbered to its columns and scoring as
    /// before, then the new ones.
    #[test]
    fn a_continued_model_keeps_its_base_and_adds_trees() {
        let (groups, base, without_title) = title_blind_base();
        let all: Vec<&Group> = groups.iter().collect();
        let every: Vec<usize> = (0..FEATURE_NAMES.len()).collect();
        let (artifact, read) = fit(&all, &every, Some(&base), 4, TreeShape::default()).unwrap();
        assert_eq!(artifact.trees.len(), base.trees.len() + 4);
        let row = &groups[0].rows[2];
        let base_part = RankerModel {
            trees: read.trees[..base.trees.len()].to_vec(),
            ..read.clone()
        };
        assert_eq!(
            base_part.margin(row, QuestionLayout::Line),
            base.margin(row, QuestionLayout::Line),
            "the base scores as before"
        );
        // Question 0 asks by its title: the base, blind to it, ranks its target below
        // first; the added trees, first.
        let first =
            |model: &RankerModel| metrics(&read_margins(&groups[0], model), &groups[0].labels)[0];
        assert_eq!((first(&base), first(&read)), (0.0, 1.0));
        // A base that splits on a column left out is refused.
        assert!(fit(&all, &without_title, Some(&read), 1, TreeShape::default()).is_err());
    }

    /// Titled trees keep the base whole (every question of one line scores as before, to
    /// the bit) and lift titled questions the base, blind to the title, ranks wrong.
    #[test]
    fn titled_trees_leave_questions_of_one_line_as_they_were() {
        let (groups, base, _) = title_blind_base();
        let all: Vec<&Group> = groups.iter().collect();
        let every: Vec<usize> = (0..FEATURE_NAMES.len()).collect();
        let (artifact, read) = fit_titled(&all, &every, &base, 4, TreeShape::default()).unwrap();
        assert_eq!(artifact.trees.len(), base.trees.len());
        assert_eq!(artifact.titled.as_ref().map(|t| t.trees.len()), Some(4));
        assert_eq!((read.slope, read.intercept), (base.slope, base.intercept));
        for row in groups.iter().flat_map(|g| &g.rows) {
            assert_eq!(
                read.margin(row, QuestionLayout::Line),
                base.margin(row, QuestionLayout::Line)
            );
        }
        let first =
            |model: &RankerModel| metrics(&read_margins(&groups[0], model), &groups[0].labels)[0];
        assert_eq!((first(&base), first(&read)), (0.0, 1.0));
    }

    /// Both stages in one fit: the titled trees learn from titled questions only, and
    /// questions of one line score as by the first stage alone, to the bit.
    #[test]
    fn one_fit_holds_both_stages() {
        let mut groups = title_questions();
        // Every other question is of one line: the titled trees may not learn from it.
        for g in groups.iter_mut().skip(1).step_by(2) {
            g.layout = QuestionLayout::Line;
        }
        let all: Vec<&Group> = groups.iter().collect();
        let without_title: Vec<usize> = (0..FEATURE_NAMES.len())
            .filter(|&i| FEATURE_NAMES[i] != "title")
            .collect();
        let (_, first_stage) = fit(&all, &without_title, None, 3, TreeShape::default()).unwrap();
        let (artifact, read) =
            fit_stages(&all, &without_title, None, 3, Some(4), TreeShape::default()).unwrap();
        let titled = artifact.titled.as_ref().unwrap();
        assert_eq!(titled.trees.len(), 4);
        // The titled trees learnt from the titled questions alone.
        let n_titled = groups
            .iter()
            .filter(|g| g.layout == QuestionLayout::Titled)
            .count();
        assert!(n_titled < groups.len());
        assert!(
            titled
                .trained_on
                .contains(&format!(": {n_titled} questions,")),
            "{}",
            titled.trained_on
        );
        for g in groups.iter().filter(|g| g.layout == QuestionLayout::Line) {
            assert_eq!(read_margins(g, &read), read_margins(g, &first_stage));
        }
        // Without titled questions there is nothing to fit them on.
        let lines: Vec<&Group> = groups
            .iter()
            .filter(|g| g.layout == QuestionLayout::Line)
            .collect();
        assert!(
            fit_stages(
                &lines,
                &without_title,
                None,
                3,
                Some(4),
                TreeShape::default()
            )
            .is_err()
        );
    }

    /// Questions whose target depends on several features at once, so that trees grow as
    /// large as they are allowed to.
    fn tangled_questions() -> Vec<Group> {
        let mut state: u64 = 7;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..200)
            .map(|q| {
                let rows: Vec<[f32; FEATURE_NAMES.len()]> =
                    (0..10).map(|_| std::array::from_fn(|_| next())).collect();
                let value = |r: &[f32; FEATURE_NAMES.len()]| {
                    (r[0] - r[1]).abs() + r[2] * r[3] - (r[4] - 0.5).abs() + r[5].min(r[6])
                };
                let best = (0..10)
                    .max_by(|&a, &b| value(&rows[a]).total_cmp(&value(&rows[b])))
                    .unwrap();
                let mut labels = vec![0.0; 10];
                labels[best] = 1.0;
                tuning_question("change", q, QuestionLayout::Line, rows, labels)
            })
            .collect()
    }

    #[test]
    fn trees_keep_to_their_shape() {
        let groups = tangled_questions();
        let all: Vec<&Group> = groups.iter().collect();
        let every: Vec<usize> = (0..FEATURE_NAMES.len()).collect();
        let leaves = |tree: &Vec<Node>| tree.iter().filter(|n| n.feature.is_none()).count();
        fn depth(tree: &[Node], at: usize) -> usize {
            match tree[at].feature {
                None => 0,
                Some(_) => {
                    1 + depth(tree, tree[at].left as usize)
                        .max(depth(tree, tree[at].right as usize))
                }
            }
        }
        let (depth_wise, _) = fit(&all, &every, None, 5, TreeShape::default()).unwrap();
        assert!(depth_wise.trees.iter().all(|t| depth(t, 0) <= MAX_DEPTH));
        // Unbounded in leaves, the depth-wise trees grow past the bound asked of the others.
        assert!(depth_wise.trees.iter().any(|t| leaves(t) > 4));
        assert!(depth_wise.trained_on.contains("5 trees of depth 6"));
        let four_leaves = TreeShape {
            max_leaves: Some(4),
            ..TreeShape::default()
        };
        let (leaf_wise, _) = fit(&all, &every, None, 5, four_leaves).unwrap();
        assert!(leaf_wise.trees.iter().all(|t| leaves(t) <= 4));
        assert!(leaf_wise.trained_on.contains("5 trees of at most 4 leaves"));
    }

    fn read_margins(g: &Group, model: &RankerModel) -> Vec<f32> {
        g.rows.iter().map(|r| model.margin(r, g.layout)).collect()
    }

    #[test]
    fn a_first_target_at_rank_three_scores_a_third() {
        assert_eq!(
            metrics(&[0.9, 0.8, 0.7, 0.1], &[0.0, 0.0, 1.0, 0.0]),
            [0.0, 1.0, 1.0 / 3.0]
        );
    }
}
