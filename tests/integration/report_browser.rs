//! report.html in a real browser (Debian's chromium, headless; `bash ci/setup.sh --browser`
//! installs it): the page renders without console messages, its own script runs (the sortable
//! tables mark the page), and hostile strings from a results file (labels, host and node names,
//! messages, the title) stay text: no injected script runs, no injected element exists.
//!
//! A control page first proves the harness sees console output and script effects, so the
//! checks on the report cannot pass by seeing nothing.

use crate::common;

use common::{bin, fixture, tmpdir};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const CHROMIUM: &str = "/usr/bin/chromium";
const PWNED: &str = "PWNED";

/// What the browser saw: the DOM after scripts ran, and console lines.
struct Page {
    dom: String,
    console: Vec<String>,
}

fn open(url: &str) -> Page {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} not found: install it with `bash ci/setup.sh --browser` (Debian's chromium)"
    );
    // Chromium's processes take every core for a moment: not while another test measures real
    // runs (common::quiet).
    let _quiet = common::quiet();
    // A fresh profile per page: tests run in parallel and chromium locks its profile.
    static N: AtomicUsize = AtomicUsize::new(0);
    let profile = tmpdir(&format!(
        "chromium-profile-{}",
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let o = Command::new("timeout")
        .args(["-k", "5", "120", CHROMIUM])
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("start chromium");
    let _ = std::fs::remove_dir_all(&profile);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "chromium failed: {stderr}");
    Page {
        dom: String::from_utf8_lossy(&o.stdout).into_owned(),
        console: stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .map(str::to_string)
            .collect(),
    }
}

fn url(p: &Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

#[test]
fn the_harness_sees_console_output_and_script_effects() {
    let dir = tmpdir("browser-control");
    let page = dir.join("control.html");
    std::fs::write(
        &page,
        format!("<!DOCTYPE html><html><head><title>t</title></head><body><script>console.error('control'); document.title='{PWNED}';</script></body></html>"),
    )
    .unwrap();
    let p = open(&url(&page));
    assert!(
        p.console.iter().any(|l| l.contains("control")),
        "{:?}",
        p.console
    );
    assert!(
        p.dom.contains(&format!("<title>{PWNED}</title>")),
        "{}",
        p.dom
    );
}

#[test]
fn report_renders_cleanly_and_hostile_strings_stay_text() {
    let dir = tmpdir("browser-report");
    let input = fixture::write(&dir, "hostile.json", &fixture::hostile());
    let out: PathBuf = dir.join("rep");
    let o = Command::new(bin())
        .args([
            "report",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args([
            "--title",
            &format!("<script>document.title='{PWNED}'</script>"),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let p = open(&url(&out.join("report.html")));
    // No console message at all: no script error, no CSP violation, no failed load.
    assert!(p.console.is_empty(), "console: {:#?}", p.console);
    // The page's own script ran (the sortable tables mark the document).
    assert!(
        p.dom.contains("data-sortable=\""),
        "the report's script did not run"
    );
    // No injected script ran and no injected element exists.
    assert!(
        !p.dom.contains(&format!("<title>{PWNED}")),
        "a hostile script ran"
    );
    assert_eq!(
        p.dom.matches("<script").count(),
        1,
        "only the report's own script"
    );
    assert!(!p.dom.contains("<img"), "a hostile element was created");
    // The hostile strings are there, as text.
    assert!(p.dom.contains(&format!(
        "&lt;script&gt;document.title='{PWNED}'&lt;/script&gt;"
    )));
    assert!(p.dom.contains("&lt;img src=x onerror="));
    // Charts are inline SVG, drawn with text.
    assert!(p.dom.matches("<svg").count() >= 2);
}

/// Clicking a header sorts the table by that column's numbers, then reverses it. (The check
/// runs in a copy of the page without its Content Security Policy, which would block it.)
#[test]
fn clicking_a_header_sorts_numerically() {
    let dir = tmpdir("browser-sort");
    let out = dir.join("rep");
    let o = Command::new(bin())
        .args(["report", "tests/golden/results-v1.json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let start = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let end = start + html[start..].find('>').unwrap() + 1;
    let probe = r#"<script>
(function(){
  var ts=document.querySelectorAll('table.sortable'); var t=ts[ts.length-1];
  var ths=t.tHead.rows[0].cells; var col=-1;
  for(var i=0;i<ths.length;i++){ if(ths[i].textContent==='timing.time_s'){col=i;} }
  var vals=function(){ return Array.prototype.map.call(t.tBodies[0].rows,function(r){
    var c=r.cells[col]; var v=c.getAttribute('data-v'); return parseFloat(v===null?c.textContent:v);}); };
  var sorted=function(a,dir){ for(var i=1;i<a.length;i++){ if(dir*(a[i]-a[i-1])<0){return false;} } return true; };
  ths[col].click(); var up=vals(); ths[col].click(); var down=vals();
  document.title = (col>=0 && up.length===6 && sorted(up,1) && sorted(down,-1) && up[0]!==up[5]) ? 'SORT-OK' : 'SORT-BAD ' + up.join(' ');
})();
</script>"#;
    let page = format!(
        "{}{}",
        &html[..start],
        &html[end..].replace("</body>", &format!("{probe}</body>"))
    );
    let path = dir.join("sort.html");
    std::fs::write(&path, page).unwrap();
    let p = open(&url(&path));
    assert!(
        p.dom.contains("<title>SORT-OK</title>"),
        "{}",
        &p.dom[..p.dom.len().min(400)]
    );
    assert!(p.console.is_empty(), "console: {:#?}", p.console);
}
