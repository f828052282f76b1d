//! The natural-language view of a chunk: what an English sentence model (all-MiniLM-L6-v2
//! and its kin) was trained to read. Such a model sees `getUserName(id){return db.q(…)}` as
//! noise; it reads "get user name" well. Code models keep the raw `embedding_text`.

use crate::CodeChunk;

/// Words of the view, at most: a sentence model reads about 256 word pieces.
const VIEW_WORDS: usize = 160;

/// The chunk in words: what it is and where (`method verify token of token service in
/// src auth`), its doc comment, its signature with identifiers split, then the distinct
/// words of its code's identifiers in order of first use.
pub fn natural_language_view(chunk: &CodeChunk) -> String {
    let mut lines = Vec::new();
    let path = chunk
        .relative_path
        .rsplit_once('.')
        .map_or(chunk.relative_path.as_str(), |(stem, _)| stem);
    let mut head = format!("{} {}", chunk.node_kind, words(&chunk.name).join(" "));
    if let Some(parent) = &chunk.parent_name {
        head.push_str(&format!(" of {}", words(parent).join(" ")));
    }
    head.push_str(&format!(" in {}", words(path).join(" ")));
    lines.push(head);
    if let Some(doc) = chunk.jsdoc.as_deref().filter(|d| !d.trim().is_empty()) {
        lines.push(doc.trim().to_string());
    }
    if !chunk.signature.is_empty() {
        lines.push(words(&chunk.signature).join(" "));
    }
    let mut seen = std::collections::HashSet::new();
    let budget = VIEW_WORDS.saturating_sub(lines.iter().map(|l| l.split(' ').count()).sum());
    let body: Vec<String> = words(&chunk.embedding_text)
        .into_iter()
        .filter(|w| w.len() > 1 && seen.insert(w.clone()))
        .take(budget)
        .collect();
    if !body.is_empty() {
        lines.push(body.join(" "));
    }
    lines.join("\n")
}

/// Lower-case words of identifiers and text: `getHTTPResponse_v2` → `get http response v`.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphabetic() {
            flush(&mut current, &mut out);
            continue;
        }
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1);
        // A word starts at a capital after a lower-case letter (`getUser`) or at the last
        // capital of a run followed by lower case (`HTTPResponse`).
        let boundary = c.is_uppercase()
            && prev.is_some_and(|p| {
                p.is_lowercase() || (p.is_uppercase() && next.is_some_and(|n| n.is_lowercase()))
            });
        if boundary {
            flush(&mut current, &mut out);
        }
        current.extend(c.to_lowercase());
    }
    flush(&mut current, &mut out);
    out
}

fn flush(current: &mut String, out: &mut Vec<String>) {
    if !current.is_empty() {
        out.push(std::mem::take(current));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_become_words() {
        assert_eq!(
            words("getHTTPResponse_v2(userName)"),
            ["get", "http", "response", "v", "user", "name"]
        );
        // Python's and Rust's snake_case, Go's exported capitals.
        assert_eq!(words("validate_token"), ["validate", "token"]);
        assert_eq!(words("NewAuthHandler"), ["new", "auth", "handler"]);
        assert_eq!(words("MAX_RETRIES"), ["max", "retries"]);
    }
}
