//! [`ChunkText`]: a chunk's `full_source` or `embedding_text`.

use std::fmt;
use std::ops::Deref;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A chunk's text: owned when the chunker or the index made it, or a slice of a larger
/// buffer (a mapped project image) that is only read when the text is.
///
/// Most chunks a project holds are never shown: a search on babel reads a few hundred of its
/// 75,000 bodies. Sharing the buffer instead of copying each body into its own `String`
/// keeps the unread ones out of memory (a mapped page is not even loaded until touched).
///
/// It reads as a `&str` (`Deref`), compares, prints and serialises as its text.
#[derive(Clone)]
pub struct ChunkText(Repr);

#[derive(Clone)]
enum Repr {
    Owned(Box<str>),
    /// Bytes not yet known to be UTF-8: they are checked when read, so that a text nobody
    /// reads costs nothing.
    Shared(Bytes),
}

impl ChunkText {
    /// A text read from `bytes`, a slice of a buffer another reader shares (see
    /// [`Bytes::slice_ref`]). Bytes that are not UTF-8 read as their valid prefix, which a
    /// cache with a damaged byte may give; nothing panics.
    pub fn shared(bytes: Bytes) -> Self {
        ChunkText(Repr::Shared(bytes))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Owned(text) => text,
            Repr::Shared(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
            },
        }
    }

    /// Its length in bytes as stored, without reading it (the text's length, unless the
    /// bytes are damaged).
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Owned(text) => text.len(),
            Repr::Shared(bytes) => bytes.len(),
        }
    }

    /// Whether it is empty, without reading it.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for ChunkText {
    fn default() -> Self {
        ChunkText(Repr::Owned(Box::default()))
    }
}

impl Deref for ChunkText {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for ChunkText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<String> for ChunkText {
    fn from(text: String) -> Self {
        ChunkText(Repr::Owned(text.into_boxed_str()))
    }
}

impl From<&str> for ChunkText {
    fn from(text: &str) -> Self {
        ChunkText(Repr::Owned(text.into()))
    }
}

impl PartialEq for ChunkText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ChunkText {}

impl PartialEq<str> for ChunkText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ChunkText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for ChunkText {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl fmt::Debug for ChunkText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for ChunkText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ChunkText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ChunkText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_text_reads_compares_and_serialises_as_an_owned_one() {
        let buffer = Bytes::from_static(b"prefix export const x = 1;\n suffix");
        let shared = ChunkText::shared(buffer.slice(7..27));
        let owned = ChunkText::from("export const x = 1;\n");
        assert_eq!(shared, owned);
        assert_eq!(shared.len(), 20);
        assert_eq!(&*shared, "export const x = 1;\n");
        assert_eq!(
            serde_json::to_string(&shared).unwrap(),
            serde_json::to_string(&owned).unwrap()
        );
    }

    #[test]
    fn shared_bytes_that_are_not_utf8_read_as_their_valid_prefix() {
        let shared = ChunkText::shared(Bytes::from_static(b"let a = 1;\xff\xfe"));
        assert_eq!(shared.as_str(), "let a = 1;");
        assert_eq!(shared.len(), 12, "the length is the stored one");
    }
}
