//! LanceDB plumbing shared by every step: SQL literals for filters, batches in and out.

use std::sync::Arc;

use lancedb::arrow::arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
use lancedb::arrow::arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, RecordBatch, RecordBatchIterator,
};
use lancedb::arrow::arrow_schema::{DataType, Field};

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
pub(crate) fn in_list<S: AsRef<str>>(column: &str, values: &[S]) -> String {
    let values: Vec<String> = values.iter().map(|v| sql_string(v.as_ref())).collect();
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

/// The Arrow type of a column of `dimension`-float vectors.
pub(crate) fn vector_type(dimension: usize) -> DataType {
    DataType::FixedSizeList(
        Arc::new(Field::new("item", DataType::Float32, true)),
        dimension as i32,
    )
}

/// A column of `dimension`-float vectors; a missing vector, or one of another length, is null.
pub(crate) fn vector_array<'v>(
    dimension: usize,
    vectors: impl IntoIterator<Item = Option<&'v [f32]>>,
) -> ArrayRef {
    let mut builder = FixedSizeListBuilder::new(Float32Builder::new(), dimension as i32);
    for vector in vectors {
        match vector {
            Some(v) if v.len() == dimension => {
                builder.values().append_slice(v);
                builder.append(true);
            }
            _ => {
                builder.values().append_nulls(dimension);
                builder.append(false);
            }
        }
    }
    Arc::new(builder.finish())
}

/// Row `i` of a vector column, `None` when it is null.
pub(crate) fn vector_at(column: &FixedSizeListArray, i: usize) -> Option<&[f32]> {
    if column.is_null(i) {
        return None;
    }
    let values = column.values().as_any().downcast_ref::<Float32Array>()?;
    let start = column.value_offset(i) as usize;
    values
        .values()
        .get(start..start + column.value_length() as usize)
}
