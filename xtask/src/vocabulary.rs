//! `cargo xtask vocabulary`: learns the code vocabulary — which English words go with which
//! code tokens — from the documented symbols of pinned npm packages, and writes it as a
//! static (model2vec-format) embedding model the `static` provider loads.
//!
//! Documented code pairs the words people ask in ("remove", "listen") with the tokens the
//! code is written in (`splice`, `delete`; `on`, `addEventListener`). For every documented
//! function, method, class or variable, the JSDoc's words and the code's tokens are two
//! bags; the association of a word and a token is their positive pointwise mutual
//! information over all symbols (the code side smoothed as word2vec smooths contexts). The
//! symmetric association matrix is factorised by its top eigenvectors (randomised subspace
//! iteration), so a token's row holds its associations in a few dozen numbers and the dot
//! product of a question's mean row with a chunk's mean row approximates how strongly the
//! question's words go with the chunk's tokens.
//!
//! Tokens are pieces of identifiers and words (`getHTTPResponse` → `get`, `HTTP`,
//! `Response`), lower-cased and stemmed into one table row; the tokenizer lists each surface
//! form seen, and the model's `mapping` sends every form of a stem to its row. Rows are
//! stored in i8 with a per-row scale (the `weights` tensor).
//!
//! The pin list must not share a package with the tuning corpus's test half: the vocabulary
//! is judged there.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::bail;
use rust_stemmers::{Algorithm, Stemmer};
use serde_json::json;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{
    OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer, SplitDelimiterBehavior,
};

use crate::tuning::{self, Pin, Split as Half};

/// Identifier pieces: an upper-case run before a capitalised word (`HTTP` in
/// `HTTPResponse`), a capitalised or lower-case word, an upper-case run. Digits and
/// punctuation separate pieces and are dropped.
pub const PIECE_PATTERN: &str = r"\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+|\p{Lu}+";

/// Code kept per symbol, in bytes: a large class would otherwise outweigh a hundred
/// functions.
const CODE_BYTES: usize = 4_000;

/// Documented symbols taken from one package at most (the first, in path order): one large
/// package would otherwise set the vocabulary of its own domain for everyone.
const SYMBOLS_PER_PACKAGE: usize = 1_500;

/// What `xtask vocabulary` builds.
pub struct VocabularyBuild<'a> {
    pub pins: &'a Path,
    /// The tuning corpus's pin list, whose test half is refused.
    pub tuning_pins: &'a Path,
    pub out: &'a Path,
    /// Dimensions of a row.
    pub dimension: usize,
    /// Stems kept at most (the most documented).
    pub max_rows: usize,
    /// A stem must occur in this many symbols.
    pub min_symbols: u32,
}

/// One documented symbol: its JSDoc's words and its code's tokens, as stems.
struct Pair {
    doc: Vec<u32>,
    code: Vec<u32>,
}

/// Stems and the surface forms seen for them.
#[derive(Default)]
struct Lexicon {
    ids: HashMap<String, u32>,
    stems: Vec<String>,
    /// Surface form → (stem id, occurrences).
    forms: HashMap<String, (u32, u32)>,
}

impl Lexicon {
    fn bag(&mut self, pieces: &[String], stemmer: &Stemmer) -> Vec<u32> {
        let mut bag = Vec::new();
        for piece in pieces {
            if piece.chars().count() < 2 {
                continue;
            }
            let stem = stemmer.stem(&piece.to_lowercase()).into_owned();
            let next = self.ids.len() as u32;
            let id = *self.ids.entry(stem.clone()).or_insert_with(|| {
                self.stems.push(stem);
                next
            });
            self.forms.entry(piece.clone()).or_insert((id, 0)).1 += 1;
            bag.push(id);
        }
        bag.sort_unstable();
        bag.dedup();
        bag
    }
}

/// The pre-tokenizer of the vocabulary's tokenizer: training reads text through the same
/// code the embedder's tokenizer runs.
pub fn piece_splitter() -> anyhow::Result<Split> {
    Split::new(
        SplitPattern::Regex(PIECE_PATTERN.into()),
        SplitDelimiterBehavior::Removed,
        true,
    )
    .map_err(|e| anyhow::anyhow!("the piece pattern: {e}"))
}

