//! The one flattening of a case into named cells ([`case_table`]) that every per-case export
//! uses (results.csv, the HTML case table). The [`Table`] type itself and CSV output live in
//! the presentation layer ([`crate::present::table`]), re-exported here.
//!
//! Flattening is driven by the results schema itself (serde), not by a hand-written list of
//! fields: a field added to the schema appears as a column without touching this file. Column
//! names are the field paths in results.json (`params.workload`, `timing.time_s`); arrays of
//! numbers (raw samples, per-rank means) stay in results.json and are summarised by the
//! `report.*` columns instead.

use super::analyze::Entry;
use super::load::Source;
use serde::ser::{self, Serialize};
use std::collections::HashMap;
use std::fmt;

use crate::present::table::{Cell, NumFmt, Table};

/// Flattens any serialisable value into (path, cell) pairs, in the value's field order.
/// Objects nest with `.`; arrays of objects are indexed (`phases.0.name`); arrays of scalars
/// are left out. A serde `Serializer` that never produces text, so it is cheap per case.
pub(crate) fn flatten<T: Serialize>(prefix: &str, value: &T, out: &mut Vec<(String, Cell)>) {
    // Every type of the results schema serialises; a custom error cannot occur.
    let _ = value.serialize(Flat {
        prefix: prefix.to_string(),
        out,
        in_seq: false,
    });
}

#[derive(Debug)]
struct FlatError(String);

impl fmt::Display for FlatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for FlatError {}
impl ser::Error for FlatError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        FlatError(msg.to_string())
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        let mut s = String::with_capacity(prefix.len() + 1 + key.len());
        s.push_str(prefix);
        s.push('.');
        s.push_str(key);
        s
    }
}

struct Flat<'o> {
    prefix: String,
    out: &'o mut Vec<(String, Cell)>,
    /// Scalars inside arrays are left out (raw samples stay in results.json).
    in_seq: bool,
}

impl Flat<'_> {
    fn put(self, c: Cell) -> Result<(), FlatError> {
        if !self.in_seq {
            let c = match c {
                Cell::UInt(v) if self.prefix.ends_with("bytes") => {
                    Cell::Num(v as f64, NumFmt::Bytes)
                }
                Cell::Num(v, _) => Cell::Num(v, num_fmt_for(&self.prefix)),
                c => c,
            };
            self.out.push((self.prefix, c));
        }
        Ok(())
    }
}

/// Nested containers: structs and maps (`Key` set by a map key) and sequences.
struct Nest<'o> {
    prefix: String,
    out: &'o mut Vec<(String, Cell)>,
    index: usize,
    key: Option<String>,
}

impl Nest<'_> {
    fn child(&mut self, key: &str, in_seq: bool) -> Flat<'_> {
        Flat {
            prefix: join(&self.prefix, key),
            out: self.out,
            in_seq,
        }
    }
}

impl<'o> Flat<'o> {
    fn nest(self) -> Nest<'o> {
        Nest {
            prefix: self.prefix,
            out: self.out,
            index: 0,
            key: None,
        }
    }
}

impl<'o> ser::Serializer for Flat<'o> {
    type Ok = ();
    type Error = FlatError;
    type SerializeSeq = Nest<'o>;
    type SerializeTuple = Nest<'o>;
    type SerializeTupleStruct = Nest<'o>;
    type SerializeTupleVariant = Nest<'o>;
    type SerializeMap = Nest<'o>;
    type SerializeStruct = Nest<'o>;
    type SerializeStructVariant = Nest<'o>;

