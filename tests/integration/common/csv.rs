//! The report's CSV tables read independently of the crate's writer: quoted fields, doubled
//! quotes, CRLF, a quoted comma or line break kept in its field.

use std::collections::BTreeMap;
use std::path::Path;

/// A minimal CSV reader, independent of the crate's: quoted fields, doubled quotes, CRLF.
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = vec![];
    let (mut row, mut field, mut quoted) = (vec![], String::new(), false);
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match (quoted, c) {
            (true, '"') if it.peek() == Some(&'"') => {
                it.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// A CSV file as rows of column → value (a row of another length than the header fails).
pub fn read_csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rows = parse_csv(&text);
    let header = rows[0].clone();
    rows[1..]
        .iter()
        .map(|r| {
            assert_eq!(
                r.len(),
                header.len(),
                "{}: ragged row {r:?}",
                path.display()
            );
            header.iter().cloned().zip(r.iter().cloned()).collect()
        })
        .collect()
}

/// One line's cells (a line of a table whose cells hold no line break).
pub fn parse_line(line: &str) -> Vec<String> {
    parse_csv(line)
        .into_iter()
        .next()
        .unwrap_or_else(|| vec![String::new()])
}
