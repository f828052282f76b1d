//! The learned ranking of Stage 2 without a reranker: each candidate's [`Features`] (what
//! the channels and the chunk itself say about it) go through gradient-boosted trees
//! (LambdaMART, trained by `cargo xtask train-ranker` on the tuning half of the corpus), and
//! the trees' sum is mapped to the probability that the candidate is what the question asks
//! for (Platt scaling fitted on the same half). That probability is the candidate's score:
//! the relevance gate and the answer's companions are cut on it.
//!
//! The model ships as a small JSON artifact compiled into the crate ([`RankerModel`]); its
//! trees are walked here (a few comparisons per tree), so the product does not link the
//! trainer.

use std::sync::LazyLock;

use codectx_parser::SymbolKind;
use serde::{Deserialize, Serialize};

/// Reciprocal ranks are `(K + 1) / (K + rank)`: 1 for first, about 0.5 for 21st.
const RANK_CONSTANT: f32 = 20.0;

/// A channel's 1-based rank as a feature: 1.0 for first, falling smoothly, 0 when the
/// channel did not find the candidate.
pub fn reciprocal_rank(rank: Option<usize>) -> f32 {
    rank.map_or(0.0, |r| (RANK_CONSTANT + 1.0) / (RANK_CONSTANT + r as f32))
}

/// What a chunk is, as the model sees it: kinds that behave alike in ranking share a group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum KindGroup {
    Function,
    /// Methods, constructors, getters and setters.
    Method,
    /// Properties and the signatures of a type's members: rows, not code.
    Member,
    Class,
    /// Interfaces and type aliases: shapes, not behaviour.
    Type,
    Enum,
    Component,
    /// Variables and constants.
    Variable,
    /// Namespaces and `declare module` blocks.
    Namespace,
    /// Top-level expressions and statements.
    Statement,
    /// Export lists and re-exports.
    Export,
    Comment,
    /// Imports, static blocks, unparsed files.
    #[default]
    Other,
}

impl KindGroup {
    pub const ALL: [KindGroup; 13] = [
        KindGroup::Function,
        KindGroup::Method,
        KindGroup::Member,
        KindGroup::Class,
        KindGroup::Type,
        KindGroup::Enum,
        KindGroup::Component,
        KindGroup::Variable,
        KindGroup::Namespace,
        KindGroup::Statement,
        KindGroup::Export,
        KindGroup::Comment,
        KindGroup::Other,
    ];

    pub fn of(kind: SymbolKind) -> KindGroup {
        match kind {
            SymbolKind::Function | SymbolKind::Macro => KindGroup::Function,
            SymbolKind::Method
            | SymbolKind::Constructor
            | SymbolKind::Getter
            | SymbolKind::Setter => KindGroup::Method,
            SymbolKind::Property
            | SymbolKind::IndexSignature
            | SymbolKind::CallSignature
            | SymbolKind::ConstructSignature => KindGroup::Member,
            // Rust's and Go's kinds in the groups their TS counterparts train.
            SymbolKind::Class | SymbolKind::Struct | SymbolKind::Impl => KindGroup::Class,
            SymbolKind::Interface | SymbolKind::Type | SymbolKind::Trait => KindGroup::Type,
            SymbolKind::Enum => KindGroup::Enum,
            SymbolKind::Component => KindGroup::Component,
            SymbolKind::Variable | SymbolKind::Const => KindGroup::Variable,
            SymbolKind::Namespace | SymbolKind::Module => KindGroup::Namespace,
            SymbolKind::Expression | SymbolKind::Statement => KindGroup::Statement,
            SymbolKind::Export | SymbolKind::ReExport => KindGroup::Export,
            SymbolKind::Comment => KindGroup::Comment,
            SymbolKind::Import | SymbolKind::StaticBlock | SymbolKind::Unparsed => KindGroup::Other,
        }
    }
}