/// `text`'s pieces, in order.
pub fn pieces(splitter: &Split, text: &str) -> Vec<String> {
    let mut pre = PreTokenizedString::from(text);
    if splitter.pre_tokenize(&mut pre).is_err() {
        return Vec::new();
    }
    pre.get_splits(OffsetReferential::Original, OffsetType::Byte)
        .into_iter()
        .map(|(piece, _, _)| piece.to_string())
        .collect()
}

pub fn run(build: VocabularyBuild<'_>) -> anyhow::Result<()> {
    let pins = tuning::read_pins(build.pins)?;
    let held: HashSet<String> = tuning::read_pins(build.tuning_pins)?
        .into_iter()
        .filter(|p| p.split == Half::Test)
        .map(|p| p.name)
        .collect();
    if let Some(p) = pins.iter().find(|p| held.contains(&p.name)) {
        bail!(
            "{} is in the tuning corpus's test half: the vocabulary must not learn from it",
            p.name
        );
    }
    let splitter = piece_splitter()?;
    let stemmer = Stemmer::create(Algorithm::English);
    let mut lexicon = Lexicon::default();
    let mut pairs = Vec::new();
    for pin in &pins {
        let before = pairs.len();
        documented_symbols(pin, &mut |doc, code| {
            let doc = lexicon.bag(&pieces(&splitter, doc), &stemmer);
            let code = lexicon.bag(&pieces(&splitter, code), &stemmer);
            if !doc.is_empty() && !code.is_empty() && pairs.len() - before < SYMBOLS_PER_PACKAGE {
                pairs.push(Pair { doc, code });
            }
        })?;
        eprintln!(
            "{}@{}: {} documented symbols",
            pin.name,
            pin.version,
            pairs.len() - before
        );
    }
    let model = train(&pairs, &lexicon, &build)?;
    write_model(&model, &lexicon, &pins, &build)?;
    Ok(())
}

/// Calls `each(doc, code)` for every documented target symbol of `pin`'s sources (test and
/// declaration files skipped).
fn documented_symbols(pin: &Pin, each: &mut dyn FnMut(&str, &str)) -> anyhow::Result<()> {
    let root = codectx_corpus::npm_package(&pin.name, &pin.version).join(&pin.root);
    for (path, relative) in crate::source_files(&[root])? {
        if pin.exclude.iter().any(|e| relative.contains(e.as_str()))
            || codectx_files::is_declaration_file(&relative)
            || codectx_retrieval::is_test_file(&relative)
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let parsed = codectx_parser::parse_source(&relative, &text);
        for (symbol, _) in tuning::qualified(&parsed.symbols) {
            if !tuning::is_target(symbol.kind) {
                continue;
            }
            let (_, code_start) = tuning::leading_comments(&text, symbol.span.start as usize);
            let Some((doc_start, doc_end)) = tuning::jsdoc_before(&text, code_start) else {
                continue;
            };
            let doc = codectx_parser::clean_jsdoc(&text[doc_start..doc_end]);
            let mut end = (symbol.span.end as usize).min(code_start + CODE_BYTES);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            if code_start < end {
                each(&doc, &text[code_start..end]);
            }
        }
    }
    Ok(())
}

/// The learned table: `rows × dimension`, row 0 (the unknown token) all zeros; `row_of`
/// maps a stem id to its row.
struct Model {
    rows: Vec<Vec<f32>>,
    row_of: HashMap<u32, usize>,
    dimension: usize,
}

