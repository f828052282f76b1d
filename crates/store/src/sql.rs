//! LanceDB plumbing shared by every step: SQL literals for filters, batches in and out.

use lancedb::arrow::arrow_array::{RecordBatch, RecordBatchIterator};

pub(crate) fn reader(
    batch: RecordBatch,
) -> Box<dyn lancedb::arrow::arrow_array::RecordBatchReader + Send> {
    let schema = batch.schema();
    Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema))
}

/// A SQL string literal.
pub(crate) fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `column IN ('a', 'b', …)` for a LanceDB filter.
pub(crate) fn in_list(column: &str, values: &[String]) -> String {
    let values: Vec<String> = values.iter().map(|v| sql_string(v)).collect();
    format!("{column} IN ({})", values.join(", "))
}

/// A text column of `batch`, or why it is not one.
pub(crate) fn text_column<'b>(
    batch: &'b lancedb::arrow::arrow_array::RecordBatch,
    name: &str,
) -> Result<&'b lancedb::arrow::arrow_array::StringArray, String> {
    batch
        .column_by_name(name)
        .and_then(|c| {
            c.as_any()
                .downcast_ref::<lancedb::arrow::arrow_array::StringArray>()
        })
        .ok_or_else(|| format!("column {name} is missing or not text"))
}

/// A 32-bit float column of `batch` (a search's `_score` or `_distance`), or why it is not
/// one.
pub(crate) fn float_column<'b>(
    batch: &'b RecordBatch,
    name: &str,
) -> Result<&'b lancedb::arrow::arrow_array::Float32Array, String> {
    batch
        .column_by_name(name)
        .and_then(|c| {
            c.as_any()
                .downcast_ref::<lancedb::arrow::arrow_array::Float32Array>()
        })
        .ok_or_else(|| format!("column {name} is missing or not 32-bit floats"))
}

/// A vector column of `batch` (fixed-size lists of floats), or why it is not one.
pub(crate) fn vector_column<'b>(
    batch: &'b RecordBatch,
    name: &str,
) -> Result<&'b lancedb::arrow::arrow_array::FixedSizeListArray, String> {
    batch
        .column_by_name(name)
        .and_then(|c| {
            c.as_any()
                .downcast_ref::<lancedb::arrow::arrow_array::FixedSizeListArray>()
        })
        .ok_or_else(|| format!("column {name} is missing or not vectors"))
}