/// What Stage 2 knows of one candidate: the model's input. Every field is computed in one
/// place (the search), so the features a model is trained on are the ones it is run on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Features {
    /// [`reciprocal_rank`] in the BM25 channel (re-ranked by file evidence).
    pub lexical: f32,
    /// Its BM25 score (re-ranked by file evidence) relative to the channel's best (0–1):
    /// the rank alone hides whether the first few stand far above the rest.
    pub lexical_share: f32,
    /// In the name channel.
    pub name: f32,
    /// How the name channel met it: 0 not at all, 1 a one-word file name, 2 a file name
    /// of several words, 3 every word of its name, 4 its name written as an identifier.
    pub name_level: f32,
    /// In the quoted channel (a string or stack frame the question quotes).
    pub quoted: f32,
    /// In BM25 for the question's title (the first line of a question of several lines,
    /// as an issue or a pull request opens; the whole question otherwise): what the many
    /// words of a description below it drown.
    pub title: f32,
    /// In the vector channel (0 without a model).
    pub vector: f32,
    /// The cosine to the question mapped between the model's floor and ceiling.
    pub similarity: f32,
    /// Share of the question's terms (at most `scoring::COVERED_TERMS`) the chunk's
    /// path, name and embedding text hold.
    pub coverage: f32,
    /// `ln(1 + terms)`: how long the question is.
    pub question_terms: f32,
    /// The file's BM25 evidence relative to the best file's (0–1).
    pub file_share: f32,
    /// Its commit notes hold one of the question's terms.
    pub notes: f32,
    /// `ln(1 + commits)` that changed it in the history read (at most
    /// [`codectx_store::MAX_NOTES_PER_SYMBOL`]): code that changed often changes again.
    /// Known for BM25 hits, which carry their notes; 0 for the other channels' candidates.
    pub churn: f32,
    /// It calls, or is called by, a candidate leading a channel: the strongest such
    /// neighbour's best reciprocal rank.
    pub linked: f32,
    /// In a test file.
    pub test: f32,
    /// Beside the project: benchmarks, examples, fixtures.
    pub companion: f32,
    /// `ln(1 + lines)`.
    pub lines: f32,
    /// Nesting depth (0 at the top level).
    pub depth: f32,
    /// Its top-level declaration is exported.
    pub exported: f32,
    /// It holds child chunks (a class's methods, an object's functions).
    pub container: f32,
    /// It lies inside a type or interface.
    pub in_type: f32,
    /// Share of its own name's content words (function words aside) the question holds,
    /// or of its verbs for a name of verbs alone: 1 for `setSeconds` in "set the seconds
    /// to the given date" and for `Cart.add` in "add an item to the cart", 0 for `max`,
    /// which holds the question's words in its code only, and for a name without such words.
    pub name_share: f32,
    /// How many such words its name has: a share of one word (`run`) is weaker evidence
    /// than a share of three.
    pub name_words: f32,
    /// What it is.
    pub kind: KindGroup,
}

/// The features' names, in [`Features::values`] order: the artifact records the names it
/// was trained on, and a model naming a feature this build does not compute is refused.
pub const FEATURE_NAMES: [&str; 23 + KindGroup::ALL.len()] = [
    "lexical",
    "lexicalShare",
    "name",
    "nameLevel",
    "quoted",
    "title",
    "vector",
    "similarity",
    "coverage",
    "questionTerms",
    "fileShare",
    "notes",
    "churn",
    "linked",
    "test",
    "companion",
    "lines",
    "depth",
    "exported",
    "container",
    "inType",
    "nameShare",
    "nameWords",
    "kind.function",
    "kind.method",
    "kind.member",
    "kind.class",
    "kind.type",
    "kind.enum",
    "kind.component",
    "kind.variable",
    "kind.namespace",
    "kind.statement",
    "kind.export",
    "kind.comment",
    "kind.other",
];

impl Features {
    /// The model's input row (kinds one-hot).
    pub fn values(&self) -> [f32; FEATURE_NAMES.len()] {
        let mut row = [0.0; FEATURE_NAMES.len()];
        let head = [
            self.lexical,
            self.lexical_share,
            self.name,
            self.name_level,
            self.quoted,
            self.title,
            self.vector,
            self.similarity,
            self.coverage,
            self.question_terms,
            self.file_share,
            self.notes,
            self.churn,
            self.linked,
            self.test,
            self.companion,
            self.lines,
            self.depth,
            self.exported,
            self.container,
            self.in_type,
            self.name_share,
            self.name_words,
        ];
        row[..head.len()].copy_from_slice(&head);
        let kind = KindGroup::ALL
            .iter()
            .position(|k| *k == self.kind)
            .unwrap_or(0);
        row[head.len() + kind] = 1.0;
        row
    }
}

/// One node of a tree: a split (`feature`, go left when the value is below `threshold`)
/// or, without children, a leaf holding `value`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Node {
    #[serde(rename = "f", default, skip_serializing_if = "Option::is_none")]
    pub feature: Option<u16>,
    #[serde(rename = "t", default)]
    pub threshold: f32,
    #[serde(rename = "l", default)]
    pub left: u32,
    #[serde(rename = "r", default)]
    pub right: u32,
    #[serde(rename = "v", default)]
    pub value: f32,
}