fn train(pairs: &[Pair], lexicon: &Lexicon, build: &VocabularyBuild<'_>) -> anyhow::Result<Model> {
    // Which stems: those in at least `min_symbols` symbols, the most documented first.
    let mut doc_count = vec![0u32; lexicon.stems.len()];
    let mut code_count = vec![0u32; lexicon.stems.len()];
    for p in pairs {
        p.doc.iter().for_each(|&s| doc_count[s as usize] += 1);
        p.code.iter().for_each(|&s| code_count[s as usize] += 1);
    }
    let mut kept: Vec<u32> = (0..lexicon.stems.len() as u32)
        .filter(|&s| doc_count[s as usize] + code_count[s as usize] >= build.min_symbols)
        .collect();
    kept.sort_by_key(|&s| {
        (
            std::cmp::Reverse(doc_count[s as usize] + code_count[s as usize]),
            lexicon.stems[s as usize].clone(),
        )
    });
    kept.truncate(build.max_rows);
    let index: HashMap<u32, usize> = kept.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    let n = kept.len();
    eprintln!(
        "{} symbols, {} stems kept of {}",
        pairs.len(),
        n,
        lexicon.stems.len()
    );

    // Co-occurrence of a doc word and a code token in one symbol.
    let mut together: HashMap<(u32, u32), u32> = HashMap::new();
    let mut doc_n = vec![0f64; n];
    let mut code_n = vec![0f64; n];
    for p in pairs {
        let doc: Vec<u32> = p
            .doc
            .iter()
            .filter_map(|s| index.get(s))
            .map(|&i| i as u32)
            .collect();
        let code: Vec<u32> = p
            .code
            .iter()
            .filter_map(|s| index.get(s))
            .map(|&i| i as u32)
            .collect();
        doc.iter().for_each(|&a| doc_n[a as usize] += 1.0);
        code.iter().for_each(|&b| code_n[b as usize] += 1.0);
        for &a in &doc {
            for &b in &code {
                *together.entry((a, b)).or_default() += 1;
            }
        }
    }
    // PPMI, with the code side's probabilities smoothed (counts^0.75): rare tokens otherwise
    // get the largest associations from a single co-occurrence.
    let symbols = pairs.len() as f64;
    let smoothed: Vec<f64> = code_n.iter().map(|c| c.powf(0.75)).collect();
    let smoothed_total: f64 = smoothed.iter().sum();
    let mut entries: HashMap<(u32, u32), f64> = HashMap::new();
    for (&(a, b), &count) in &together {
        if count < 2 {
            continue;
        }
        let p_ab = f64::from(count) / symbols;
        let p_a = doc_n[a as usize] / symbols;
        let p_b = smoothed[b as usize] / smoothed_total;
        let pmi = (p_ab / (p_a * p_b)).ln();
        if pmi > 0.0 {
            // Symmetric: a word asked for and a token written, either way round.
            *entries.entry((a, b)).or_default() += pmi / 2.0;
            *entries.entry((b, a)).or_default() += pmi / 2.0;
        }
    }
    let matrix = Sparse::from_entries(n, entries);
    eprintln!(
        "association matrix: {n} × {n}, {} entries",
        matrix.values.len()
    );
    let (values, vectors) = top_eigenpairs(&matrix, build.dimension, 4);
    let dimension = build.dimension;
    let mut rows = vec![vec![0f32; dimension]; n + 1];
    for (j, (&lambda, vector)) in values.iter().zip(&vectors).enumerate() {
        // Negative eigenvalues (contrasts the positive semidefinite part cannot express)
        // are left out: row · row approximates the association's positive part.
        let scale = lambda.max(0.0).sqrt();
        for i in 0..n {
            rows[i + 1][j] = (vector[i] * scale) as f32;
        }
    }
    let row_of = kept.iter().enumerate().map(|(i, &s)| (s, i + 1)).collect();
    Ok(Model {
        rows,
        row_of,
        dimension,
    })
}

/// A symmetric sparse matrix in compressed rows.
struct Sparse {
    n: usize,
    starts: Vec<usize>,
    columns: Vec<u32>,
    values: Vec<f64>,
}

