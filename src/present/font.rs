//! The one font charts are drawn with (the report's and `history show --chart`'s).

use std::sync::OnceLock;

/// DejaVu Sans (Bitstream Vera licence, assets/fonts/DejaVuSans-LICENSE.txt): PNG text needs a
/// font and nodes often have none installed.
const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Registers the embedded font as plotters' `sans-serif`, once per process; whether it took.
pub(crate) fn register() -> bool {
    static DONE: OnceLock<bool> = OnceLock::new();
    *DONE.get_or_init(|| {
        plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, FONT)
            .is_ok()
    })
}