/// How a question is laid out, for the model. A question of several lines opens with a
/// title (an issue, a pull request's description): its title is a channel of its own
/// (the feature `title`), and the model may hold trees for such questions alone. (How far
/// an answer goes depends on its number of terms instead: [`crate::scoring::QuestionShape`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionLayout {
    /// One line: a doc comment's sentence, a commit's subject, most agents' questions.
    Line,
    /// Several lines, the first of them a title.
    Titled,
}

impl QuestionLayout {
    pub fn of(question: &crate::query::TextQuery) -> QuestionLayout {
        if question.title().is_some() {
            QuestionLayout::Titled
        } else {
            QuestionLayout::Line
        }
    }
}

/// The shipped model: trees over [`FEATURE_NAMES`] and the map of their sum to a
/// probability, `1 / (1 + e^-(slope·sum + intercept))`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RankerModel {
    /// How it was trained, for the reader: data, trees, leaves, rate.
    pub trained_on: String,
    pub features: Vec<String>,
    pub slope: f32,
    pub intercept: f32,
    /// Each tree's nodes, the root first.
    pub trees: Vec<Vec<Node>>,
    /// Trees boosted on the others' margins over [`QuestionLayout::Titled`] questions alone,
    /// added to their sum for such questions, with their own calibration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub titled: Option<TitledTrees>,
}

/// The trees a model adds for [`QuestionLayout::Titled`] questions, and the map of the
/// whole sum to a probability for them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledTrees {
    pub trained_on: String,
    pub slope: f32,
    pub intercept: f32,
    pub trees: Vec<Vec<Node>>,
}

/// Why a model artifact cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RankerModelError {
    #[error("ranker model: {0}")]
    Format(#[from] serde_json::Error),
    #[error("ranker model: trained on feature {0:?}, which this build does not compute")]
    UnknownFeature(String),
    #[error("ranker model: tree {tree} is malformed (node {node} points outside it)")]
    Tree { tree: usize, node: usize },
}

impl RankerModel {
    /// Reads an artifact and checks it against this build's features and its own trees,
    /// so that scoring never indexes out of bounds. A model trained on fewer features than
    /// this build computes still runs: its splits are renumbered to this build's order by
    /// name (so a new feature can be computed, and written into run files, before a model
    /// reads it).
    pub fn from_json(json: &str) -> Result<Self, RankerModelError> {
        let mut model: RankerModel = serde_json::from_str(json)?;
        let to_build: Vec<u16> = model
            .features
            .iter()
            .map(|name| {
                FEATURE_NAMES
                    .iter()
                    .position(|known| known == name)
                    .map(|i| i as u16)
                    .ok_or_else(|| RankerModelError::UnknownFeature(name.clone()))
            })
            .collect::<Result<_, _>>()?;
        // The titled trees are numbered after the others in errors.
        let base_trees = model.trees.len();
        renumber(&mut model.trees, &to_build, 0)?;
        if let Some(titled) = &mut model.titled {
            renumber(&mut titled.trees, &to_build, base_trees)?;
        }
        model.features = FEATURE_NAMES.iter().map(|s| s.to_string()).collect();
        Ok(model)
    }

    /// The trees' sum for one row of a question of `layout`: the ranking score before
    /// calibration.
    pub fn margin(&self, row: &[f32; FEATURE_NAMES.len()], layout: QuestionLayout) -> f32 {
        self.trees_for(layout).map(|tree| leaf(tree, row)).sum()
    }

    /// The probability (0–1) that a candidate with these features is what a question of
    /// `layout` asks for.
    pub fn score(&self, features: &Features, layout: QuestionLayout) -> f32 {
        self.probability(self.margin(&features.values(), layout), layout)
    }