    fn serialize_bool(self, v: bool) -> Result<(), FlatError> {
        self.put(Cell::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<(), FlatError> {
        self.put(Cell::Int(i64::from(v)))
    }
    fn serialize_i16(self, v: i16) -> Result<(), FlatError> {
        self.put(Cell::Int(i64::from(v)))
    }
    fn serialize_i32(self, v: i32) -> Result<(), FlatError> {
        self.put(Cell::Int(i64::from(v)))
    }
    fn serialize_i64(self, v: i64) -> Result<(), FlatError> {
        self.put(Cell::Int(v))
    }
    fn serialize_u8(self, v: u8) -> Result<(), FlatError> {
        self.put(Cell::UInt(u64::from(v)))
    }
    fn serialize_u16(self, v: u16) -> Result<(), FlatError> {
        self.put(Cell::UInt(u64::from(v)))
    }
    fn serialize_u32(self, v: u32) -> Result<(), FlatError> {
        self.put(Cell::UInt(u64::from(v)))
    }
    fn serialize_u64(self, v: u64) -> Result<(), FlatError> {
        self.put(Cell::UInt(v))
    }
    fn serialize_f32(self, v: f32) -> Result<(), FlatError> {
        self.put(Cell::num(f64::from(v), NumFmt::Sig))
    }
    fn serialize_f64(self, v: f64) -> Result<(), FlatError> {
        self.put(Cell::num(v, NumFmt::Sig))
    }
    fn serialize_char(self, v: char) -> Result<(), FlatError> {
        self.put(Cell::Text(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<(), FlatError> {
        self.put(Cell::Text(v.to_string()))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), FlatError> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), FlatError> {
        self.put(Cell::Empty)
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<(), FlatError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), FlatError> {
        self.put(Cell::Empty)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), FlatError> {
        self.put(Cell::Empty)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), FlatError> {
        self.put(Cell::Text(variant.to_string()))
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), FlatError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), FlatError> {
        let prefix = join(&self.prefix, variant);
        v.serialize(Flat {
            prefix,
            out: self.out,
            in_seq: self.in_seq,
        })
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Nest<'o>, FlatError> {
        Ok(self.nest())
    }
    fn serialize_tuple(self, _: usize) -> Result<Nest<'o>, FlatError> {
        Ok(self.nest())
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Nest<'o>, FlatError> {
        Ok(self.nest())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Nest<'o>, FlatError> {
        let mut n = self.nest();
        n.prefix = join(&n.prefix, variant);
        Ok(n)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Nest<'o>, FlatError> {
        Ok(self.nest())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Nest<'o>, FlatError> {
        Ok(self.nest())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Nest<'o>, FlatError> {
        let mut n = self.nest();
        n.prefix = join(&n.prefix, variant);
        Ok(n)
    }
}

impl Nest<'_> {
    fn element<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), FlatError> {
        let i = self.index.to_string();
        self.index += 1;
        v.serialize(self.child(&i, true))
    }
}

// Sequences of every kind flatten the same way: element i is column `prefix.i`.
macro_rules! nest_elements {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Nest<'_> {
            type Ok = ();
            type Error = FlatError;
            fn $method<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), FlatError> {
                self.element(v)
            }
            fn end(self) -> Result<(), FlatError> {
                Ok(())
            }
        }
    )*};
}
nest_elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Nest<'_> {
    type Ok = ();
    type Error = FlatError;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, k: &T) -> Result<(), FlatError> {
        // Map keys are strings or numbers; their JSON text without quotes names the column.
        let text = serde_json::to_string(k).map_err(|e| FlatError(e.to_string()))?;
        self.key = Some(text.trim_matches('"').to_string());
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), FlatError> {
        let k = self.key.take().unwrap_or_default();
        v.serialize(self.child(&k, false))
    }
    fn end(self) -> Result<(), FlatError> {
        Ok(())
    }
}

// Structs and struct variants: field `key` is column `prefix.key`.
macro_rules! nest_fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Nest<'_> {
            type Ok = ();
            type Error = FlatError;
            fn serialize_field<T: ?Sized + Serialize>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), FlatError> {
                v.serialize(self.child(key, false))
            }
            fn end(self) -> Result<(), FlatError> {
                Ok(())
            }
        }
    )*};
}
nest_fields!(SerializeStruct, SerializeStructVariant);

/// Display format by the unit in a field name.
fn num_fmt_for(path: &str) -> NumFmt {
    let mut parts = path.rsplit('.');
    let last = parts.next().unwrap_or("");
    let parent = parts.next().unwrap_or("");
    if last.ends_with("unix_s") {
        NumFmt::Fixed(3)
    } else if last.ends_with("_s") || (parent.ends_with("_s") && last != "cv") {
        // `time_s`, and the fields of a summary in seconds (`stats_s.median`)
        NumFmt::Seconds
    } else {
        NumFmt::Sig
    }
}

/// The flattened case: every schema field, then where it came from, then what the report
/// derives from it alone. THE one definition of a case row.
pub(crate) fn case_row(entry: &Entry<'_>, sources: &[Source]) -> Vec<(String, Cell)> {
    let mut row = Vec::with_capacity(80);
    flatten("", entry.case, &mut row);
    let src = &sources[entry.source];
    row.push((
        "source.path".into(),
        Cell::text(src.path.display().to_string()),
    ));
    row.push((
        "source.run_id".into(),
        Cell::text(src.file.run.run_id.clone()),
    ));
    for (k, v) in &src.file.run.labels {
        row.push((format!("source.labels.{k}"), Cell::text(v.clone())));
    }
    let s = entry.spread;
    row.push((
        "report.p5_s".into(),
        Cell::opt(s.map(|s| s.p5_s), NumFmt::Seconds),
    ));
    row.push((
        "report.p95_s".into(),
        Cell::opt(s.map(|s| s.p95_s), NumFmt::Seconds),
    ));
    row.push((
        "report.noisy".into(),
        s.map_or(Cell::Empty, |_| Cell::Bool(entry.noisy)),
    ));
    let im = entry.imbalance;
    row.push((
        "report.imbalance".into(),
        Cell::opt(im.map(|i| i.ratio), NumFmt::Ratio),
    ));
    row.push((
        "report.slowest_rank".into(),
        im.map_or(Cell::Empty, |i| Cell::UInt(i.slowest_rank as u64)),
    ));
    row.push((
        "report.slowest_node".into(),
        entry
            .slowest
            .map_or(Cell::Empty, |r| Cell::text(r.node_name.clone())),
    ));
    row.push((
        "report.slowest_host".into(),
        entry
            .slowest
            .map_or(Cell::Empty, |r| Cell::text(r.host.clone())),
    ));
    // Every figure of a stand-in case is a CPU test double's: said on its own row.
    row.push((
        "report.stand_in".into(),
        Cell::Bool(super::nccl::is_standin(entry)),
    ));
    row
}

