//! What people read: reports built from results files (the live console table is
//! [`crate::run::console`]).

pub mod analyze;
pub mod build;
pub mod ddp;
pub mod derive;
pub use crate::present::doc;
pub mod document;
pub use crate::present::html;
pub mod load;
pub use crate::present::markdown;
pub mod model;
pub mod plot;
pub mod table;

pub use build::{generate, run, Outputs, Request, Written};