    /// [`RankerModel::score`] of every candidate of one question, equal to scoring each
    /// alone. Each tree is walked for all of them before the next: one tree's nodes stay
    /// in the cache, where one candidate's walk through all the trees would read them all
    /// again. Each margin adds the trees in the same order, so the sums are the same.
    pub fn score_all<'f>(
        &self,
        features: impl IntoIterator<Item = &'f Features>,
        layout: QuestionLayout,
    ) -> Vec<f32> {
        let rows: Vec<[f32; FEATURE_NAMES.len()]> =
            features.into_iter().map(Features::values).collect();
        let mut margins = vec![0.0_f32; rows.len()];
        for tree in self.trees_for(layout) {
            for (margin, row) in margins.iter_mut().zip(&rows) {
                *margin += leaf(tree, row);
            }
        }
        margins
            .into_iter()
            .map(|margin| self.probability(margin, layout))
            .collect()
    }

    /// The trees that score a question of `layout`, in the order their values are added.
    fn trees_for(&self, layout: QuestionLayout) -> impl Iterator<Item = &Vec<Node>> {
        let titled = match (&self.titled, layout) {
            (Some(titled), QuestionLayout::Titled) => titled.trees.as_slice(),
            _ => &[],
        };
        self.trees.iter().chain(titled)
    }

    /// The calibrated probability of a margin of `layout`.
    fn probability(&self, margin: f32, layout: QuestionLayout) -> f32 {
        let (slope, intercept) = match (&self.titled, layout) {
            (Some(titled), QuestionLayout::Titled) => (titled.slope, titled.intercept),
            _ => (self.slope, self.intercept),
        };
        1.0 / (1.0 + (-(slope * margin + intercept)).exp())
    }
}

/// Renumbers the splits of `trees` from the artifact's columns to this build's
/// (`to_build`), checking that every child follows its parent; `first` is the number of the
/// first tree, for errors.
fn renumber(
    trees: &mut [Vec<Node>],
    to_build: &[u16],
    first: usize,
) -> Result<(), RankerModelError> {
    for (t, tree) in trees.iter_mut().enumerate() {
        let len = tree.len();
        for (n, node) in tree.iter_mut().enumerate() {
            let Some(f) = node.feature else { continue };
            let bad_child = node.left as usize >= len
                || node.right as usize >= len
                || node.left as usize <= n
                || node.right as usize <= n;
            match to_build.get(f as usize) {
                Some(&build) if !bad_child => node.feature = Some(build),
                _ => {
                    return Err(RankerModelError::Tree {
                        tree: first + t,
                        node: n,
                    });
                }
            }
        }
        if tree.is_empty() {
            return Err(RankerModelError::Tree {
                tree: first + t,
                node: 0,
            });
        }
    }
    Ok(())
}

/// The value of the leaf `row` reaches in `tree`.
fn leaf(tree: &[Node], row: &[f32; FEATURE_NAMES.len()]) -> f32 {
    // Children always follow their parent (checked in `from_json`): the walk ends.
    let mut node = &tree[0];
    while let Some(f) = node.feature {
        let next = if row[f as usize] < node.threshold {
            node.left
        } else {
            node.right
        };
        node = &tree[next as usize];
    }
    node.value
}

/// The artifact `cargo xtask train-ranker` writes.
pub const MODEL_JSON: &str = include_str!("ranker_model.json");