/// Merges per-row column lists into one ordered header: a column first seen in a later row is
/// placed right after its predecessor in that row, so optional fields stay beside their
/// neighbours.
fn merge_columns(rows: &[Vec<(String, Cell)>]) -> Vec<String> {
    let mut cols: Vec<String> = Vec::new();
    let mut pos: HashMap<String, usize> = HashMap::new();
    for r in rows {
        // Position in `cols` of this row's previous key.
        let mut after: Option<usize> = None;
        for (k, _) in r {
            if let Some(&p) = pos.get(k) {
                after = Some(p);
                continue;
            }
            let at = after.map_or(0, |p| p + 1);
            cols.insert(at, k.clone());
            // Insertions are rare (a new optional field): re-index only then.
            pos = cols
                .iter()
                .enumerate()
                .map(|(i, c)| (c.clone(), i))
                .collect();
            after = Some(at);
        }
    }
    cols
}

/// One row per case, every column any case has (THE flattening, used by results.csv and the
/// HTML case table).
pub(crate) fn case_table(entries: &[Entry<'_>], sources: &[Source]) -> Table {
    let rows: Vec<Vec<(String, Cell)>> = entries.iter().map(|e| case_row(e, sources)).collect();
    let columns = merge_columns(&rows);
    let index: HashMap<&str, usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    let rows = rows
        .into_iter()
        .map(|r| {
            let mut cells = vec![Cell::Empty; columns.len()];
            for (k, c) in r {
                cells[index[k.as_str()]] = c;
            }
            cells
        })
        .collect();
    Table { columns, rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize)]
    struct Inner {
        b: f64,
        a: Option<String>,
    }
    #[derive(Serialize)]
    struct Outer {
        z: u32,
        inner: Inner,
        samples_s: Vec<f64>,
        phases: Vec<Inner>,
        flag: bool,
    }

    #[test]
    fn flatten_keeps_field_order_and_skips_scalar_arrays() {
        let v = Outer {
            z: 3,
            inner: Inner { b: 1.5, a: None },
            samples_s: vec![1.0, 2.0],
            phases: vec![Inner {
                b: 2.0,
                a: Some("x,\"y\"".into()),
            }],
            flag: true,
        };
        let mut out = Vec::new();
        flatten("", &v, &mut out);
        let names: Vec<&str> = out.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "z",
                "inner.b",
                "inner.a",
                "phases.0.b",
                "phases.0.a",
                "flag"
            ]
        );
        assert_eq!(out[0].1, Cell::UInt(3));
        assert_eq!(out[2].1, Cell::Empty);
        assert_eq!(out[4].1, Cell::text("x,\"y\""));
    }

    #[test]
    fn columns_merge_beside_their_neighbours() {
        let r = |ks: &[&str]| -> Vec<(String, Cell)> {
            ks.iter().map(|k| (k.to_string(), Cell::Empty)).collect()
        };
        let cols = merge_columns(&[r(&["id", "w", "time"]), r(&["id", "w", "op", "time", "x"])]);
        assert_eq!(cols, ["id", "w", "op", "time", "x"]);
        let cols = merge_columns(&[r(&["b", "c"]), r(&["a", "b"])]);
        assert_eq!(cols, ["a", "b", "c"]);
    }

    #[test]
    fn number_formats_follow_the_field() {
        assert_eq!(num_fmt_for("timing.stats_s.median"), NumFmt::Seconds);
        assert_eq!(num_fmt_for("timing.stats_s.cv"), NumFmt::Sig);
        assert_eq!(num_fmt_for("started_unix_s"), NumFmt::Fixed(3));
        assert_eq!(num_fmt_for("busbw_gbps"), NumFmt::Sig);
    }
}