impl Sparse {
    fn from_entries(n: usize, entries: HashMap<(u32, u32), f64>) -> Self {
        let mut sorted: Vec<((u32, u32), f64)> = entries.into_iter().collect();
        sorted.sort_by_key(|&(k, _)| k);
        let mut starts = vec![0usize; n + 1];
        for &((r, _), _) in &sorted {
            starts[r as usize + 1] += 1;
        }
        for i in 0..n {
            starts[i + 1] += starts[i];
        }
        Sparse {
            n,
            starts,
            columns: sorted.iter().map(|&((_, c), _)| c).collect(),
            values: sorted.iter().map(|&(_, v)| v).collect(),
        }
    }

    /// `self · x` for each column `x`.
    fn times(&self, columns: &[Vec<f64>]) -> Vec<Vec<f64>> {
        columns
            .iter()
            .map(|x| {
                (0..self.n)
                    .map(|r| {
                        (self.starts[r]..self.starts[r + 1])
                            .map(|k| self.values[k] * x[self.columns[k] as usize])
                            .sum()
                    })
                    .collect()
            })
            .collect()
    }
}

/// The `k` largest eigenvalues of the symmetric `matrix` and their eigenvectors, by
/// randomised subspace iteration (Halko, Martinsson and Tropp 2011) with `iterations` power
/// steps, from a fixed seed: the same inputs give the same model.
fn top_eigenpairs(matrix: &Sparse, k: usize, iterations: usize) -> (Vec<f64>, Vec<Vec<f64>>) {
    let width = (k + 16).min(matrix.n);
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = || {
        // xorshift64*: deterministic, and good enough to start a subspace iteration.
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        (seed.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut basis: Vec<Vec<f64>> = (0..width)
        .map(|_| (0..matrix.n).map(|_| random()).collect())
        .collect();
    orthonormalize(&mut basis);
    for _ in 0..iterations {
        basis = matrix.times(&basis);
        orthonormalize(&mut basis);
    }
    // The matrix restricted to the subspace, and its eigen-decomposition.
    let image = matrix.times(&basis);
    let small: Vec<Vec<f64>> = basis
        .iter()
        .map(|q| image.iter().map(|y| dot(q, y)).collect())
        .collect();
    let (values, small_vectors) = jacobi_eigen(small);
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    order.truncate(k);
    let vectors = order
        .iter()
        .map(|&j| {
            let mut v = vec![0.0; matrix.n];
            for (q, &w) in basis.iter().zip(&small_vectors[j]) {
                for (vi, qi) in v.iter_mut().zip(q) {
                    *vi += w * qi;
                }
            }
            v
        })
        .collect();
    (order.iter().map(|&j| values[j]).collect(), vectors)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Modified Gram–Schmidt, twice for stability; a column that vanishes stays zero.
fn orthonormalize(columns: &mut [Vec<f64>]) {
    for _ in 0..2 {
        for i in 0..columns.len() {
            let (done, rest) = columns.split_at_mut(i);
            let column = &mut rest[0];
            for q in done.iter() {
                let projection = dot(q, column);
                column
                    .iter_mut()
                    .zip(q)
                    .for_each(|(c, qi)| *c -= projection * qi);
            }
            let norm = dot(column, column).sqrt();
            if norm > 1e-12 {
                column.iter_mut().for_each(|c| *c /= norm);
            } else {
                column.iter_mut().for_each(|c| *c = 0.0);
            }
        }
    }
}

/// Eigenvalues and eigenvectors (`vectors[j]` belongs to `values[j]`) of a small symmetric
/// matrix, by cyclic Jacobi rotations.
fn jacobi_eigen(mut a: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = a.len();
    // v[i][j]: component i of eigenvector j.
    let mut v: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    for _ in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off < 1e-20 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if a[p][q].abs() < 1e-30 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k][p], a[k][q]);
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p][k], a[q][k]);
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vkp, vkq) = (row[p], row[q]);
                    row[p] = c * vkp - s * vkq;
                    row[q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let values = (0..n).map(|i| a[i][i]).collect();
    let vectors = (0..n).map(|j| (0..n).map(|i| v[i][j]).collect()).collect();
    (values, vectors)
}