/// The shipped model, read once.
pub fn shipped_model() -> &'static RankerModel {
    static MODEL: LazyLock<RankerModel> = LazyLock::new(|| {
        // The artifact is compiled in and checked by this crate's tests: a failure here is a
        // build that shipped a broken file, not user input.
        RankerModel::from_json(MODEL_JSON).expect("the shipped ranker model is valid")
    });
    &MODEL
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_model_reads_and_scores_within_zero_and_one() {
        let model = RankerModel::from_json(MODEL_JSON).unwrap();
        assert!(!model.trees.is_empty());
        let strong = Features {
            lexical: 1.0,
            lexical_share: 1.0,
            name: 1.0,
            name_level: 4.0,
            quoted: 0.0,
            // A question of one line: its own title.
            title: 1.0,
            vector: 0.0,
            similarity: 0.0,
            coverage: 1.0,
            question_terms: 4f32.ln_1p(),
            file_share: 1.0,
            notes: 1.0,
            churn: 3f32.ln_1p(),
            linked: 1.0,
            test: 0.0,
            companion: 0.0,
            lines: 20f32.ln_1p(),
            depth: 0.0,
            exported: 1.0,
            container: 0.0,
            in_type: 0.0,
            name_share: 1.0,
            name_words: 2.0,
            kind: KindGroup::Function,
        };
        let weak = Features {
            lexical: reciprocal_rank(Some(40)),
            lexical_share: 0.2,
            name: 0.0,
            name_level: 0.0,
            coverage: 0.25,
            file_share: 0.1,
            notes: 0.0,
            churn: 0.0,
            linked: 0.0,
            exported: 0.0,
            name_share: 0.0,
            kind: KindGroup::Comment,
            ..strong
        };
        let (s, w) = (
            model.score(&strong, QuestionLayout::Line),
            model.score(&weak, QuestionLayout::Line),
        );
        assert!((0.0..=1.0).contains(&s) && (0.0..=1.0).contains(&w));
        assert!(
            s > w,
            "a named, leading, covering function ({s}) above a weak comment ({w})"
        );
        // Scored together, tree by tree, each gets exactly its own score, in either layout.
        let between = Features {
            lexical: 0.5,
            coverage: 0.5,
            title: 0.0,
            kind: KindGroup::Function,
            ..weak
        };
        for layout in [QuestionLayout::Line, QuestionLayout::Titled] {
            let alone: Vec<f32> = [&strong, &weak, &between]
                .map(|f| model.score(f, layout))
                .to_vec();
            assert_eq!(model.score_all([&strong, &weak, &between], layout), alone);
        }
        assert!(model.score_all([], QuestionLayout::Line).is_empty());
    }

    #[test]
    fn a_model_of_other_features_or_with_a_dangling_child_is_refused() {
        let other = r#"{"trainedOn":"","features":["x"],"slope":1,"intercept":0,"trees":[]}"#;
        assert!(matches!(
            RankerModel::from_json(other),
            Err(RankerModelError::UnknownFeature(name)) if name == "x"
        ));
        let names = serde_json::to_string(FEATURE_NAMES.as_slice()).unwrap();
        let dangling = format!(
            r#"{{"trainedOn":"","features":{names},"slope":1,"intercept":0,"trees":[[{{"f":0,"t":0.5,"l":1,"r":7}},{{"v":1}}]]}}"#
        );
        assert!(matches!(
            RankerModel::from_json(&dangling),
            Err(RankerModelError::Tree { tree: 0, node: 0 })
        ));
    }

    /// Titled trees add to the sum of a titled question's candidates only, and their
    /// calibration maps it; a question of one line is scored by the others alone.
    #[test]
    fn titled_trees_score_titled_questions_only() {
        let model = r#"{"trainedOn":"","features":["title","lexical"],"slope":1,"intercept":0,
            "trees":[[{"f":1,"t":0.5,"l":1,"r":2},{"v":-1},{"v":1}]],
            "titled":{"trainedOn":"","slope":2,"intercept":-1,
                "trees":[[{"f":0,"t":0.5,"l":1,"r":2},{"v":0},{"v":3}]]}}"#;
        let model = RankerModel::from_json(model).unwrap();
        let by_title = Features {
            title: 1.0,
            ..Features::default()
        };
        let row = by_title.values();
        assert_eq!(model.margin(&row, QuestionLayout::Line), -1.0);
        assert_eq!(model.margin(&row, QuestionLayout::Titled), 2.0);
        let logistic = |x: f32| 1.0 / (1.0 + (-x).exp());
        assert_eq!(model.score(&by_title, QuestionLayout::Line), logistic(-1.0));
        assert_eq!(
            model.score(&by_title, QuestionLayout::Titled),
            logistic(2.0 * 2.0 - 1.0)
        );
        // A titled tree that points outside itself is refused, numbered after the others.
        let dangling = r#"{"trainedOn":"","features":["title"],"slope":1,"intercept":0,
            "trees":[[{"v":0}]],
            "titled":{"trainedOn":"","slope":1,"intercept":0,"trees":[[{"f":0,"t":0.5,"l":1,"r":5},{"v":0}]]}}"#;
        assert!(matches!(
            RankerModel::from_json(dangling),
            Err(RankerModelError::Tree { tree: 1, node: 0 })
        ));
    }

    #[test]
    fn a_question_is_titled_when_it_has_several_lines() {
        let layout = |q: &str| QuestionLayout::of(&crate::query::TextQuery::new(q));
        assert_eq!(layout("how is a route matched"), QuestionLayout::Line);
        assert_eq!(
            layout("Route params lost on redirect\n\nAfter a redirect the params are empty."),
            QuestionLayout::Titled
        );
    }

    #[test]
    fn a_model_of_fewer_features_splits_on_them_by_name() {
        // Its second feature is `lexical`, which this build computes first.
        let older = r#"{"trainedOn":"","features":["coverage","lexical"],"slope":1,"intercept":0,
            "trees":[[{"f":1,"t":0.5,"l":1,"r":2},{"v":-1},{"v":1}]]}"#;
        let model = RankerModel::from_json(older).unwrap();
        let leading = Features {
            lexical: 1.0,
            ..Features::default()
        };
        let line = QuestionLayout::Line;
        assert_eq!(model.margin(&leading.values(), line), 1.0);
        assert_eq!(model.margin(&Features::default().values(), line), -1.0);
        assert_eq!(model.features, FEATURE_NAMES);
    }
}
