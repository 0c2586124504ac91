//! Parquet tables for `mslink sim --format parquet`: flows.parquet and timeseries.parquet, the
//! columns of flows.csv and timeseries.csv.
//!
//! Contract: a [`Table`] writes one Parquet file through the `parquet` crate's low-level column
//! writers (no Arrow), uncompressed, every column REQUIRED: text as BYTE_ARRAY (UTF8), counts
//! as INT64 (unsigned ones annotated UINT_64, stored as their bit pattern), measurements as
//! DOUBLE. Rows are buffered per column and written as a row group every [`ROW_GROUP`] rows, so
//! memory stays bounded by one row group whatever the run's length (as output.rs's CSVs stream).
//! The values are the CSV's: the same numbers, strings unquoted.

use std::io::Write;
use std::sync::Arc;

use anyhow::{bail, Result};
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

/// Rows per row group.
pub(crate) const ROW_GROUP: usize = 65_536;

/// The type of a column.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// UTF-8 text.
    Str,
    /// A signed integer.
    Int,
    /// An unsigned integer.
    UInt,
    /// A float.
    F64,
}

/// One cell of a row.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Val<'a> {
    Str(&'a str),
    Int(i64),
    UInt(u64),
    F64(f64),
}

enum Col {
    Str(Vec<ByteArray>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

/// A Parquet file being written row by row (see the module contract).
pub(crate) struct Table<W: Write + Send> {
    w: SerializedFileWriter<W>,
    cols: Vec<Col>,
    rows: usize,
}

impl<W: Write + Send> Table<W> {
    /// Starts a file of `columns` (name, type) on `out`.
    pub(crate) fn new(out: W, columns: &[(String, Kind)]) -> Result<Self> {
        let mut fields = Vec::with_capacity(columns.len());
        let mut cols = Vec::with_capacity(columns.len());
        for (name, kind) in columns {
            let (physical, logical, col) = match kind {
                Kind::Str => (
                    Physical::BYTE_ARRAY,
                    Some(LogicalType::String),
                    Col::Str(Vec::new()),
                ),
                Kind::Int => (Physical::INT64, None, Col::I64(Vec::new())),
                Kind::UInt => (
                    Physical::INT64,
                    Some(LogicalType::Integer {
                        bit_width: 64,
                        is_signed: false,
                    }),
                    Col::I64(Vec::new()),
                ),
                Kind::F64 => (Physical::DOUBLE, None, Col::F64(Vec::new())),
            };
            fields.push(Arc::new(
                Type::primitive_type_builder(name, physical)
                    .with_repetition(Repetition::REQUIRED)
                    .with_logical_type(logical)
                    .build()?,
            ));
            cols.push(col);
        }
        let schema = Arc::new(
            Type::group_type_builder("schema")
                .with_fields(fields)
                .build()?,
        );
        let props = Arc::new(WriterProperties::builder().build());
        Ok(Table {
            w: SerializedFileWriter::new(out, schema, props)?,
            cols,
            rows: 0,
        })
    }

    /// Appends one row, a value per column in the order of [`Table::new`].
    pub(crate) fn row(&mut self, vals: &[Val]) -> Result<()> {
        if vals.len() != self.cols.len() {
            bail!(
                "a row of {} values for {} columns",
                vals.len(),
                self.cols.len()
            );
        }
        for (c, v) in self.cols.iter_mut().zip(vals) {
            match (c, *v) {
                (Col::Str(c), Val::Str(s)) => c.push(ByteArray::from(s)),
                (Col::I64(c), Val::Int(i)) => c.push(i),
                (Col::I64(c), Val::UInt(u)) => c.push(u as i64),
                (Col::F64(c), Val::F64(f)) => c.push(f),
                (_, v) => bail!("value {v:?} does not fit its column"),
            }
        }
        self.rows += 1;
        if self.rows == ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the buffered rows as one row group.
    fn flush(&mut self) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut rg = self.w.next_row_group()?;
        let mut cols = self.cols.iter_mut();
        while let Some(mut cw) = rg.next_column()? {
            let Some(c) = cols.next() else {
                bail!("more columns in the schema than buffered");
            };
            match c {
                Col::Str(v) => {
                    cw.typed::<ByteArrayType>().write_batch(v, None, None)?;
                    v.clear();
                }
                Col::I64(v) => {
                    cw.typed::<Int64Type>().write_batch(v, None, None)?;
                    v.clear();
                }
                Col::F64(v) => {
                    cw.typed::<DoubleType>().write_batch(v, None, None)?;
                    v.clear();
                }
            }
            cw.close()?;
        }
        rg.close()?;
        self.rows = 0;
        Ok(())
    }

    /// Writes the last row group and the footer.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.flush()?;
        self.w.close()?;
        Ok(())
    }
}