/// Writes `tokenizer.json`, `model.safetensors` and `config.json` into `build.out`.
fn write_model(
    model: &Model,
    lexicon: &Lexicon,
    pins: &[Pin],
    build: &VocabularyBuild<'_>,
) -> anyhow::Result<()> {
    // Each kept stem's forms: the lower-case form of every piece seen twice or more, its
    // capitalised form (a question's first word), and the upper-case form when seen.
    let mut forms: Vec<(String, usize)> = Vec::new();
    let mut listed: HashSet<String> = HashSet::new();
    let mut seen: Vec<(&String, &(u32, u32))> = lexicon.forms.iter().collect();
    seen.sort();
    for (surface, &(stem, count)) in seen {
        let Some(&row) = model.row_of.get(&stem) else {
            continue;
        };
        if count < 2 {
            continue;
        }
        let lower = surface.to_lowercase();
        let capital = capitalised(&lower);
        let variants = [lower, capital, surface.clone()];
        for form in variants {
            if listed.insert(form.clone()) {
                forms.push((form, row));
            }
        }
    }
    // The stem itself is often a word of its own (`listen` for `listens`, `listening`).
    for (&stem, &row) in &model.row_of {
        let stem = &lexicon.stems[stem as usize];
        for form in [stem.clone(), capitalised(stem)] {
            if listed.insert(form.clone()) {
                forms.push((form, row));
            }
        }
    }
    forms.sort();
    let mut vocab = serde_json::Map::new();
    vocab.insert("[UNK]".into(), 0.into());
    let mut mapping: Vec<i32> = vec![0];
    for (i, (form, row)) in forms.iter().enumerate() {
        vocab.insert(form.clone(), (i + 1).into());
        mapping.push(*row as i32);
    }
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false,
                          "rstrip": false, "normalized": false, "special": true}],
        "normalizer": null,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": PIECE_PATTERN},
                          "behavior": "Removed", "invert": true},
        "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    });

    // i8 rows with a per-row scale; a token's weight is its row's scale.
    let mut table: Vec<u8> = Vec::with_capacity(model.rows.len() * model.dimension);
    let mut row_scale = Vec::with_capacity(model.rows.len());
    for row in &model.rows {
        let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 0.0 };
        row_scale.push(scale);
        table.extend(row.iter().map(|v| {
            let q = if scale > 0.0 {
                (v / scale).round()
            } else {
                0.0
            };
            (q.clamp(-127.0, 127.0) as i8) as u8
        }));
    }
    let weights: Vec<f32> = mapping.iter().map(|&r| row_scale[r as usize]).collect();
    let mapping_bytes: Vec<u8> = mapping.iter().flat_map(|m| m.to_le_bytes()).collect();
    let weight_bytes: Vec<u8> = weights.iter().flat_map(|w| w.to_le_bytes()).collect();
    use safetensors::Dtype;
    use safetensors::tensor::TensorView;
    let tensors: Vec<(&str, TensorView<'_>)> = vec![
        (
            "embeddings",
            TensorView::new(Dtype::I8, vec![model.rows.len(), model.dimension], &table)?,
        ),
        (
            "mapping",
            TensorView::new(Dtype::I32, vec![mapping.len()], &mapping_bytes)?,
        ),
        (
            "weights",
            TensorView::new(Dtype::F32, vec![weights.len()], &weight_bytes)?,
        ),
    ];
    let config = json!({
        "model_type": "model2vec",
        "normalize": true,
        "hidden_dim": model.dimension,
        "codectx": {
            "what": "code vocabulary: PPMI of JSDoc words and code tokens, top eigenvectors",
            "built_by": "cargo xtask vocabulary",
            "packages": pins.iter().map(|p| format!("{}@{}", p.name, p.version)).collect::<Vec<_>>(),
            "rows": model.rows.len(),
            "max_rows": build.max_rows,
            "min_symbols": build.min_symbols,
        }
    });
    std::fs::create_dir_all(build.out)?;
    std::fs::write(
        build.out.join("tokenizer.json"),
        serde_json::to_string(&tokenizer)?,
    )?;
    std::fs::write(
        build.out.join("model.safetensors"),
        safetensors::serialize(tensors, None)?,
    )?;
    std::fs::write(
        build.out.join("config.json"),
        serde_json::to_string_pretty(&config)?,
    )?;
    let size: u64 = ["tokenizer.json", "model.safetensors", "config.json"]
        .iter()
        .map(|f| std::fs::metadata(build.out.join(f)).map_or(0, |m| m.len()))
        .sum();
    eprintln!(
        "wrote {} ({} rows × {}, {} token forms, {:.2} MB)",
        build.out.display(),
        model.rows.len(),
        model.dimension,
        forms.len(),
        size as f64 / 1e6
    );
    Ok(())
}

