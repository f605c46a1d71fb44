//! What people read: the live console table, and reports built from results files.

pub mod console;