/// `word` with its first letter in upper case (a question's first word).
fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use codectx_embed::{Embedder, StaticEmbedder, cosine};

    /// A corpus where removing goes with `splice` and listening with `addEventListener`,
    /// never in the same words: the model must learn the pairing, and the static provider
    /// must read the model it writes.
    #[tokio::test]
    async fn a_learned_vocabulary_pairs_english_with_code_tokens() {
        let splitter = piece_splitter().unwrap();
        let stemmer = Stemmer::create(Algorithm::English);
        let mut lexicon = Lexicon::default();
        let mut pairs = Vec::new();
        for i in 0..30 {
            let (doc, code) = match i % 3 {
                0 => (
                    "Removes the entry from the list.",
                    "items.splice(index, 1); return items;",
                ),
                1 => (
                    "Listens for the event on the element.",
                    "element.addEventListener(name, handler);",
                ),
                _ => (
                    "Formats the value as text for the user.",
                    "return String(value).padStart(width);",
                ),
            };
            let doc = lexicon.bag(&pieces(&splitter, doc), &stemmer);
            let code = lexicon.bag(&pieces(&splitter, code), &stemmer);
            pairs.push(Pair { doc, code });
        }
        let out = tempfile::tempdir().unwrap();
        let build = VocabularyBuild {
            pins: Path::new("unused"),
            tuning_pins: Path::new("unused"),
            out: out.path(),
            dimension: 4,
            max_rows: 100,
            min_symbols: 2,
        };
        let model = train(&pairs, &lexicon, &build).unwrap();
        write_model(&model, &lexicon, &[], &build).unwrap();

        let embedder = StaticEmbedder::load(out.path()).unwrap();
        let chunks = embedder
            .embed_documents(&[
                "list.splice(i, 1)".to_string(),
                "button.addEventListener('click', onClick)".to_string(),
            ])
            .await
            .unwrap();
        for (query, expected) in [("removes an entry", 0), ("Listen to clicks", 1)] {
            let q = embedder.embed_query(query).await.unwrap();
            let scores: Vec<f32> = chunks.iter().map(|c| cosine(&q, c)).collect();
            assert!(
                scores[expected] > scores[1 - expected] + 0.2,
                "{query}: {scores:?}"
            );
        }
    }

    #[test]
    fn pieces_split_identifiers_as_the_tokenizer_will() {
        let splitter = piece_splitter().unwrap();
        assert_eq!(
            pieces(&splitter, "getHTTPResponse(user_name, 2) // Removes it"),
            ["get", "HTTP", "Response", "user", "name", "Removes", "it"]
        );
    }

    #[test]
    fn the_eigenpairs_of_a_known_matrix_are_found() {
        // diag(5, 3, -4) rotated is still what a 3×3 Jacobi finds; the subspace iteration
        // keeps the two largest.
        let entries: HashMap<(u32, u32), f64> =
            [((0, 0), 5.0), ((1, 1), 3.0), ((2, 2), -4.0), ((3, 3), 0.5)]
                .into_iter()
                .collect();
        let m = Sparse::from_entries(4, entries);
        let (values, vectors) = top_eigenpairs(&m, 2, 3);
        assert!(
            (values[0] - 5.0).abs() < 1e-9 && (values[1] - 3.0).abs() < 1e-9,
            "{values:?}"
        );
        assert!((vectors[0][0].abs() - 1.0).abs() < 1e-9);
    }
}
